//! Properties of the collision engine over random sequences of positions, zone changes
//! (create, move, delete, activate, deactivate, DeviceList, reset), settings, device radii and
//! clock ticks:
//! every exit follows exactly one enter with the same CollisionID; no device is inside a zone
//! the rules keep it out of; the recorded collisions (what `CollidingDevices` is read from)
//! are always those the events imply.
#![allow(clippy::unwrap_used)] // a panic is how a test reports failure

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::{DateTime, Duration, Utc};
use proptest::prelude::*;
use serde_json::json;
use uuid::Uuid;
use zonecast_evaluator::catalog::Catalog;
use zonecast_evaluator::{Engine, Output, Ownership};
use zonecast_model::{
    Collision, ConfigChanged, ConfigKind, ConfigOperation, Content, IdSource, Mac, Setting, SettingName, Settings,
    ZoneInput, ZoneSpec, format_id,
};

const DEVICES: usize = 4;
const SLOTS: usize = 3;
/// Slack for floating-point distances at the boundary.
const EPS: f64 = 1e-9;

/// One input to the engine.
#[derive(Debug, Clone)]
enum Op {
    /// A position of `device`, `dt` ms after the last input.
    Move { device: usize, at: [f64; 2], dt: i64 },
    /// The clock, `dt` ms on.
    Tick { dt: i64 },
    /// Zone `slot` created, or moved and resized.
    Put { slot: usize, centre: [f64; 2], radius: f64, alert_level: u64, info: bool },
    /// Zone `slot` deleted.
    Delete { slot: usize },
    /// Zone `slot` activated or deactivated.
    Active { slot: usize, active: bool },
    /// Zone `slot`'s DeviceList (under InclusionPolicy `all`): the device it excludes, if any.
    Exclude { slot: usize, device: Option<usize> },
    /// Zone `slot`'s collisions reset.
    Reset { slot: usize },
    /// A setting written.
    Setting { name: SettingName, value: f64 },
    /// `device`'s own radius set, or removed.
    Radius { device: usize, radius: Option<f64> },
}

fn op() -> impl Strategy<Value = Op> {
    let slot = 0..SLOTS;
    let coordinate = -4.0f64..4.0;
    prop_oneof![
        8 => (0..DEVICES, [coordinate.clone(), coordinate.clone()], 0i64..400)
            .prop_map(|(device, at, dt)| Op::Move { device, at, dt }),
        3 => (0i64..1500).prop_map(|dt| Op::Tick { dt }),
        2 => (slot.clone(), [-3.0f64..3.0, -3.0f64..3.0], 0.3f64..2.5, 0u64..10, any::<bool>())
            .prop_map(|(slot, centre, radius, alert_level, info)| Op::Put { slot, centre, radius, alert_level, info }),
        1 => slot.clone().prop_map(|slot| Op::Delete { slot }),
        1 => (slot.clone(), any::<bool>()).prop_map(|(slot, active)| Op::Active { slot, active }),
        1 => (slot.clone(), prop::option::of(0..DEVICES)).prop_map(|(slot, device)| Op::Exclude { slot, device }),
        1 => slot.prop_map(|slot| Op::Reset { slot }),
        1 => prop_oneof![
            prop::sample::select(vec![0.0, 0.5]).prop_map(|v| (SettingName::ExitToleranceMeters, v)),
            prop::sample::select(vec![0.0, 300.0]).prop_map(|v| (SettingName::ExitDelayMs, v)),
            prop::sample::select(vec![0.0, 300.0]).prop_map(|v| (SettingName::EntryDelayMs, v)),
            prop::sample::select(vec![0.0, 1.0]).prop_map(|v| (SettingName::DeviceTimeoutSeconds, v)),
            prop::sample::select(vec![0.0, 1.0]).prop_map(|v| (SettingName::DeviceOfflineSeconds, v)),
            prop::sample::select(vec![0.0, 0.3]).prop_map(|v| (SettingName::DefaultDeviceRadiusMeters, v)),
        ]
        .prop_map(|(name, value)| Op::Setting { name, value }),
        1 => (0..DEVICES, prop::option::of(prop::sample::select(vec![0.0, 0.4, 1.2])))
            .prop_map(|(device, radius)| Op::Radius { device, radius }),
    ]
}

