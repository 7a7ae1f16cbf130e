//! The demo site (`zonecast --demo`, `ZONECAST_DEMO=true`): a simulated warehouse, so that a
//! fresh all-in-one shows something moving at once. It has 36 zones of every shape (docks and
//! staging lanes as squares, pick aisles as cuboids, chargers as spheres, robot cells as
//! cylinders, packing, office and quality cage as polygon prisms, crossings as circles, a rising
//! conveyor as an oblique cuboid), AlertLevels from 0 to 9, an inactive mezzanine and a locked
//! fire exit. 290 people walk their rounds (pickers through the aisles, runners between the
//! docks and the aisles, packers, technicians past the robot cells) and a forklift drives the
//! cross aisle and the walkways with a safety circle, a mobile zone, around it. Every device
//! reports one position a second through the position input that `POST /v3/positions` uses.
//!
//! The zones are created through the API's own zone writes, validated as a client's would be.
//! Each has a fixed ZoneID (`64656D6F-0000-4000-8000-0000000000NN`), and only those not in the
//! store are created: a restart with the demo on the same data keeps the zones as they were
//! left, changes included, and creates again only the ones deleted. The devices are named in
//! the device registry after their job ("Picker 12", "Forklift") the same way: only those with
//! no record get one, so a name changed there is kept.

mod site;
mod walk;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::time::MissedTickBehavior;
use uuid::Uuid;
use zonecast_api::{Context, zone_writes};
use zonecast_ingest::Publisher;
use zonecast_model::{Device, Mac};
use zonecast_runtime::ratelog::RateLimited;
use zonecast_runtime::{Running, Shutdown, StartError};
use zonecast_store::DeviceQuery;

pub use site::{FORKLIFT, zone_id};
use walk::Walker;

/// The devices cleared for the robot cells and the quality cage: the forklift and every
/// technician but a trainee.
fn cleared() -> Vec<String> {
    let mut cleared = walk::cleared_technicians();
    cleared.push(FORKLIFT.to_owned());
    cleared
}

/// Positions go out in this many slices a second, each with every fourth device: each device
/// reports once a second, and the input gets a steady flow rather than one burst.
const SLICES: usize = 4;

fn demo_error(e: impl std::fmt::Display) -> StartError {
    StartError::new("demo", e)
}

/// Creates the demo's zones that are not in the store yet (by ZoneID), locking the fire exit
/// when it is created; answers how many were created.
pub async fn create_zones(context: &Context) -> Result<usize, StartError> {
    let present: HashSet<Uuid> = context.store.list_zones().await.map_err(demo_error)?.iter().map(|z| z.id).collect();
    let missing: Vec<site::DemoZone> =
        site::zones(&cleared()).into_iter().filter(|z| !present.contains(&z.id)).collect();
    if missing.is_empty() {
        return Ok(0);
    }
    let locked: Vec<Uuid> = missing.iter().filter(|z| z.locked).map(|z| z.id).collect();
    let created = zone_writes::create(context, missing.into_iter().map(|z| (z.id, z.body)).collect())
        .await
        .map_err(demo_error)?
        .len();
    for id in locked {
        zone_writes::set_locked(context, id, true).await.map_err(demo_error)?;
    }
    Ok(created)
}

/// Names the demo's devices that have no record in the device registry yet; answers how many
/// were named.
pub async fn name_devices(context: &Context) -> Result<usize, StartError> {
    let query = DeviceQuery { limit: usize::MAX, ..DeviceQuery::default() };
    let named: HashSet<Mac> =
        context.store.list_devices(&query).await.map_err(demo_error)?.into_iter().map(|d| d.mac).collect();
    let mut missing = Vec::new();
    for walker in walk::walkers() {
        let mac: Mac = walker.mac.parse().map_err(demo_error)?;
        if !named.contains(&mac) {
            missing.push(Device {
                mac,
                name: walker.name,
                group: Some(walker.group.to_owned()),
                kind: Some(walker.kind.to_owned()),
                properties: serde_json::Map::new(),
                offline_seconds: None,
            });
        }
    }
    if !missing.is_empty() {
        context.store.put_devices(&missing).await.map_err(demo_error)?;
    }
    Ok(missing.len())
}

