//! Normalisation throughput: positions per second through `normalize_bytes` for arrays of
//! 1,000 positions in the compact form (the typed fast path), as `LOCATION_RAW_UPDATE` events
//! (the general path), and in the compact form with one number out of range (one element
//! rejected, the rest read one by one).
//! Run with `cargo bench -p zonecast-ingest`.
#![allow(clippy::unwrap_used)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Value, json};

const BATCH: usize = 1000;

fn mac(i: usize) -> String {
    format!("00:AA:BB:{:02X}:{:02X}:{:02X}", (i >> 16) & 0xff, (i >> 8) & 0xff, i & 0xff)
}

fn compact(i: usize) -> Value {
    let x = i as f64 * 0.37;
    json!({"MAC": mac(i), "Position": [x, 1000.0 - x, 1.5], "Timestamp": "2026-11-21T10:00:00.250Z"})
}

fn event(i: usize) -> Value {
    let x = i as f64 * 0.37;
    json!({"Category": "LOCATION", "Type": "LOCATION_RAW_UPDATE", "Timestamp": "2026-11-21T10:00:00.250Z",
        "Source": {"MAC": mac(i), "GatewayURI": "gw1"},
        "Content": {"Position": [x, 1000.0 - x, 1.5], "Velocity": [0.5, 0, 0], "Sequence": i}})
}

fn normalisation(c: &mut Criterion) {
    let now = chrono::Utc::now();
    let compact_body = serde_json::to_vec(&(0..BATCH).map(compact).collect::<Vec<_>>()).unwrap();
    let events_body = serde_json::to_vec(&(0..BATCH).map(event).collect::<Vec<_>>()).unwrap();
    let mut spoiled = (0..BATCH).map(compact).collect::<Vec<_>>();
    spoiled[BATCH / 2]["Position"][1] = json!("OUT");
    let spoiled_body = serde_json::to_string(&spoiled).unwrap().replace("\"OUT\"", "1e400").into_bytes();

    let mut group = c.benchmark_group("normalize_bytes");
    group.throughput(Throughput::Elements(BATCH as u64)).measurement_time(Duration::from_secs(5));
    for (name, body) in
        [("compact", &compact_body), ("events", &events_body), ("compact_one_out_of_range", &spoiled_body)]
    {
        group.bench_function(name, |b| b.iter(|| black_box(zonecast_ingest::normalize_bytes(black_box(body), now))));
    }
    group.finish();
}

criterion_group!(benches, normalisation);
criterion_main!(benches);