fn mac(device: usize) -> Mac {
    format!("00:00:00:00:00:{device:02X}").parse().unwrap()
}

fn zone_id(slot: usize) -> Uuid {
    Uuid::from_u128(slot as u128 + 1)
}

/// The world as the store holds it, the engine under test, and what its outputs imply.
struct World {
    engine: Engine,
    now: DateTime<Utc>,
    zones: BTreeMap<usize, ZoneSpec>,
    written: Vec<Setting>,
    /// Devices' own radii.
    radii: BTreeMap<Mac, f64>,
    /// How radius writes are applied whatever the input says: incrementally (`true`) or by
    /// reading every setting and radius again (`false`).
    radii_patched: Option<bool>,
    /// Last position and its time, per device.
    positions: HashMap<Mac, ([f64; 3], DateTime<Utc>)>,
    /// Stays opened by a `ZONE_ENTER` and not closed by a `ZONE_EXIT`: (zone, device) → CollisionID.
    stays: HashMap<(Uuid, Mac), Uuid>,
    /// Every CollisionID an enter has used.
    used: HashSet<Uuid>,
    /// Every stay (CollisionID) a `ZONE_DWELL_EXCEEDED` was raised for.
    dwelt: HashSet<Uuid>,
    /// Devices reported offline and not online since.
    offline: HashSet<Mac>,
    /// The collision rows, as the shell's writer keeps them from `Entered` / `Exited`.
    recorded: HashMap<(Uuid, Mac), Collision>,
    /// Since when a device inside a zone has been farther out than the exit margin, as of its
    /// positions.
    out_since: HashMap<(Uuid, Mac), DateTime<Utc>>,
}

impl World {
    fn new() -> Self {
        let now: DateTime<Utc> = "2026-11-21T10:00:00Z".parse().unwrap();
        let engine =
            Engine::new(Catalog::build(Vec::new(), &[], Vec::new()), 1, Ownership::range(1, 0, 0), IdSource::seeded(9));
        Self {
            engine,
            now,
            zones: BTreeMap::new(),
            written: Vec::new(),
            radii: BTreeMap::new(),
            radii_patched: None,
            positions: HashMap::new(),
            stays: HashMap::new(),
            used: HashSet::new(),
            dwelt: HashSet::new(),
            offline: HashSet::new(),
            recorded: HashMap::new(),
            out_since: HashMap::new(),
        }
    }

    fn settings(&self) -> Settings {
        Settings::from_written(&self.written)
    }

    fn radius_list(&self) -> Vec<(Mac, f64)> {
        self.radii.iter().map(|(m, r)| (m.clone(), *r)).collect()
    }

    /// The distance of `device` from zone `spec` (a sphere), and the device's radius.
    fn distance(&self, spec: &ZoneSpec, p: [f64; 3]) -> f64 {
        let (c, r) = (spec.geometry_data[0], spec.geometry_data[1][0]);
        let d = ((p[0] - c[0]).powi(2) + (p[1] - c[1]).powi(2) + (p[2] - c[2]).powi(2)).sqrt();
        (d - r).max(0.0)
    }

    /// Applies a zone change: through a patch of the touched zone or a whole reload.
    fn zones_changed(&mut self, slot: usize, operation: Option<ConfigOperation>, patch: bool, out: &mut Vec<Output>) {
        let id = zone_id(slot);
        let changes = [ConfigChanged { kind: ConfigKind::Zones, ids: vec![format_id(&id)], operation, revision: 0 }];
        if patch {
            let changed: Vec<ZoneSpec> = self.zones.get(&slot).cloned().into_iter().collect();
            let touched: foldhash::HashSet<Uuid> = [id].into_iter().collect();
            self.engine.apply_zones(changed, &touched, &changes, self.now, out);
        } else {
            let catalog = Catalog::build(self.zones.values().cloned().collect(), &self.written, self.radius_list());
            self.engine.reload(catalog, &changes, self.now, out);
        }
    }

