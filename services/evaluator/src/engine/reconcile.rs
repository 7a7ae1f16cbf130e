//! Reconciliation: the exits a configuration change implies for devices inside zones (deleted,
//! deactivated, closed, excluded, reset or moved away), and the restore of collisions recorded
//! before a restart.

use chrono::{DateTime, Utc};
use foldhash::{HashMap, HashSet};
use uuid::Uuid;
use zonecast_model::{Collision, ConfigChanged, ConfigOperation, ExitReason, Mac};

use super::state::{At, Device, Phase};
use super::transition::Verdict;
use super::{Engine, Output};
use crate::catalog::{Catalog, Zone};

/// The configuration a change replaced, as far as reconciliation needs it.
pub(super) enum Before<'a> {
    /// The whole catalog in force before.
    Whole(&'a Catalog),
    /// A patch: the `former` state of the `touched` zones (none for a zone it created); every
    /// other zone is as in the new catalog, and only devices in touched zones are reconciled.
    Patch { touched: &'a HashSet<Uuid>, former: &'a HashMap<Uuid, Zone> },
    /// No zone changed; only the devices named are reconciled (a change that concerns them
    /// alone, such as their radii).
    Devices(&'a [Mac]),
}

impl<'a> Before<'a> {
    /// Zone `id` as it was, where `new` is the catalog now.
    fn zone(&self, new: &'a Catalog, id: Uuid) -> Option<&'a Zone> {
        match self {
            Self::Whole(old) => old.by_id.get(&id).map(|&i| &old.zones[i]),
            Self::Patch { touched, former } if touched.contains(&id) => former.get(&id),
            Self::Patch { .. } | Self::Devices(_) => new.by_id.get(&id).map(|&i| &new.zones[i]),
        }
    }
}

impl Engine {
    /// Restores collisions recorded before a restart (only owned devices): they count as inside,
    /// so a device that stayed inside produces no second enter. Emits the exits owed for
    /// changes made while this evaluator was away.
    pub fn restore(&mut self, collisions: Vec<Collision>, now: DateTime<Utc>, out: &mut Vec<Output>) {
        for c in collisions.into_iter().filter(|c| self.ownership.owns(&c.mac)) {
            let Some(&zone_index) = self.catalog.by_id.get(&c.zone_id) else {
                out.push(Output::Exited { zone: c.zone_id, mac: c.mac });
                continue;
            };
            let alarm = self.catalog.alarm_kind(self.catalog.zones[zone_index].spec.alert_level);
            let device = self.devices.entry(c.mac.clone()).or_insert_with(|| Device::new(now));
            device.zones.push((
                c.zone_id,
                Phase::Inside {
                    collision: c.collision_id,
                    entry_time: c.entry_time,
                    alarm,
                    exit_since: None,
                    dwell_reported: c.dwell_reported,
                },
            ));
            self.occupants.entry(c.zone_id).or_default().insert(c.mac);
        }
        let unchanged = std::mem::replace(&mut self.catalog, Catalog::empty());
        self.reconcile(&unchanged, &unchanged, &[], now, out);
        // Counts may have changed while this evaluator was away.
        Self::recount_all([], &unchanged, out);
        self.catalog = unchanged;
    }

    /// Exits for devices in zones that `new` deletes, deactivates, closes, excludes them from,
    /// resets, or moves away from them, for every device. Runs with `self.catalog` taken out, so
    /// it is passed in.
    pub(super) fn reconcile(
        &mut self,
        old: &Catalog,
        new: &Catalog,
        changes: &[ConfigChanged],
        now: DateTime<Utc>,
        out: &mut Vec<Output>,
    ) {
        self.reconcile_from(Before::Whole(old), new, changes, now, out);
    }

    /// [`Engine::reconcile`] from what `before` tells of the configuration replaced.
    pub(super) fn reconcile_from(
        &mut self,
        before: Before<'_>,
        new: &Catalog,
        changes: &[ConfigChanged],
        now: DateTime<Utc>,
        out: &mut Vec<Output>,
    ) {
        let reset: HashSet<Uuid> = changes
            .iter()
            .filter(|c| c.operation == Some(ConfigOperation::Reset))
            .flat_map(|c| c.ids.iter().filter_map(|s| s.parse().ok()))
            .collect();
        fn zones_of<'a>((m, d): (&'a Mac, &'a Device)) -> impl Iterator<Item = (Mac, Uuid)> + 'a {
            d.zones.iter().map(move |(id, _)| (m.clone(), *id))
        }
        let mut held: Vec<(Mac, Uuid)> = match before {
            Before::Whole(_) => self.devices.iter().flat_map(zones_of).collect(),
            Before::Devices(macs) => {
                macs.iter().filter_map(|m| self.devices.get_key_value(m)).flat_map(zones_of).collect()
            }
            Before::Patch { touched, .. } => touched
                .iter()
                .chain(reset.iter().filter(|id| !touched.contains(*id)))
                .flat_map(|id| self.occupants.get(id).into_iter().flatten().map(|m| (m.clone(), *id)))
                .filter(|(m, id)| self.devices.get(m).is_some_and(|d| d.zones.iter().any(|(z, _)| z == id)))
                .collect(),
        };
        held.sort_unstable();
        held.dedup();
        for (mac, id) in held {
            let reason = if reset.contains(&id) && new.by_id.contains_key(&id) {
                Some(ExitReason::Reset)
            } else {
                self.reason_to_leave(before.zone(new, id), new, &mac, id, now)
            };
            let Some(reason) = reason else { continue };
            let zone = match new.by_id.get(&id) {
                Some(&zone_index) => new.zones[zone_index].clone(),
                None => match before.zone(new, id) {
                    Some(former) => former.clone(),
                    None => {
                        self.forget(&mac, id);
                        out.push(Output::Exited { zone: id, mac });
                        continue;
                    }
                },
            };
            self.exit_zone(&mac, &zone, reason, At { ts: now, now }, out);
        }
    }

    /// Why `mac` must leave zone `id` (formerly `old`) now that `new` is in force, if it must.
    fn reason_to_leave(
        &self,
        old: Option<&Zone>,
        new: &Catalog,
        mac: &Mac,
        id: Uuid,
        now: DateTime<Utc>,
    ) -> Option<ExitReason> {
        let Some(&zone_index) = new.by_id.get(&id) else { return Some(ExitReason::Deleted) };
        let zone = &new.zones[zone_index];
        let pos = self.devices.get(mac).and_then(|d| d.pos);
        let limit = new.radius(mac) + new.exit_tolerance;
        match self.verdict(zone, mac, pos, now, limit, None) {
            Verdict::Gone(r) => Some(r),
            Verdict::Distance(d) => {
                let moved = old.is_none_or(|old| {
                    let o = &old.spec;
                    o.geometry_type != zone.spec.geometry_type
                        || o.geometry_data != zone.spec.geometry_data
                        || o.mobile_origin_source != zone.spec.mobile_origin_source
                });
                (moved && pos.is_some() && d > limit).then_some(ExitReason::Geometry)
            }
        }
    }
}
