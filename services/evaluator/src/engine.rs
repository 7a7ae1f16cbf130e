//! The collision engine: per (device, zone) outside / entering / inside, turned into enter and
//! exit events by positions, the clock and configuration changes. Pure and synchronous: inputs
//! are plain data with their times, outputs a list of [`Output`]s for the I/O shell.

// foldhash: a fast seeded hash; device MACs are hashed several times per position.
use foldhash::{HashMap, HashMapExt, HashSet};

use chrono::{DateTime, Duration, Utc};
use serde_json::{Value, json};
use uuid::Uuid;
use zonecast_bus::Subjects;
use zonecast_geometry::{Nearby, Vec3};
use zonecast_model::{ActionTrigger, ConfigChanged, Envelope, EventSource, Mac, ZoneAction, format_timestamp};
use zonecast_store::Collision;

use crate::catalog::{Catalog, Zone};
use crate::grid::DeviceGrid;

/// Why a device left a zone (`Reason` of `ZONE_EXIT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// It moved out (beyond the tolerance, for the exit delay).
    Position,
    /// The zone was deactivated.
    Deactivated,
    /// The zone was deleted.
    Deleted,
    /// The zone's collisions were reset.
    Reset,
    /// The zone left its time window.
    Window,
    /// The zone's geometry changed (or its mobile source vanished) so the device is outside.
    Geometry,
    /// A DeviceList change excluded the device.
    Excluded,
    /// The device sent nothing for DeviceTimeoutSeconds.
    Timeout,
}

impl Reason {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Position => "position",
            Self::Deactivated => "deactivated",
            Self::Deleted => "deleted",
            Self::Reset => "reset",
            Self::Window => "window",
            Self::Geometry => "geometry",
            Self::Excluded => "excluded",
            Self::Timeout => "timeout",
        }
    }
}

/// What the engine asks the I/O shell to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// Publish `event` on `subject`.
    Publish {
        /// Bus subject.
        subject: String,
        /// The event.
        event: Envelope,
    },
    /// Record a current collision.
    Entered(Collision),
    /// Forget a collision.
    Exited {
        /// Zone.
        zone: Uuid,
        /// Device.
        mac: Mac,
    },
    /// Send an http-request action.
    Http {
        /// Target.
        uri: String,
        /// Method.
        method: String,
        /// Headers.
        headers: Vec<(String, String)>,
        /// The triggering event, as the JSON body.
        event: Envelope,
    },
    /// Write a log line of an info-event action.
    Log {
        /// Zone name.
        zone: String,
        /// Device.
        mac: Mac,
        /// Message of the action.
        message: String,
    },
}

#[derive(Debug, Clone, PartialEq)]
enum Phase {
    /// Inside, waiting for EntryDelayMs since `since`.
    Entering { since: DateTime<Utc> },
    /// Inside; `exit_since` when it has been beyond the tolerance since then.
    Inside { collision: Uuid, entry_time: DateTime<Utc>, alarm: &'static str, exit_since: Option<DateTime<Utc>> },
}

#[derive(Debug, Clone)]
struct Device {
    pos: Option<Vec3>,
    ts: DateTime<Utc>,
    /// Where the last position applied stands in the device's order; none yet for a device
    /// known only from its restored collisions.
    order: Option<Order>,
    zones: Vec<(Uuid, Phase)>,
}

/// Where a position stands in its device's order: its Timestamp, then its `Sequence` when the
/// source sends one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Order {
    ts: DateTime<Utc>,
    sequence: Option<u64>,
}

impl Order {
    /// Whether a position at `self` comes before `last`, the last one applied: an earlier
    /// Timestamp, or the same Timestamp and a Sequence no higher than the last one's. The
    /// Sequence only breaks ties: tags wrap it (often at 8 or 16 bits) and restart it, while the
    /// Timestamp is when the position was measured.
    fn before(self, last: Order) -> bool {
        match self.ts.cmp(&last.ts) {
            std::cmp::Ordering::Less => true,
            std::cmp::Ordering::Greater => false,
            std::cmp::Ordering::Equal => matches!((self.sequence, last.sequence), (Some(n), Some(l)) if n <= l),
        }
    }
}