/// Starts moving the demo's devices through `publisher` until `shutdown`.
pub fn start(publisher: Publisher, shutdown: Shutdown) -> Running {
    let walkers = walk::walkers();
    tracing::info!(devices = walkers.len(), "demo site: devices moving, one position a second each");
    Running::new(tokio::spawn(simulate(publisher, walkers, shutdown)))
}

/// Sends a slice of the devices' positions every `1 / SLICES` seconds. While the pipeline is
/// behind, a slice waits in the input as an HTTP request does (`ZONECAST_INGEST_HOLD_MS`) and
/// is dropped if it is refused; slices due meanwhile are skipped: the next one has newer
/// positions anyway.
async fn simulate(publisher: Publisher, walkers: Vec<Walker>, shutdown: Shutdown) {
    let started = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_secs(1) / SLICES as u32);
    tick.set_missed_tick_behavior(MissedTickBehavior::Skip);
    let mut log = RateLimited::new(Duration::from_secs(10));
    for slice in (0..SLICES).cycle() {
        tokio::select! {
            biased;
            () = shutdown.cancelled() => break,
            _ = tick.tick() => {}
        }
        let payload = slice_payload(&walkers, slice, started.elapsed().as_secs_f64());
        let refused = match publisher.accept(&payload, "demo").await {
            Ok(outcome) if outcome.rejected.is_empty() => continue,
            Ok(outcome) => format!("{} positions rejected", outcome.rejected.len()),
            Err(e) => e.to_string(),
        };
        if let Some(held_back) = log.allow() {
            tracing::warn!(reason = %refused, held_back, "demo site: positions not taken");
        }
    }
    tracing::info!("demo site stopped");
}

/// The positions of every `SLICES`th device from `slice`, `seconds` into the demo, as the
/// compact array `POST /v3/positions` takes.
fn slice_payload(walkers: &[Walker], slice: usize, seconds: f64) -> Vec<u8> {
    let positions: Vec<Value> = walkers
        .iter()
        .skip(slice)
        .step_by(SLICES)
        .map(|w| json!({"MAC": w.mac, "Position": w.position(seconds)}))
        .collect();
    // A Value of strings and finite numbers always serialises.
    serde_json::to_vec(&positions).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn every_demo_zone_passes_the_apis_validation() {
        let zones = site::zones(&cleared());
        assert_eq!(zones.len(), 36);
        let limits = zonecast_model::Limits::default();
        for zone in &zones {
            let input = zonecast_model::ZoneInput::parse(&zone.body, &limits).unwrap();
            input.create(zone.id).unwrap_or_else(|e| panic!("{}: {e}", zone.body["Name"]));
        }
        let kinds: HashSet<&str> = zones.iter().map(|z| z.body["GeometryType"].as_str().unwrap()).collect();
        assert_eq!(kinds.len(), 6, "{kinds:?}");
        assert_eq!(zones.iter().filter(|z| z.body["Active"] == json!(false)).count(), 1);
        assert_eq!(zones.iter().filter(|z| z.locked).count(), 1);
        assert_eq!(zones.iter().filter(|z| z.body["MobileOriginSource"] == json!(FORKLIFT)).count(), 1);
        let ids: HashSet<Uuid> = zones.iter().map(|z| z.id).collect();
        assert_eq!(ids.len(), zones.len());
        assert_eq!(zonecast_model::format_id(&zone_id(1)), "64656D6F-0000-4000-8000-000000000001");
    }

    #[test]
    fn each_slice_carries_every_fourth_device_and_all_slices_carry_each_once() {
        let walkers = walk::walkers();
        let mut seen = HashSet::new();
        for slice in 0..SLICES {
            let positions: Vec<Value> = serde_json::from_slice(&slice_payload(&walkers, slice, 1.0)).unwrap();
            for p in positions {
                assert!(seen.insert(p["MAC"].as_str().unwrap().to_owned()), "{p}");
                assert_eq!(p["Position"].as_array().unwrap().len(), 3);
            }
        }
        assert_eq!(seen.len(), walkers.len());
    }
}
