//! Latency recording: the time from a position's measurement (`Timestamp`) to the moment an
//! event or MQTT message carrying it is seen here.

use std::sync::Mutex;
use std::time::Duration;

use rumqttc::{AsyncClient, Event, MqttOptions, Packet, QoS};
use serde_json::Value;

/// Latencies in microseconds, each with when its position was measured.
#[derive(Default)]
pub struct Recorder {
    /// (measured, microseconds since the Unix epoch; latency, microseconds), in arrival order.
    samples: Mutex<Vec<(i64, u64)>>,
    /// When the last message was recorded.
    last: Mutex<Option<std::time::Instant>>,
}

impl Recorder {
    /// Records `payload` as seen `at`.
    fn record(&self, payload: &[u8], only_position_events: bool, at: chrono::DateTime<chrono::Utc>) {
        let Ok(v) = serde_json::from_slice::<Value>(payload) else { return };
        if only_position_events {
            let kind = v["Type"].as_str().unwrap_or_default();
            let from_position = kind == "ZONE_ENTER" || (kind == "ZONE_EXIT" && v["Content"]["Reason"] == "position");
            if !from_position {
                return;
            }
        }
        let Some(ts) = v["Timestamp"].as_str().and_then(|t| t.parse::<chrono::DateTime<chrono::Utc>>().ok()) else {
            return;
        };
        let micros = (at - ts).num_microseconds().unwrap_or(0).max(0) as u64;
        if let Ok(mut s) = self.samples.lock() {
            s.push((ts.timestamp_micros(), micros));
        }
        if let Ok(mut last) = self.last.lock() {
            *last = Some(std::time::Instant::now());
        }
    }

    /// When the last message was recorded, if any was.
    pub fn last_seen(&self) -> Option<std::time::Instant> {
        self.last.lock().ok().and_then(|last| *last)
    }

    /// An event from the bus: only enters and position exits count (clock-driven exits carry
    /// computed times).
    pub fn observe_event(&self, payload: &[u8]) {
        self.record(payload, true, chrono::Utc::now());
    }

    /// A position in a partition's batch, as ingest published it, the batch seen `at`: every
    /// line of a batch arrived with it, however long reading the lines before it takes here.
    pub fn observe_position(&self, payload: &[u8], at: chrono::DateTime<chrono::Utc>) {
        self.record(payload, false, at);
    }

    /// `count, p50, p90, p99, max` in milliseconds.
    pub fn summary(&self) -> String {
        let mut s: Vec<u64> =
            self.samples.lock().map(|s| s.iter().map(|&(_, latency)| latency).collect()).unwrap_or_default();
        if s.is_empty() {
            return "0 messages".into();
        }
        s.sort_unstable();
        let p = |q: f64| percentile(&s, q).unwrap_or_default() as f64 / 1000.0;
        format!(
            "{} messages; latency ms p50 {:.2} p90 {:.2} p99 {:.2} max {:.2}",
            s.len(),
            p(0.5),
            p(0.9),
            p(0.99),
            p(1.0)
        )
    }

    /// Writes every sample to `path`, one line each in arrival order: the position's
    /// measurement time and its latency, both in microseconds; to see when the tail happened.
    pub fn write_samples(&self, path: &std::path::Path) -> std::io::Result<()> {
        use std::io::Write;
        let samples = self.samples.lock().map(|s| s.clone()).unwrap_or_default();
        let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
        writeln!(out, "measured_us\tlatency_us")?;
        for (measured, latency) in samples {
            writeln!(out, "{measured}\t{latency}")?;
        }
        out.flush()
    }
}

/// The value at quantile `q` (0 to 1) of `sorted`, nearest rank; none when it is empty.
pub fn percentile<T: Copy>(sorted: &[T], q: f64) -> Option<T> {
    let last = sorted.len().checked_sub(1)?;
    sorted.get((last as f64 * q).round() as usize).copied()
}

/// Subscribes to `topic` on `broker` (`host:port`) and records every message's latency.
pub async fn subscribe_mqtt(broker: &str, topic: &str, rec: std::sync::Arc<Recorder>) -> anyhow::Result<()> {
    let (host, port) = broker.rsplit_once(':').ok_or_else(|| anyhow::anyhow!("--mqtt takes host:port"))?;
    let mut options =
        MqttOptions::new(format!("zonecast-loadgen-{}", uuid::Uuid::new_v4().simple()), host, port.parse()?);
    options.set_keep_alive(Duration::from_secs(30)).set_max_packet_size(8 << 20, 8 << 20);
    let (client, mut events) = AsyncClient::new(options, 10_000);
    let mut network = events.network_options();
    network.set_tcp_nodelay(true);
    events.set_network_options(network);
    client.subscribe(topic, QoS::AtMostOnce).await?;
    let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
    let mut ready = Some(ready_tx);
    tokio::spawn(async move {
        let _client = client;
        loop {
            match events.poll().await {
                Ok(Event::Incoming(Packet::SubAck(_))) => {
                    if let Some(tx) = ready.take() {
                        let _ = tx.send(());
                    }
                }
                Ok(Event::Incoming(Packet::Publish(p))) => rec.record(&p.payload, false, chrono::Utc::now()),
                Ok(_) => {}
                Err(e) => {
                    eprintln!("loadgen: MQTT subscriber: {e}");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        }
    });
    tokio::time::timeout(Duration::from_secs(10), ready_rx).await??;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::percentile;

    #[test]
    fn percentiles_are_the_nearest_rank_and_none_of_nothing() {
        let sorted: Vec<u64> = (1..=101).collect();
        assert_eq!([0.0, 0.5, 0.9, 0.99, 1.0].map(|q| percentile(&sorted, q)), [1, 51, 91, 100, 101].map(Some));
        assert_eq!(percentile::<u64>(&[], 0.5), None);
    }
}