/// Which devices this evaluator owns: partitions `lo..=hi` of `count`.
#[derive(Debug, Clone, Copy)]
pub struct Ownership {
    /// Partition count.
    pub count: u32,
    /// First owned partition.
    pub lo: u32,
    /// Last owned partition.
    pub hi: u32,
}

impl Ownership {
    /// Whether `mac`'s partition is owned.
    pub fn owns(&self, mac: &Mac) -> bool {
        (self.lo..=self.hi).contains(&mac.partition(self.count))
    }
}

/// Per-device collision state over a [`Catalog`].
pub struct Engine {
    catalog: Catalog,
    subjects: Subjects,
    site_id: i64,
    ownership: Ownership,
    devices: HashMap<Mac, Device>,
    /// Zone → devices with a phase in it.
    occupants: HashMap<Uuid, HashSet<Mac>>,
    /// Latest positions of mobile-zone sources.
    sources: HashMap<Mac, Vec3>,
    /// Where the latest position of each mobile-zone source stands in its order.
    source_orders: HashMap<Mac, Order>,
    grid: DeviceGrid,
    candidates: Vec<(usize, Option<f64>)>,
    nearby: Nearby,
    movable: Vec<u32>,
}

fn sub(a: Vec3, b: Vec3) -> Vec3 {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

enum Verdict {
    Gone(Reason),
    Distance(f64),
}

impl Engine {
    /// An engine over `catalog` owning `ownership`'s devices.
    pub fn new(catalog: Catalog, subjects: Subjects, site_id: i64, ownership: Ownership) -> Self {
        let mut engine = Self {
            catalog: Catalog::empty(),
            subjects,
            site_id,
            ownership,
            devices: HashMap::new(),
            occupants: HashMap::new(),
            sources: HashMap::new(),
            source_orders: HashMap::new(),
            grid: DeviceGrid::new(8.0),
            candidates: Vec::new(),
            nearby: Nearby::default(),
            movable: Vec::new(),
        };
        engine.install(catalog);
        engine
    }

    /// The catalog in force.
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// Number of devices with state.
    pub fn device_count(&self) -> usize {
        self.devices.len()
    }

    /// The MACs of mobile-zone sources this engine must follow.
    pub fn sources(&self) -> impl Iterator<Item = &Mac> {
        self.catalog.mobile_by_source.keys()
    }

    /// Whether this engine owns `mac`.
    pub fn owns(&self, mac: &Mac) -> bool {
        self.ownership.owns(mac)
    }

    fn install(&mut self, catalog: Catalog) {
        self.catalog = catalog;
        let moves: Vec<(Mac, Vec3)> = self.sources.iter().map(|(m, p)| (m.clone(), *p)).collect();
        for (mac, pos) in moves {
            self.place_mobile_zones(&mac, pos);
        }
    }

    fn place_mobile_zones(&mut self, source: &Mac, pos: Vec3) {
        let Some(indexes) = self.catalog.mobile_by_source.get(source) else { return };
        for &zi in indexes {
            let z = &self.catalog.zones[zi];
            let aabb = z.region.aabb().translated(sub(pos, z.centre));
            // Zone indexes fit u32: a catalog holds far fewer than 4 billion zones.
            self.catalog.scene.set_movable(zi as u32, aabb);
        }
    }

    /// Restores collisions recorded before a restart (only owned devices): they count as inside,
    /// so a device that stayed inside produces no second enter.
    pub fn restore(&mut self, collisions: Vec<Collision>, now: DateTime<Utc>, out: &mut Vec<Output>) {
        for c in collisions.into_iter().filter(|c| self.ownership.owns(&c.mac)) {
            let Some(&zi) = self.catalog.by_id.get(&c.zone_id) else {
                out.push(Output::Exited { zone: c.zone_id, mac: c.mac });
                continue;
            };
            let alarm = self.catalog.alarm_kind(self.catalog.zones[zi].spec.alert_level);
            let device = self.devices.entry(c.mac.clone()).or_insert_with(|| Device {
                pos: None,
                ts: now,
                order: None,
                zones: Vec::new(),
            });
            device.zones.push((
                c.zone_id,
                Phase::Inside { collision: c.collision_id, entry_time: c.entry_time, alarm, exit_since: None },
            ));
            self.occupants.entry(c.zone_id).or_default().insert(c.mac);
        }
        // The exits owed for changes made while this evaluator was away.
        let unchanged = std::mem::replace(&mut self.catalog, Catalog::empty());
        self.reconcile(&unchanged, &unchanged, &[], now, out);
        self.catalog = unchanged;
    }

    /// Asks the processor to load the zone index data an evaluation at `pos` reads first, without
    /// waiting: called for the next queued position while this one is evaluated, so that the
    /// two positions' cache misses overlap.
    pub fn prefetch(&self, pos: Vec3) {
        self.catalog.scene.prefetch(pos);
    }

    /// A position of `mac` at `ts` (with the source's `sequence`, if it sends one); `now` is
    /// the local clock for LocalTimestamp. A position that comes before the last one applied
    /// for the device (see [`Order::before`]) arrived out of order: it is not applied, and the
    /// answer is false.
    pub fn on_position(
        &mut self,
        mac: &Mac,
        pos: Vec3,
        ts: DateTime<Utc>,
        sequence: Option<u64>,
        now: DateTime<Utc>,
        out: &mut Vec<Output>,
    ) -> bool {
        let order = Order { ts, sequence };
        let late = |last: Option<Order>| last.is_some_and(|last| order.before(last));
        let is_source = self.catalog.mobile_by_source.contains_key(mac);
        if is_source && late(self.source_orders.get(mac).copied()) {
            return false;
        }
        // One map lookup for the check and the update: this is the path of every position.
        let old = if self.ownership.owns(mac) {
            let device = self.devices.entry(mac.clone()).or_insert_with(|| Device {
                pos: None,
                ts,
                order: None,
                zones: Vec::new(),
            });
            if late(device.order) {
                return false;
            }
            device.ts = ts;
            device.order = Some(order);
            Some(device.pos.replace(pos))
        } else {
            None
        };
        if is_source {
            self.source_orders.insert(mac.clone(), order);
            self.move_source(mac, pos, ts, now, out);
        }
        let Some(old) = old else { return true };
        self.grid.moved(mac, old, pos);
        self.evaluate(mac, None, now, out);
        true
    }

    /// A mobile-zone source moved: its zones move and the devices around them are re-evaluated.
    fn move_source(&mut self, source: &Mac, pos: Vec3, ts: DateTime<Utc>, now: DateTime<Utc>, out: &mut Vec<Output>) {
        self.sources.insert(source.clone(), pos);
        self.place_mobile_zones(source, pos);
        let Some(indexes) = self.catalog.mobile_by_source.get(source).cloned() else { return };
        let margin = self.catalog.max_radius + self.catalog.exit_tolerance;
        for zi in indexes {
            let z = &self.catalog.zones[zi];
            let aabb = z.region.aabb().translated(sub(pos, z.centre)).expanded(margin);
            let mut affected: HashSet<Mac> = self.occupants.get(&z.spec.id).cloned().unwrap_or_default();
            self.grid.within(&aabb, |mac| {
                affected.insert(mac.clone());
            });
            for mac in affected {
                if let Some(device) = self.devices.get_mut(&mac) {
                    // The device stood still; its position is now as of the source's move.
                    device.ts = device.ts.max(ts);
                    self.evaluate(&mac, Some(zi), now, out);
                }
            }
        }
    }

    /// Whether `mac` at `pos` may be in `zone` at all, and if so its distance from the zone:
    /// exact up to `limit` (the device radius plus the exit tolerance, the largest distance any
    /// rule compares with), and some value above it beyond. A static zone's distance may be
    /// `known` already, from the scene's query.
    fn verdict(
        &self,
        zone: &Zone,
        mac: &Mac,
        pos: Option<Vec3>,
        ts: DateTime<Utc>,
        limit: f64,
        known: Option<f64>,
    ) -> Verdict {
        if !zone.spec.active {
            return Verdict::Gone(Reason::Deactivated);
        }
        if !zone.in_window(ts) {
            return Verdict::Gone(Reason::Window);
        }
        if !zone.spec.inclusion_policy.admits(&zone.spec.device_list, mac) {
            return Verdict::Gone(Reason::Excluded);
        }
        let Some(pos) = pos else { return Verdict::Distance(f64::INFINITY) };
        match &zone.spec.mobile_origin_source {
            None => Verdict::Distance(known.unwrap_or_else(|| zone.region.distance_within(pos, limit))),
            Some(source) => match self.sources.get(source) {
                Some(at) => Verdict::Distance(zone.region.distance_within(sub(pos, sub(*at, zone.centre)), limit)),
                None => Verdict::Gone(Reason::Geometry),
            },
        }
    }

    /// Evaluates `mac` against `only` one zone, or every candidate and every zone it is in.
    fn evaluate(&mut self, mac: &Mac, only: Option<usize>, now: DateTime<Utc>, out: &mut Vec<Output>) {
        let Some(device) = self.devices.get(mac) else { return };
        let (pos, ts) = (device.pos, device.ts);
        let radius = self.catalog.radius(mac);
        let tolerance = self.catalog.exit_tolerance;
        let mut candidates = std::mem::take(&mut self.candidates);
        candidates.clear();
        match (only, pos) {
            (Some(zi), _) => candidates.push((zi, None)),
            (None, Some(p)) => {
                let margin = radius + tolerance;
                self.catalog.scene.static_distances(p, margin, &mut self.nearby);
                candidates.extend(self.nearby.iter().map(|(i, d)| (self.catalog.static_zone(i), Some(d))));
                self.movable.clear();
                self.catalog.scene.movable_candidates(p, margin, &mut self.movable);
                candidates.extend(self.movable.iter().map(|&k| (k as usize, None)));
                for (id, _) in &device.zones {
                    if let Some(&zi) = self.catalog.by_id.get(id) {
                        candidates.push((zi, None));
                    }
                }
                if !device.zones.is_empty() {
                    // A zone the device is in may be a candidate too: keep the entry with a distance.
                    candidates.sort_unstable_by_key(|&(zi, d)| (zi, d.is_none()));
                    candidates.dedup_by_key(|&mut (zi, _)| zi);
                }
            }
            (None, None) => {}
        }
        for &(zi, known) in &candidates {
            let zone = &self.catalog.zones[zi];
            if zone.spec.mobile_origin_source.as_ref() == Some(mac) {
                continue;
            }
            let verdict = self.verdict(zone, mac, pos, ts, radius + tolerance, known);
            self.step(mac, zi, verdict, radius, ts, now, out);
        }
        self.candidates = candidates;
    }

    #[allow(clippy::too_many_arguments)]
    fn step(
        &mut self,
        mac: &Mac,
        zi: usize,
        verdict: Verdict,
        radius: f64,
        ts: DateTime<Utc>,
        now: DateTime<Utc>,
        out: &mut Vec<Output>,
    ) {
        let zone_id = self.catalog.zones[zi].spec.id;
        let (entry_delay, exit_delay, tolerance) =
            (self.catalog.entry_delay, self.catalog.exit_delay, self.catalog.exit_tolerance);
        let Some(device) = self.devices.get_mut(mac) else { return };
        let slot = device.zones.iter().position(|(id, _)| *id == zone_id);
        let phase = slot.map(|i| device.zones[i].1.clone());
        match (phase, verdict) {
            (None, Verdict::Gone(_)) => {}
            (Some(Phase::Entering { .. }), Verdict::Gone(_)) => self.forget(mac, zone_id),
            (Some(Phase::Inside { .. }), Verdict::Gone(reason)) => self.exit(mac, zi, reason, ts, now, out),
            (None, Verdict::Distance(d)) if d <= radius => {
                if entry_delay <= Duration::zero() {
                    self.enter(mac, zi, ts, now, out);
                } else {
                    device.zones.push((zone_id, Phase::Entering { since: ts }));
                    self.occupants.entry(zone_id).or_default().insert(mac.clone());
                }
            }
            (None, Verdict::Distance(_)) => {}
            (Some(Phase::Entering { since }), Verdict::Distance(d)) if d <= radius => {
                if ts - since >= entry_delay {
                    self.forget(mac, zone_id);
                    self.enter(mac, zi, ts, now, out);
                }
            }
            (Some(Phase::Entering { .. }), Verdict::Distance(_)) => self.forget(mac, zone_id),
            (Some(Phase::Inside { .. }), Verdict::Distance(d)) if d <= radius + tolerance => {
                if let Some(i) = slot
                    && let Phase::Inside { exit_since, .. } = &mut device.zones[i].1
                {
                    *exit_since = None;
                }
            }
            (Some(Phase::Inside { exit_since, .. }), Verdict::Distance(_)) => {
                let since = exit_since.unwrap_or(ts);
                if ts - since >= exit_delay {
                    self.exit(mac, zi, Reason::Position, ts, now, out);
                } else if let Some(i) = slot
                    && let Phase::Inside { exit_since, .. } = &mut device.zones[i].1
                {
                    *exit_since = Some(since);
                }
            }
        }
    }

    fn forget(&mut self, mac: &Mac, zone: Uuid) {
        if let Some(device) = self.devices.get_mut(mac) {
            device.zones.retain(|(id, _)| *id != zone);
        }
        if let Some(set) = self.occupants.get_mut(&zone) {
            set.remove(mac);
            if set.is_empty() {
                self.occupants.remove(&zone);
            }
        }
    }

    fn envelope(
        &self,
        category: &str,
        kind: &str,
        mac: &Mac,
        ts: DateTime<Utc>,
        now: DateTime<Utc>,
        content: Value,
    ) -> Envelope {
        Envelope {
            category: category.into(),
            kind: kind.into(),
            timestamp: format_timestamp(&ts),
            local_timestamp: format_timestamp(&now),
            source: EventSource { mac: Some(mac.to_string()), gateway_uri: None, site_id: self.site_id },
            content,
        }
    }

    fn enter(&mut self, mac: &Mac, zi: usize, ts: DateTime<Utc>, now: DateTime<Utc>, out: &mut Vec<Output>) {
        let zone = &self.catalog.zones[zi];
        let collision = Uuid::new_v4();
        let alarm = self.catalog.alarm_kind(zone.spec.alert_level);
        let pos = self.devices.get(mac).and_then(|d| d.pos);
        let content = json!({
            "ZoneID": zone.id_text, "ZoneName": zone.spec.name, "AlertLevel": zone.spec.alert_level,
            "Alarm": alarm, "CollisionID": collision.hyphenated().to_string().to_ascii_uppercase(),
            "EntryTime": format_timestamp(&ts), "Position": pos,
        });
        let event = self.envelope("ZONE", "ZONE_ENTER", mac, ts, now, content);
        out.push(Output::Publish { subject: self.subjects.zone_event(&zone.id_text, "enter"), event: event.clone() });
        out.push(Output::Entered(Collision {
            zone_id: zone.spec.id,
            mac: mac.clone(),
            collision_id: collision,
            entry_time: ts,
        }));
        tracing::info!(target: "zonecast::entry", zone = %zone.id_text, name = %zone.spec.name, mac = %mac, alarm, "zone entered");
        self.alarms_and_actions(zi, mac, alarm, &event, ActionTrigger::Enter, ts, now, out);
        if let Some(device) = self.devices.get_mut(mac) {
            device.zones.push((zone.spec.id, Phase::Inside { collision, entry_time: ts, alarm, exit_since: None }));
        }
        self.occupants.entry(zone.spec.id).or_default().insert(mac.clone());
    }

    /// Exit of `mac` from zone `zi` of the current catalog.
    fn exit(
        &mut self,
        mac: &Mac,
        zi: usize,
        reason: Reason,
        ts: DateTime<Utc>,
        now: DateTime<Utc>,
        out: &mut Vec<Output>,
    ) {
        let zone = self.catalog.zones[zi].clone();
        self.exit_zone(mac, &zone, reason, ts, now, out);
    }

    /// Exit of `mac` from `zone` (which may be gone from the catalog already).
    #[allow(clippy::too_many_arguments)]
    fn exit_zone(
        &mut self,
        mac: &Mac,
        zone: &Zone,
        reason: Reason,
        ts: DateTime<Utc>,
        now: DateTime<Utc>,
        out: &mut Vec<Output>,
    ) {
        let Some(device) = self.devices.get(mac) else { return };
        let Some((_, Phase::Inside { collision, entry_time, alarm, .. })) =
            device.zones.iter().find(|(id, _)| *id == zone.spec.id).cloned()
        else {
            self.forget(mac, zone.spec.id);
            return;
        };
        let content = json!({
            "ZoneID": zone.id_text, "ZoneName": zone.spec.name, "AlertLevel": zone.spec.alert_level,
            "Alarm": alarm, "CollisionID": collision.hyphenated().to_string().to_ascii_uppercase(),
            "EntryTime": format_timestamp(&entry_time), "Position": device.pos,
            "ExitTime": format_timestamp(&ts), "Reason": reason.as_str(),
        });
        let event = self.envelope("ZONE", "ZONE_EXIT", mac, ts, now, content);
        out.push(Output::Publish { subject: self.subjects.zone_event(&zone.id_text, "exit"), event: event.clone() });
        out.push(Output::Exited { zone: zone.spec.id, mac: mac.clone() });
        self.forget(mac, zone.spec.id);
        self.run_actions(zone, mac, false, &event, ActionTrigger::Exit, ts, now, out);
    }

    #[allow(clippy::too_many_arguments)]
    fn alarms_and_actions(
        &self,
        zi: usize,
        mac: &Mac,
        alarm: &str,
        event: &Envelope,
        when: ActionTrigger,
        ts: DateTime<Utc>,
        now: DateTime<Utc>,
        out: &mut Vec<Output>,
    ) {
        let zone = &self.catalog.zones[zi];
        let collision = &event.content["CollisionID"];
        let alarm_content = json!({"ZoneID": zone.id_text, "ZoneName": zone.spec.name, "AlertLevel": zone.spec.alert_level, "CollisionID": collision});
        if alarm == "site" {
            let e = self.envelope("ALARM", "SITE_ALARM", mac, ts, now, alarm_content.clone());
            out.push(Output::Publish { subject: self.subjects.alarm("site", mac.as_str()), event: e });
        }
        let device_alarm = alarm == "device";
        if device_alarm {
            self.device_alarm(mac, alarm_content, ts, now, out);
        }
        self.run_actions(zone, mac, device_alarm, event, when, ts, now, out);
    }

    /// A device alarm: the command for the device's gateway and the `DEVICE_ALARM` event.
    fn device_alarm(&self, mac: &Mac, content: Value, ts: DateTime<Utc>, now: DateTime<Utc>, out: &mut Vec<Output>) {
        let command = self.envelope("ALARM", "DEVICE_ALARM_COMMAND", mac, ts, now, content.clone());
        out.push(Output::Publish { subject: self.subjects.device_alarm_command(mac.as_str()), event: command });
        let e = self.envelope("ALARM", "DEVICE_ALARM", mac, ts, now, content);
        out.push(Output::Publish { subject: self.subjects.alarm("device", mac.as_str()), event: e });
    }

    /// Runs the zone's actions for `when`; `device_alarm_done` avoids a second device alarm
    /// when the alarm kind already raised one for this entry.
    #[allow(clippy::too_many_arguments)]
    fn run_actions(
        &self,
        zone: &Zone,
        mac: &Mac,
        device_alarm_done: bool,
        event: &Envelope,
        when: ActionTrigger,
        ts: DateTime<Utc>,
        now: DateTime<Utc>,
        out: &mut Vec<Output>,
    ) {
        let collision = &event.content["CollisionID"];
        for action in &zone.spec.zone_actions {
            let fires = action.trigger() == ActionTrigger::Both || action.trigger() == when;
            if !fires {
                continue;
            }
            match action {
                ZoneAction::InfoEvent { message, .. } => {
                    let message = message.clone().unwrap_or_else(|| format!("{} {}", event.kind, zone.spec.name));
                    out.push(Output::Log { zone: zone.spec.name.clone(), mac: mac.clone(), message: message.clone() });
                    let content = json!({"ZoneID": zone.id_text, "ZoneName": zone.spec.name, "Message": message, "CollisionID": collision});
                    let e = self.envelope("ZONE", "ZONE_INFO", mac, ts, now, content);
                    out.push(Output::Publish { subject: self.subjects.zone_event(&zone.id_text, "info"), event: e });
                }
                ZoneAction::DeviceAlarm { .. } => {
                    if !(device_alarm_done && when == ActionTrigger::Enter) {
                        let content = json!({"ZoneID": zone.id_text, "ZoneName": zone.spec.name, "AlertLevel": zone.spec.alert_level, "CollisionID": collision});
                        self.device_alarm(mac, content, ts, now, out);
                    }
                }
                ZoneAction::HttpRequest { uri, method, headers, .. } => out.push(Output::Http {
                    uri: uri.clone(),
                    method: method.clone(),
                    headers: headers.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                    event: event.clone(),
                }),
            }
        }
    }

    /// The clock: fires delayed entries and exits that are due, device timeouts and the ends of
    /// time windows.
    pub fn on_tick(&mut self, now: DateTime<Utc>, out: &mut Vec<Output>) {
        let (entry_delay, exit_delay, timeout) =
            (self.catalog.entry_delay, self.catalog.exit_delay, self.catalog.device_timeout);
        let mut due: Vec<(Mac, Uuid, Phase, DateTime<Utc>)> = Vec::new();
        let mut timed_out: Vec<(Mac, DateTime<Utc>)> = Vec::new();
        for (mac, device) in &self.devices {
            if let Some(t) = timeout
                && now - device.ts >= t
            {
                timed_out.push((mac.clone(), device.ts + t));
                continue;
            }
            for (id, phase) in &device.zones {
                match phase {
                    Phase::Entering { since } if now - *since >= entry_delay => {
                        due.push((mac.clone(), *id, phase.clone(), *since + entry_delay));
                    }
                    Phase::Inside { exit_since: Some(since), .. } if now - *since >= exit_delay => {
                        due.push((mac.clone(), *id, phase.clone(), *since + exit_delay));
                    }
                    _ => {}
                }
            }
        }
        for (mac, id, phase, at) in due {
            let Some(&zi) = self.catalog.by_id.get(&id) else { continue };
            match phase {
                Phase::Entering { .. } => {
                    self.forget(&mac, id);
                    self.enter(&mac, zi, at, now, out);
                }
                Phase::Inside { .. } => self.exit(&mac, zi, Reason::Position, at, now, out),
            }
        }
        for (mac, at) in timed_out {
            let zones: Vec<Uuid> =
                self.devices.get(&mac).map(|d| d.zones.iter().map(|(id, _)| *id).collect()).unwrap_or_default();
            for id in zones {
                match self.catalog.by_id.get(&id) {
                    Some(&zi) => self.exit(&mac, zi, Reason::Timeout, at, now, out),
                    None => self.forget(&mac, id),
                }
            }
            if let Some(device) = self.devices.remove(&mac) {
                self.grid.removed(&mac, device.pos);
            }
        }
        let ended: Vec<usize> = self
            .occupants
            .keys()
            .filter_map(|id| self.catalog.by_id.get(id).copied())
            .filter(|&zi| {
                let z = &self.catalog.zones[zi];
                z.spec.is_timed && z.spec.stop_time.is_some_and(|stop| stop <= now)
            })
            .collect();
        for zi in ended {
            let zone = self.catalog.zones[zi].clone();
            let stop = zone.spec.stop_time.unwrap_or(now);
            for mac in self.occupants.get(&zone.spec.id).cloned().unwrap_or_default() {
                self.exit(&mac, zi, Reason::Window, stop, now, out);
            }
        }
    }

    /// Applies a burst of zone writes incrementally: the zones `touched` become `changed` (their
    /// current state; a touched zone missing from it was deleted), the rest stays as prepared
    /// (see [`Catalog::patched`]); emits the exits `changes` imply, as [`Engine::reload`] does.
    pub fn apply_zones(
        &mut self,
        changed: Vec<zonecast_model::ZoneSpec>,
        touched: &HashSet<Uuid>,
        changes: &[ConfigChanged],
        now: DateTime<Utc>,
        out: &mut Vec<Output>,
    ) {
        let new = self.catalog.patched(changed, touched);
        self.reload(new, changes, now, out);
    }

    /// Puts other settings and radii in force over the same zones (see
    /// [`Catalog::with_parameters`]) and emits the exits that implies.
    pub fn reparameterise(
        &mut self,
        settings: zonecast_model::Settings,
        radii: Vec<(Mac, f64)>,
        now: DateTime<Utc>,
        out: &mut Vec<Output>,
    ) {
        let current = std::mem::replace(&mut self.catalog, Catalog::empty());
        let new = current.with_parameters(settings, radii);
        self.reconcile(&new, &new, &[], now, out);
        self.catalog = new;
    }

    /// Installs a new catalog and emits the exits the changes since the last one imply;
    /// `changes` may be a whole burst applied together (a zone both reset and deleted in it
    /// gives the Reason `deleted`).
    pub fn reload(&mut self, catalog: Catalog, changes: &[ConfigChanged], now: DateTime<Utc>, out: &mut Vec<Output>) {
        let old = std::mem::replace(&mut self.catalog, catalog);
        let moves: Vec<(Mac, Vec3)> = self.sources.iter().map(|(m, p)| (m.clone(), *p)).collect();
        for (mac, pos) in moves {
            self.place_mobile_zones(&mac, pos);
        }
        let new = std::mem::replace(&mut self.catalog, Catalog::empty());
        self.reconcile(&old, &new, changes, now, out);
        self.catalog = new;
    }

    /// Exits for devices in zones that `new` deletes, deactivates, closes, excludes them from,
    /// resets, or moves away from them. Runs with `self.catalog` taken out, so it is passed in.
    fn reconcile(
        &mut self,
        old: &Catalog,
        new: &Catalog,
        changes: &[ConfigChanged],
        now: DateTime<Utc>,
        out: &mut Vec<Output>,
    ) {
        let reset: HashSet<Uuid> = changes
            .iter()
            .filter(|c| c.operation.as_deref() == Some("reset"))
            .flat_map(|c| c.ids.iter().filter_map(|s| s.parse().ok()))
            .collect();
        let held: Vec<(Mac, Uuid)> =
            self.devices.iter().flat_map(|(m, d)| d.zones.iter().map(move |(id, _)| (m.clone(), *id))).collect();
        for (mac, id) in held {
            let reason = match new.by_id.get(&id) {
                None => Some(Reason::Deleted),
                Some(&zi) => {
                    let zone = &new.zones[zi];
                    let pos = self.devices.get(&mac).and_then(|d| d.pos);
                    if reset.contains(&id) {
                        Some(Reason::Reset)
                    } else {
                        let limit = new.radius(&mac) + new.exit_tolerance;
                        match self.verdict(zone, &mac, pos, now, limit, None) {
                            Verdict::Gone(r) => Some(r),
                            Verdict::Distance(d) => {
                                let moved = old.by_id.get(&id).is_none_or(|&oi| {
                                    let o = &old.zones[oi].spec;
                                    o.geometry_type != zone.spec.geometry_type
                                        || o.geometry_data != zone.spec.geometry_data
                                        || o.mobile_origin_source != zone.spec.mobile_origin_source
                                });
                                (moved && pos.is_some() && d > limit).then_some(Reason::Geometry)
                            }
                        }
                    }
                }
            };
            let Some(reason) = reason else { continue };
            let zone = match new.by_id.get(&id) {
                Some(&zi) => new.zones[zi].clone(),
                None => match old.by_id.get(&id) {
                    Some(&oi) => old.zones[oi].clone(),
                    None => {
                        self.forget(&mac, id);
                        out.push(Output::Exited { zone: id, mac });
                        continue;
                    }
                },
            };
            self.exit_zone(&mac, &zone, reason, now, now, out);
        }
    }
}
