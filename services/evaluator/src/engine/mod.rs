//! The collision engine: per (device, zone) outside / entering / inside, turned into enter and
//! exit events by positions, the clock and configuration changes. Pure, synchronous and
//! deterministic: inputs are plain data with their times, IDs come from the [`IdSource`] it is
//! given, and outputs are a list of [`Output`]s for the I/O shell, which publishes, records
//! and logs them.
//!
//! - `state`: what is kept per device;
//! - `transition`: the step of one device in one zone, and the zones a device is judged against;
//! - `events`: the enter and exit events and collision records of a step;
//! - `stamp`: the envelope and EventID every event gets;
//! - `actions`: the alarms and zone actions they set off;
//! - `reconcile`: the exits a configuration change implies, and the restore after a restart;
//! - `clock`: delayed entries and exits, device timeouts and time windows;
//! - `dwell`: stays longer than their zone's MaxDwellSeconds;
//! - `silence`: devices offline after DeviceOfflineSeconds, and online again;
//! - `occupancy`: which zones with occupancy limits to count (the count is the store's, over
//!   every evaluator).
//!
//! Whatever iterates a hash map sorts what it found before acting on it, so that the same
//! inputs give the same outputs in the same order.

mod actions;
mod clock;
mod dwell;
mod events;
mod occupancy;
mod ownership;
mod reconcile;
mod silence;
mod stamp;
mod state;
mod transition;

// foldhash: a fast seeded hash; device MACs are hashed several times per position.
use foldhash::{HashMap, HashMapExt, HashSet};

use chrono::{DateTime, Utc};
use uuid::Uuid;
use zonecast_geometry::{Nearby, Vec3};
use zonecast_model::{Collision, ConfigChanged, Event, IdSource, Mac, PositionFix, Presence};

use crate::catalog::Catalog;
use crate::grid::DeviceGrid;
use crate::occupancy::Recount;
pub use ownership::Ownership;
use state::{At, Device, Order};

/// What the engine asks the I/O shell to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// Publish the event (on the subject of its type and zone or device). The shell also logs
    /// every `ZONE_ENTER` and the message of every `ZONE_INFO`.
    Publish(Event),
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
        /// The zone whose action it is.
        zone: Uuid,
        /// The action's place among the zone's actions: with the event's `EventID`, the
        /// request's identity.
        action: usize,
        /// Target.
        uri: String,
        /// Method.
        method: String,
        /// Headers.
        headers: Vec<(String, String)>,
        /// The triggering event, as the JSON body.
        event: Event,
        /// The sealed secret that signs the request, if the action has one.
        secret: Option<zonecast_model::ActionSecret>,
    },
    /// Record when a device last reported, and whether it is offline.
    Presence(Presence),
    /// Count a zone with occupancy limits once the collision changes before it are written.
    Recount(Recount),
    /// Tell the other evaluators where a mobile-zone source this engine owns was last seen, or
    /// that it has not been seen: a change just gave it a mobile zone, and they have not been
    /// following its positions.
    Source(SourceHint),
}

/// What the evaluator owning a new mobile-zone source tells the others about it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SourceHint {
    /// The source.
    #[serde(rename = "MAC")]
    pub mac: Mac,
    /// Its last position applied, if it has reported one since this evaluator started.
    #[serde(rename = "Last")]
    pub last: Option<PositionFix>,
}

/// Per-device collision state over a [`Catalog`].
pub struct Engine {
    catalog: Catalog,
    ids: IdSource,
    site_id: i64,
    ownership: Ownership,
    devices: HashMap<Mac, Device>,
    /// Zone → devices with a phase in it.
    occupants: HashMap<Uuid, HashSet<Mac>>,
    /// Latest positions of mobile-zone sources.
    sources: HashMap<Mac, Vec3>,
    /// Where the latest position of each mobile-zone source stands in its order.
    source_orders: HashMap<Mac, Order>,
    /// Sources of other evaluators that have told this one they have no position of them.
    unseen_sources: HashSet<Mac>,
    /// New mobile-zone sources of other evaluators whose hint has not come yet.
    awaiting: HashSet<Mac>,
    /// Whether a device may be entering or leaving a zone on a delay: until the clock finds
    /// none, it looks at every device; without delays and timeouts it looks at none.
    delayed: bool,
    grid: DeviceGrid,
    candidates: Vec<(usize, Option<f64>)>,
    nearby: Nearby,
    movable: Vec<u32>,
}

