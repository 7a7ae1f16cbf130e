//! The transition step: how one device's phase in one zone moves on a verdict (may it be in
//! the zone at all, and how far from it is it), and which candidate zones a device is judged
//! against.

use chrono::{DateTime, Duration, Utc};
use uuid::Uuid;
use zonecast_geometry::Vec3;
use zonecast_model::{ExitReason, Mac};

use super::state::{At, Phase};
use super::{Engine, Output, sub};
use crate::catalog::Zone;

/// Whether a device may be in a zone, and if so how far from it it is.
pub(super) enum Verdict {
    /// It may not: the zone is not live for it, for this reason.
    Gone(ExitReason),
    /// Its distance from the zone (exact up to the limit it was asked with).
    Distance(f64),
}

impl Engine {
    /// Whether `mac` at `pos` may be in `zone` at all, and if so its distance from the zone:
    /// exact up to `limit` (the device radius plus the exit tolerance, the largest distance any
    /// rule compares with), and some value above it beyond. A static zone's distance may be
    /// `known` already, from the scene's query.
    pub(super) fn verdict(
        &self,
        zone: &Zone,
        mac: &Mac,
        pos: Option<Vec3>,
        ts: DateTime<Utc>,
        limit: f64,
        known: Option<f64>,
    ) -> Verdict {
        if !zone.spec.active {
            return Verdict::Gone(ExitReason::Deactivated);
        }
        if !zone.in_window(ts) {
            return Verdict::Gone(ExitReason::Window);
        }
        if !zone.spec.inclusion_policy.admits(&zone.spec.device_list, mac) {
            return Verdict::Gone(ExitReason::Excluded);
        }
        let Some(pos) = pos else { return Verdict::Distance(f64::INFINITY) };
        match &zone.spec.mobile_origin_source {
            None => Verdict::Distance(known.unwrap_or_else(|| zone.region.distance_within(pos, limit))),
            Some(source) => match self.sources.get(source) {
                Some(at) => Verdict::Distance(zone.region.distance_within(sub(pos, sub(*at, zone.centre)), limit)),
                None => Verdict::Gone(ExitReason::Geometry),
            },
        }
    }

    /// Evaluates `mac` against `only` one zone, or every candidate and every zone it is in.
    pub(super) fn evaluate(&mut self, mac: &Mac, only: Option<usize>, now: DateTime<Utc>, out: &mut Vec<Output>) {
        let Some(device) = self.devices.get(mac) else { return };
        let (pos, ts) = (device.pos, device.ts);
        let radius = self.catalog.radius(mac);
        let tolerance = self.catalog.exit_tolerance;
        let mut candidates = std::mem::take(&mut self.candidates);
        candidates.clear();
        match (only, pos) {
            (Some(zone_index), _) => candidates.push((zone_index, None)),
            (None, Some(p)) => {
                let margin = radius + tolerance;
                self.catalog.scene.static_distances(p, margin, &mut self.nearby);
                candidates.extend(self.nearby.iter().map(|(i, d)| (self.catalog.static_zone(i), Some(d))));
                self.movable.clear();
                self.catalog.scene.movable_candidates(p, margin, &mut self.movable);
                candidates.extend(self.movable.iter().map(|&k| (k as usize, None)));
                for (id, _) in &device.zones {
                    if let Some(&zone_index) = self.catalog.by_id.get(id) {
                        candidates.push((zone_index, None));
                    }
                }
                if !device.zones.is_empty() {
                    // A zone the device is in may be a candidate too: keep the entry with a distance.
                    candidates.sort_unstable_by_key(|&(zone_index, d)| (zone_index, d.is_none()));
                    candidates.dedup_by_key(|&mut (zone_index, _)| zone_index);
                }
            }
            (None, None) => {}
        }
        let at = At { ts, now };
        for &(zone_index, known) in &candidates {
            let zone = &self.catalog.zones[zone_index];
            if zone.spec.mobile_origin_source.as_ref() == Some(mac) {
                continue;
            }
            let verdict = self.verdict(zone, mac, pos, ts, radius + tolerance, known);
            self.step(mac, zone_index, verdict, radius, at, out);
        }
        self.candidates = candidates;
    }

    /// Moves the phase of `mac` in the zone at `zone_index` on `verdict`; `radius` is the device's.
    fn step(&mut self, mac: &Mac, zone_index: usize, verdict: Verdict, radius: f64, at: At, out: &mut Vec<Output>) {
        let zone_id = self.catalog.zones[zone_index].spec.id;
        let (entry_delay, exit_delay, tolerance) =
            (self.catalog.entry_delay, self.catalog.exit_delay, self.catalog.exit_tolerance);
        let ts = at.ts;
        let Some(device) = self.devices.get_mut(mac) else { return };
        let slot = device.zones.iter().position(|(id, _)| *id == zone_id);
        let phase = slot.map(|i| device.zones[i].1.clone());
        match (phase, verdict) {
            (None, Verdict::Gone(_)) => {}
            (Some(Phase::Entering { .. }), Verdict::Gone(_)) => self.forget(mac, zone_id),
            (Some(Phase::Inside { .. }), Verdict::Gone(reason)) => self.exit(mac, zone_index, reason, at, out),
            (None, Verdict::Distance(d)) if d <= radius => {
                if entry_delay <= Duration::zero() {
                    self.enter(mac, zone_index, at, out);
                } else {
                    device.zones.push((zone_id, Phase::Entering { since: ts }));
                    self.delayed = true;
                    self.occupants.entry(zone_id).or_default().insert(mac.clone());
                }
            }
            (None, Verdict::Distance(_)) => {}
            (Some(Phase::Entering { since }), Verdict::Distance(d)) if d <= radius => {
                if ts - since >= entry_delay {
                    self.forget(mac, zone_id);
                    self.enter(mac, zone_index, at, out);
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
                    self.exit(mac, zone_index, ExitReason::Position, at, out);
                } else if let Some(i) = slot
                    && let Phase::Inside { exit_since, .. } = &mut device.zones[i].1
                {
                    *exit_since = Some(since);
                    self.delayed = true;
                }
            }
        }
    }

    /// Drops the phase of `mac` in `zone`, without an event.
    pub(super) fn forget(&mut self, mac: &Mac, zone: Uuid) {
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
}