    fn apply(&mut self, op: &Op, patch: bool) -> Vec<Output> {
        let mut out = Vec::new();
        match op {
            Op::Move { device, at, dt } => {
                self.now += Duration::milliseconds(*dt);
                let (m, p) = (mac(*device), [at[0], at[1], 0.0]);
                assert!(self.engine.on_position(&m, p, self.now, None, self.now, &mut out), "positions come in order");
                self.positions.insert(m, (p, self.now));
            }
            Op::Tick { dt } => {
                self.now += Duration::milliseconds(*dt);
                self.engine.on_tick(self.now, &mut out);
            }
            Op::Put { slot, centre, radius, alert_level, info } => {
                let actions = if *info { json!([{"type": "info-event", "on": "both"}]) } else { json!([]) };
                // Odd alert levels give the zone a dwell limit the ticks pass.
                let dwell = if alert_level % 2 == 1 { json!(1.0) } else { json!(null) };
                let input = json!({"Name": format!("z{slot}"), "GeometryType": "sphere",
                    "GeometryData": [[centre[0], centre[1], 0.0], [radius, 0, 0]],
                    "AlertLevel": alert_level, "ZoneActions": actions, "MaxDwellSeconds": dwell});
                let mut spec =
                    ZoneInput::parse(&input, &zonecast_model::Limits::DEFAULT).unwrap().create(zone_id(*slot)).unwrap();
                if let Some(old) = self.zones.get(slot) {
                    (spec.active, spec.device_list) = (old.active, old.device_list.clone());
                }
                self.zones.insert(*slot, spec);
                self.zones_changed(*slot, None, patch, &mut out);
            }
            Op::Delete { slot } => {
                self.zones.remove(slot);
                self.zones_changed(*slot, None, patch, &mut out);
            }
            Op::Active { slot, active } => {
                if let Some(z) = self.zones.get_mut(slot) {
                    z.active = *active;
                }
                self.zones_changed(*slot, None, patch, &mut out);
            }
            Op::Exclude { slot, device } => {
                if let Some(z) = self.zones.get_mut(slot) {
                    z.device_list = device.map(mac).into_iter().collect();
                }
                self.zones_changed(*slot, None, patch, &mut out);
            }
            Op::Reset { slot } => self.zones_changed(*slot, Some(ConfigOperation::Reset), patch, &mut out),
            Op::Setting { name, value } => {
                self.written.retain(|s| s.name != *name);
                self.written.push(Setting { name: *name, value: *value, active: true });
                self.engine.reparameterise(self.settings(), self.radius_list(), self.now, &mut out);
                if *name == SettingName::DeviceOfflineSeconds && *value == 0.0 {
                    // Turned off, who is offline is forgotten.
                    self.offline.clear();
                }
            }
            Op::Radius { device, radius } => {
                let m = mac(*device);
                match radius {
                    Some(r) => self.radii.insert(m.clone(), *r),
                    None => self.radii.remove(&m),
                };
                if self.radii_patched.unwrap_or(patch) {
                    self.engine.apply_radii(vec![(m, *radius)], self.now, &mut out);
                } else {
                    self.engine.reparameterise(self.settings(), self.radius_list(), self.now, &mut out);
                }
            }
        }
        out
    }

