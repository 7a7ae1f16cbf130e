//! The evaluator's memory budget: the heap it holds per zone and per device, counted by this
//! test binary's allocator at 100,000 zones and at 100,000 devices. A site can be sized from
//! these figures (docs/benchmarks.md, "Memory budget"); a change that makes a zone or a device
//! cost more than its budget fails here.
//!
//! Heap bytes, not resident memory: the allocator's own overhead and freed memory it keeps are
//! not counted (the engine benchmark reports resident growth).

use std::alloc::System;
use std::sync::Mutex;

use chrono::Utc;
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};
use zonecast_evaluator::catalog::Catalog;
use zonecast_model::ZoneInput;

#[path = "support/site.rs"]
mod site;

/// Heap per zone of a mixed catalog (specs, prepared regions, scene index), in bytes.
const ZONE_BUDGET: usize = 1_800;
/// Heap per device (state, last position, grid cell, map entries), in bytes.
const DEVICE_BUDGET: usize = 320;

const ZONES: usize = 100_000;
const DEVICES: usize = 100_000;

/// The system allocator, counting what is allocated and freed.
#[global_allocator]
static ALLOCATOR: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// The counter is process-wide: the two measurements run one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Heap bytes `build` leaves allocated in what it returns, per `count`.
fn held_per<T>(count: usize, build: impl FnOnce() -> T) -> (T, usize) {
    let region = Region::new(ALLOCATOR);
    let built = build();
    let change = region.change();
    let held = change.bytes_allocated as isize - change.bytes_deallocated as isize + change.bytes_reallocated;
    (built, usize::try_from(held).expect("the structure holds memory") / count)
}

#[test]
fn a_zone_costs_at_most_its_budget_at_100_000_zones() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut r = site::Rng(0x9E37_79B9_7F4A_7C15);
    let (catalog, per_zone) = held_per(ZONES, || {
        let specs = (0..ZONES)
            .map(|i| {
                ZoneInput::parse(&site::zone_json(&mut r, i, None), &zonecast_model::Limits::DEFAULT)
                    .and_then(|z| z.create(uuid::Uuid::new_v4()))
                    .expect("valid zone")
            })
            .collect();
        Catalog::build(specs, &[], Vec::new())
    });
    assert_eq!(catalog.zones.len(), ZONES);
    println!("heap per zone at {ZONES} zones: {per_zone} B (budget {ZONE_BUDGET} B)");
    assert!(per_zone <= ZONE_BUDGET, "a zone holds {per_zone} B of heap, over its budget of {ZONE_BUDGET} B");
}

#[test]
fn a_device_costs_at_most_its_budget_at_100_000_devices() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut engine = site::engine(1_000, 0);
    let mut r = site::Rng(99);
    let positions: Vec<_> = (0..DEVICES)
        .map(|i| (site::mac(i), [r.range(0.0, 1000.0), r.range(0.0, 1000.0), r.range(0.0, 20.0)]))
        .collect();
    // Events are the caller's: one buffer, big enough from the start, outside the count.
    let mut out = Vec::with_capacity(64);
    let now = Utc::now();
    let ((), per_device) = held_per(DEVICES, || {
        for (mac, position) in &positions {
            out.clear();
            engine.on_position(mac, *position, now, None, now, &mut out);
            out.clear();
        }
    });
    assert_eq!(engine.device_count(), DEVICES);
    println!("heap per device at {DEVICES} devices: {per_device} B (budget {DEVICE_BUDGET} B)");
    assert!(per_device <= DEVICE_BUDGET, "a device holds {per_device} B of heap, over its budget of {DEVICE_BUDGET} B");
}