fn sub(a: Vec3, b: Vec3) -> Vec3 {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

impl Engine {
    /// An engine over `catalog` owning `ownership`'s devices, stamping events with `site_id`
    /// and drawing CollisionIDs and EventIDs from `ids`.
    pub fn new(catalog: Catalog, site_id: i64, ownership: Ownership, ids: IdSource) -> Self {
        let mut engine = Self {
            catalog: Catalog::empty(),
            ids,
            site_id,
            ownership,
            devices: HashMap::new(),
            occupants: HashMap::new(),
            sources: HashMap::new(),
            source_orders: HashMap::new(),
            unseen_sources: HashSet::default(),
            awaiting: HashSet::default(),
            delayed: false,
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

    /// The partitions this engine owns.
    pub fn ownership(&self) -> &Ownership {
        &self.ownership
    }

    /// Takes `partitions` over from another evaluator: `collisions` and `presence` are the
    /// current collisions and presence stored for their devices (others are passed over).
    /// Their devices start as after a restart: inside the zones of their collisions, with no
    /// position yet.
    pub fn take_over(
        &mut self,
        partitions: &[u32],
        collisions: Vec<Collision>,
        presence: Vec<Presence>,
        now: DateTime<Utc>,
        out: &mut Vec<Output>,
    ) {
        let count = self.ownership.count();
        for &p in partitions {
            self.ownership.insert(p);
        }
        let theirs = collisions.into_iter().filter(|c| partitions.contains(&c.mac.partition(count))).collect();
        self.restore(theirs, now, out);
        let seen = presence.into_iter().filter(|p| partitions.contains(&p.mac.partition(count))).collect();
        self.restore_presence(seen, now);
    }

    /// Gives `partitions` up to another evaluator: their devices are forgotten, without an
    /// event (their owner from now on goes on from the collisions written).
    pub fn give_up(&mut self, partitions: &[u32]) {
        let count = self.ownership.count();
        for &p in partitions {
            self.ownership.remove(p);
        }
        let gone: Vec<Mac> =
            self.devices.keys().filter(|mac| partitions.contains(&mac.partition(count))).cloned().collect();
        for mac in gone {
            if let Some(device) = self.devices.remove(&mac) {
                self.grid.removed(&mac, device.pos);
                for (zone, _) in device.zones {
                    if let Some(set) = self.occupants.get_mut(&zone) {
                        set.remove(&mac);
                        if set.is_empty() {
                            self.occupants.remove(&zone);
                        }
                    }
                }
            }
        }
    }

    fn install(&mut self, catalog: Catalog) {
        self.catalog = catalog;
        for (mac, pos) in self.source_moves() {
            self.place_mobile_zones(&mac, pos);
        }
    }

    /// The latest position of every mobile-zone source, in MAC order.
    fn source_moves(&self) -> Vec<(Mac, Vec3)> {
        let mut moves: Vec<(Mac, Vec3)> = self.sources.iter().map(|(m, p)| (m.clone(), *p)).collect();
        moves.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        moves
    }

    fn place_mobile_zones(&mut self, source: &Mac, pos: Vec3) {
        let Some(indexes) = self.catalog.mobile_by_source.get(source) else { return };
        for &zone_index in indexes {
            let z = &self.catalog.zones[zone_index];
            let aabb = z.region.aabb().translated(sub(pos, z.centre));
            // Zone indexes fit u32: a catalog holds far fewer than 4 billion zones.
            self.catalog.scene.set_movable(zone_index as u32, aabb);
        }
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
        let mut back = None;
        let old = if self.ownership.owns(mac) {
            let device = self.devices.entry(mac.clone()).or_insert_with(|| Device::new(ts));
            if late(device.order) {
                return false;
            }
            if std::mem::take(&mut device.offline) {
                back = Some(device.last_seen());
            }
            device.ts = ts;
            device.order = Some(order);
            if back.is_some() || device.noted.is_none_or(|noted| ts - noted >= self.catalog.presence_interval(mac)) {
                device.noted = Some(ts);
                out.push(Output::Presence(Presence { mac: mac.clone(), last_seen: ts, offline: false }));
            }
            Some(device.pos.replace(pos))
        } else {
            None
        };
        if let Some(last_seen) = back {
            self.online(mac, last_seen, pos, At { ts, now }, out);
        }
        if is_source {
            self.source_orders.insert(mac.clone(), order);
            self.move_source(mac, pos, ts, now, out);
        }
        let Some(old) = old else { return true };
        self.grid.moved(mac, old, pos);
        self.evaluate(mac, None, now, out);
        true
    }

    /// [`Engine::on_position`] of `fix`, with what it causes identified by the fix's EventID
    /// when it has one: evaluated again from the same state (after an evaluator restart, a
    /// stored position is delivered again), it causes events with the same EventIDs and
    /// CollisionIDs.
    pub fn on_fix(&mut self, fix: &PositionFix, now: DateTime<Utc>, out: &mut Vec<Output>) -> bool {
        let own = fix.event_id.map(|id| std::mem::replace(&mut self.ids, IdSource::derived(id.uuid())));
        let applied = self.on_position(&fix.mac, fix.position, fix.timestamp, fix.sequence, now, out);
        if let Some(own) = own {
            self.ids = own;
        }
        applied
    }

    /// What the evaluator owning a mobile-zone source told about it when a change gave the
    /// device a mobile zone. A position is kept even when this engine does not have the zone yet
    /// (the change may reach it later), and applied like a position of the source when it does;
    /// one not newer than what is known, or of a device this engine owns (it knows better), is
    /// ignored.
    pub fn on_source_hint(&mut self, hint: SourceHint, now: DateTime<Utc>, out: &mut Vec<Output>) {
        if self.ownership.owns(&hint.mac) {
            return;
        }
        self.awaiting.remove(&hint.mac);
        let Some(fix) = hint.last else {
            self.unseen_sources.insert(hint.mac);
            return;
        };
        let order = Order { ts: fix.timestamp, sequence: fix.sequence };
        if self.source_orders.get(&fix.mac).is_some_and(|last| order == *last || order.before(*last)) {
            return;
        }
        self.unseen_sources.remove(&fix.mac);
        self.source_orders.insert(fix.mac.clone(), order);
        self.move_source(&fix.mac, fix.position, fix.timestamp, now, out);
    }

    /// Whether a change has given mobile zones to sources of other evaluators that have not
    /// said yet where those sources are: until they have, the zones are not placed.
    pub fn awaiting_sources(&self) -> bool {
        !self.awaiting.is_empty()
    }

    /// Stops awaiting the hints of other evaluators (they did not come in time): the zones of
    /// those sources are placed when the sources report.
    pub fn stop_awaiting(&mut self) {
        self.awaiting.clear();
    }

    /// After a change: the sources that have just got mobile zones (`new`, sorted). Those this
    /// engine owns are placed at the device's last known position (when that is newer than
    /// what was known of it as a source), the devices around them re-evaluated, and the other
    /// evaluators told ([`Output::Source`]); those of other evaluators without a known
    /// position are awaited.
    fn adopt_new_sources(&mut self, new: Vec<Mac>, now: DateTime<Utc>, out: &mut Vec<Output>) {
        for mac in new {
            if !self.ownership.owns(&mac) {
                if !self.source_orders.contains_key(&mac) && !self.unseen_sources.contains(&mac) {
                    self.awaiting.insert(mac);
                }
                continue;
            }
            let last = self.devices.get(&mac).and_then(|d| Some((d.pos?, d.order?)));
            if let Some((pos, order)) = last
                && self.source_orders.get(&mac).is_none_or(|known| known.before(order))
            {
                self.source_orders.insert(mac.clone(), order);
                self.move_source(&mac, pos, order.ts, now, out);
            }
            let last = last.map(|(position, order)| PositionFix {
                mac: mac.clone(),
                position,
                timestamp: order.ts,
                sequence: order.sequence,
                event_id: None,
            });
            out.push(Output::Source(SourceHint { mac, last }));
        }
    }

    /// The mobile-zone sources of `new` that were not sources `before`, sorted.
    fn added_sources(before: &HashSet<Mac>, new: &Catalog) -> Vec<Mac> {
        let mut macs: Vec<Mac> = new.mobile_by_source.keys().filter(|m| !before.contains(*m)).cloned().collect();
        macs.sort_unstable();
        macs
    }

    /// A mobile-zone source moved: its zones move and the devices around them are re-evaluated.
    fn move_source(&mut self, source: &Mac, pos: Vec3, ts: DateTime<Utc>, now: DateTime<Utc>, out: &mut Vec<Output>) {
        self.sources.insert(source.clone(), pos);
        self.place_mobile_zones(source, pos);
        let Some(indexes) = self.catalog.mobile_by_source.get(source).cloned() else { return };
        let margin = self.catalog.max_radius + self.catalog.exit_tolerance;
        for zone_index in indexes {
            let z = &self.catalog.zones[zone_index];
            let aabb = z.region.aabb().translated(sub(pos, z.centre)).expanded(margin);
            let mut affected: Vec<Mac> =
                self.occupants.get(&z.spec.id).map(|set| set.iter().cloned().collect()).unwrap_or_default();
            self.grid.within(&aabb, |mac| affected.push(mac.clone()));
            // In MAC order, so that the same inputs give the same events in the same order.
            affected.sort_unstable();
            affected.dedup();
            for mac in affected {
                if let Some(device) = self.devices.get_mut(&mac) {
                    // The device stood still; its position is now as of the source's move.
                    device.ts = device.ts.max(ts);
                    self.evaluate(&mac, Some(zone_index), now, out);
                }
            }
        }
    }

    /// Applies a burst of zone writes incrementally: the zones `touched` become `changed` (their
    /// current state; a touched zone missing from it was deleted), in place, the rest stays as
    /// prepared (see [`Catalog::patch`]); emits the exits `changes` imply for the devices in the
    /// touched zones, as [`Engine::reload`] does. Devices in other zones are not looked at: their
    /// zones are as they were.
    pub fn apply_zones(
        &mut self,
        changed: Vec<zonecast_model::ZoneSpec>,
        touched: &HashSet<Uuid>,
        changes: &[ConfigChanged],
        now: DateTime<Utc>,
        out: &mut Vec<Output>,
    ) {
        let sources_before: HashSet<Mac> = self.catalog.mobile_by_source.keys().cloned().collect();
        let former = self.catalog.patch(changed, touched);
        // Mobile zones may have changed index or source: place them all again.
        for (mac, pos) in self.source_moves() {
            self.place_mobile_zones(&mac, pos);
        }
        let new = std::mem::replace(&mut self.catalog, Catalog::empty());
        self.reconcile_from(reconcile::Before::Patch { touched, former: &former }, &new, changes, now, out);
        Self::recount_all(former.values(), &new, out);
        let added = Self::added_sources(&sources_before, &new);
        self.catalog = new;
        self.adopt_new_sources(added, now, out);
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
        let rules = self.offline_rules();
        let current = std::mem::replace(&mut self.catalog, Catalog::empty());
        let new = current.with_parameters(settings, radii);
        self.reconcile(&new, &new, &[], now, out);
        self.catalog = new;
        self.offline_rules_took_effect(&rules, now);
        self.forget_offline_unless_reported();
    }

    /// Puts in force the radii of the devices `changed` names (`None`: the device no longer has
    /// one of its own and takes DefaultDeviceRadiusMeters), keeping every other radius, and
    /// reconciles those devices alone: what [`Engine::reparameterise`] does for a burst of
    /// radius writes, without the other radii and devices. Zones and scene stay as they are.
    pub fn apply_radii(&mut self, changed: Vec<(Mac, Option<f64>)>, now: DateTime<Utc>, out: &mut Vec<Output>) {
        let macs: Vec<Mac> = changed.iter().map(|(m, _)| m.clone()).collect();
        let mut current = std::mem::replace(&mut self.catalog, Catalog::empty());
        current.set_radii(changed);
        self.reconcile_from(reconcile::Before::Devices(&macs), &current, &[], now, out);
        self.catalog = current;
    }

    /// Installs a new catalog and emits the exits the changes since the last one imply;
    /// `changes` may be a whole burst applied together (a zone both reset and deleted in it
    /// gives the Reason `deleted`).
    pub fn reload(&mut self, catalog: Catalog, changes: &[ConfigChanged], now: DateTime<Utc>, out: &mut Vec<Output>) {
        let old = std::mem::replace(&mut self.catalog, catalog);
        for (mac, pos) in self.source_moves() {
            self.place_mobile_zones(&mac, pos);
        }
        let new = std::mem::replace(&mut self.catalog, Catalog::empty());
        self.reconcile(&old, &new, changes, now, out);
        Self::recount_all(&old.zones, &new, out);
        let before: HashSet<Mac> = old.mobile_by_source.keys().cloned().collect();
        let added = Self::added_sources(&before, &new);
        self.catalog = new;
        self.adopt_new_sources(added, now, out);
        self.forget_offline_unless_reported();
    }
}