    /// Reads the outputs of one input: the event rules (enter opens, exit closes the same
    /// stay) and the recorded collisions.
    fn absorb(&mut self, out: &[Output]) -> Result<(), TestCaseError> {
        for o in out {
            match o {
                Output::Publish(event) => {
                    let mac = event.source.mac.clone().unwrap();
                    match &event.content {
                        Content::ZoneEnter(c) => {
                            prop_assert!(self.used.insert(c.collision_id), "a CollisionID is used once");
                            let previous = self.stays.insert((c.zone_id, mac.clone()), c.collision_id);
                            prop_assert!(previous.is_none(), "enter while inside: {} {}", c.zone_id, mac);
                            self.out_since.remove(&(c.zone_id, mac));
                        }
                        Content::ZoneExit(c) => {
                            let c = &c.enter;
                            let open = self.stays.remove(&(c.zone_id, mac.clone()));
                            prop_assert_eq!(open, Some(c.collision_id), "exit without its enter");
                            self.out_since.remove(&(c.zone_id, mac));
                        }
                        Content::ZoneInfo(c) => {
                            prop_assert!(self.used.contains(&c.collision_id), "an info event belongs to a stay");
                        }
                        Content::ZoneDwellExceeded(c) => {
                            let c = &c.enter;
                            prop_assert_eq!(self.stays.get(&(c.zone_id, mac)), Some(&c.collision_id));
                            prop_assert!(self.dwelt.insert(c.collision_id), "one dwell event per stay");
                        }
                        Content::SiteAlarm(a) | Content::DeviceAlarm(a) | Content::DeviceAlarmCommand(a) => {
                            prop_assert_eq!(self.stays.get(&(a.zone_id, mac)), Some(&a.collision_id));
                        }
                        Content::DeviceOffline(_) => {
                            prop_assert!(self.offline.insert(mac), "offline twice without coming back")
                        }
                        Content::DeviceOnline(_) => {
                            prop_assert!(self.offline.remove(&mac), "online without going offline")
                        }
                        Content::LocationRawUpdate(_)
                        | Content::ZoneOccupancyExceeded(_)
                        | Content::ZoneOccupancyBelow(_)
                        | Content::ZoneOccupancyRestored(_) => {
                            prop_assert!(false, "the engine publishes no positions and no occupancy events")
                        }
                        Content::AlarmCleared(c) => match c.zone_id {
                            Some(zone) => {
                                let stay = c.collision_id.unwrap();
                                prop_assert!(self.used.contains(&stay), "a cleared stay was entered");
                                prop_assert!(
                                    self.stays.get(&(zone, mac.clone())) != Some(&stay),
                                    "cleared while inside"
                                );
                            }
                            None => prop_assert!(!self.offline.contains(&mac), "cleared while offline"),
                        },
                        Content::AlarmAcknowledged(_) | Content::AlarmResolved(_) => {
                            prop_assert!(false, "only people change alarms")
                        }
                    }
                }
                Output::Entered(c) => {
                    self.recorded.insert((c.zone_id, c.mac.clone()), c.clone());
                }
                Output::Exited { zone, mac } => {
                    self.recorded.remove(&(*zone, mac.clone()));
                }
                Output::Http { .. } | Output::Source(_) | Output::Presence(_) | Output::Recount(_) => {}
            }
        }
        let recorded: HashMap<(Uuid, Mac), Uuid> =
            self.recorded.iter().map(|(k, c)| (k.clone(), c.collision_id)).collect();
        prop_assert_eq!(&recorded, &self.stays, "the recorded collisions are the open stays");
        Ok(())
    }
}

impl World {
    /// The rules, as of the input just applied: a device is inside only zones that exist, are
    /// active and admit it; a device that moved is inside a zone only within the exit margin
    /// or while its exit delay runs, and inside every zone it stands in (without an entry
    /// delay); after the clock, no exit delay or device timeout is overdue; after a reset the
    /// zone holds nobody.
    fn check(&mut self, op: &Op) -> Result<(), TestCaseError> {
        let settings = self.settings();
        let default_radius = settings.get(SettingName::DefaultDeviceRadiusMeters);
        let tolerance = settings.get(SettingName::ExitToleranceMeters);
        let exit_delay = Duration::milliseconds(settings.get(SettingName::ExitDelayMs) as i64);
        let entry_delay = settings.get(SettingName::EntryDelayMs);
        let timeout = settings.get(SettingName::DeviceTimeoutSeconds);
        let by_id: HashMap<Uuid, &ZoneSpec> = self.zones.values().map(|z| (z.id, z)).collect();
        for (zone, mac) in self.stays.keys() {
            let spec = by_id.get(zone).copied();
            prop_assert!(spec.is_some(), "{} inside deleted zone {}", mac, zone);
            let spec = spec.unwrap();
            prop_assert!(spec.active, "{} inside inactive zone {}", mac, zone);
            prop_assert!(
                spec.inclusion_policy.admits(&spec.device_list, mac),
                "{} inside {} that excludes it",
                mac,
                zone
            );
            prop_assert!(self.positions.contains_key(mac));
        }
        match op {
            Op::Move { device, .. } => {
                let m = mac(*device);
                let (p, t) = self.positions[&m];
                let radius = self.radii.get(&m).copied().unwrap_or(default_radius);
                let margin = radius + tolerance;
                for spec in self.zones.values() {
                    let d = self.distance(spec, p);
                    let key = (spec.id, m.clone());
                    if self.stays.contains_key(&key) {
                        if d > margin + EPS {
                            let since = *self.out_since.entry(key).or_insert(t);
                            prop_assert!(
                                t - since < exit_delay,
                                "{} stays in {} {} m out past the exit delay",
                                m,
                                spec.id,
                                d
                            );
                        } else {
                            self.out_since.remove(&key);
                        }
                    } else if spec.active
                        && spec.inclusion_policy.admits(&spec.device_list, &m)
                        && entry_delay == 0.0
                        && d < radius - EPS
                    {
                        prop_assert!(false, "{} stands {} m into {} and is not inside", m, d, spec.id);
                    }
                }
            }
            Op::Tick { .. } => {
                for ((zone, m), since) in &self.out_since {
                    if self.stays.contains_key(&(*zone, m.clone())) {
                        prop_assert!(self.now - *since < exit_delay, "{} still in {} after its exit delay", m, zone);
                    }
                }
                if timeout > 0.0 {
                    for (_, m) in self.stays.keys() {
                        let silent = self.now - self.positions[m].1;
                        prop_assert!(silent < Duration::milliseconds((timeout * 1000.0) as i64), "{} timed out", m);
                    }
                }
            }
            Op::Reset { slot } => {
                prop_assert!(self.stays.keys().all(|(zone, _)| *zone != zone_id(*slot)), "a reset zone holds nobody");
            }
            _ => {}
        }
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Enter and exit pair up by CollisionID, the rules hold after every input, and the
    /// recorded collisions are the open stays, whichever way zone changes are applied.
    #[test]
    fn the_engine_keeps_its_invariants_over_any_sequence_of_inputs(
        ops in prop::collection::vec((op(), any::<bool>()), 1..120),
    ) {
        let mut world = World::new();
        for (op, patch) in &ops {
            let out = world.apply(op, *patch);
            world.absorb(&out)?;
            world.check(op)?;
        }
    }

    /// The same inputs give the same outputs: the engine draws its IDs from the source it is
    /// given and reads no clock of its own.
    #[test]
    fn the_engine_is_deterministic(ops in prop::collection::vec((op(), any::<bool>()), 1..60)) {
        let run = || {
            let mut world = World::new();
            ops.iter().flat_map(|(op, patch)| world.apply(op, *patch)).collect::<Vec<Output>>()
        };
        prop_assert_eq!(run(), run());
    }

    /// Radius writes applied to the devices they name alone give the same outputs as reading
    /// every setting and radius again, whatever came before and after.
    #[test]
    fn radius_writes_applied_incrementally_give_what_a_full_reparameterise_gives(
        ops in prop::collection::vec((op(), any::<bool>()), 1..80),
    ) {
        let run = |patched| {
            let mut world = World::new();
            world.radii_patched = Some(patched);
            ops.iter().flat_map(|(op, patch)| world.apply(op, *patch)).collect::<Vec<Output>>()
        };
        prop_assert_eq!(run(true), run(false));
    }
}
