//! Dwell limits: a device that stays in a zone longer than the zone's `MaxDwellSeconds` raises
//! one `ZONE_DWELL_EXCEEDED` for that stay, found by the clock. The stay's collision record
//! says it was raised, so an evaluator that restarts or takes the device's partition over does
//! not raise it again; the event's IDs are keyed on the stay, so a copy raised before the
//! record was written is recognised as the same event.

use chrono::{DateTime, Duration, Utc};
use zonecast_model::{ActionTrigger, Collision, Content, IdSource, Mac, ZoneDwell};

use super::actions::{self, Trigger};
use super::silence::seconds;
use super::stamp::Stamp;
use super::state::{At, Phase};
use super::{Engine, Output};

/// A stay past its zone's limit: the device, the zone's index and the instant it passed it.
type Overdue = (Mac, usize, DateTime<Utc>);

impl Engine {
    /// The stays past their zone's MaxDwellSeconds at `now` whose event is not raised yet, in
    /// (zone, MAC) order.
    fn overdue_stays(&self, now: DateTime<Utc>) -> Vec<Overdue> {
        let mut overdue = Vec::new();
        for (id, macs) in &self.occupants {
            let Some(&zone_index) = self.catalog.by_id.get(id) else { continue };
            let Some(limit) = self.catalog.zones[zone_index].spec.max_dwell_seconds else { continue };
            let limit = duration(limit);
            for mac in macs {
                let phase = self.devices.get(mac).and_then(|d| d.zones.iter().find(|(z, _)| z == id));
                if let Some((_, Phase::Inside { entry_time, dwell_reported: false, .. })) = phase
                    && now - *entry_time >= limit
                {
                    overdue.push((mac.clone(), zone_index, *entry_time + limit));
                }
            }
        }
        overdue.sort_unstable_by(|a, b| (a.1, &a.0).cmp(&(b.1, &b.0)));
        overdue
    }

    /// Raises `ZONE_DWELL_EXCEEDED` for every stay past its zone's limit at `now`.
    pub(super) fn dwell_limits(&mut self, now: DateTime<Utc>, out: &mut Vec<Output>) {
        for (mac, zone_index, passed) in self.overdue_stays(now) {
            self.dwell_exceeded(&mac, zone_index, At { ts: passed, now }, out);
        }
    }

    /// Raises the dwell event of the stay of `mac` in the zone at `zone_index` if the stay,
    /// ending at `at.ts`, passed the zone's limit and its event is not raised yet.
    pub(super) fn dwell_limit_before(&mut self, mac: &Mac, zone_index: usize, at: At, out: &mut Vec<Output>) {
        let zone = &self.catalog.zones[zone_index];
        let Some(limit) = zone.spec.max_dwell_seconds.map(duration) else { return };
        let phase = self.devices.get(mac).and_then(|d| d.zones.iter().find(|(id, _)| *id == zone.spec.id));
        if let Some((_, Phase::Inside { entry_time, dwell_reported: false, .. })) = phase
            && at.ts - *entry_time >= limit
        {
            let passed = *entry_time + limit;
            self.dwell_exceeded(mac, zone_index, At { ts: passed, now: at.now }, out);
        }
    }

    /// The stay of `mac` in the zone at `zone_index` passed the zone's limit at `at.ts`: the
    /// event, the zone's dwell actions, and the stay's record marked.
    fn dwell_exceeded(&mut self, mac: &Mac, zone_index: usize, at: At, out: &mut Vec<Output>) {
        let zone = &self.catalog.zones[zone_index];
        let Some(device) = self.devices.get_mut(mac) else { return };
        let Some((_, Phase::Inside { collision, entry_time, alarm, dwell_reported, .. })) =
            device.zones.iter_mut().find(|(id, _)| *id == zone.spec.id)
        else {
            return;
        };
        *dwell_reported = true;
        let (collision, entry_time, alarm) = (*collision, *entry_time, *alarm);
        let ids = IdSource::keyed(at.ts, &[mac.as_str().as_bytes(), zone.spec.id.as_bytes(), collision.as_bytes()]);
        let own = std::mem::replace(&mut self.ids, ids);
        let content = ZoneDwell {
            enter: super::events::stay(zone, collision, entry_time, alarm, device.pos),
            dwell_seconds: seconds(at.now - entry_time),
            max_dwell_seconds: zone.spec.max_dwell_seconds.unwrap_or_default(),
        };
        let mut stamp = Stamp { ids: &mut self.ids, site_id: self.site_id, catalog: &self.catalog };
        let event = stamp.event(mac, at, Content::ZoneDwellExceeded(content));
        out.push(Output::Publish(event.clone()));
        let zone_id = zone.spec.id;
        let record = Collision { zone_id, mac: mac.clone(), collision_id: collision, entry_time, dwell_reported: true };
        out.push(Output::Entered(record));
        let trigger = Trigger { zone, mac, event: &event, collision, when: ActionTrigger::Dwell, at };
        actions::run_actions(&trigger, false, &mut stamp, out);
        self.ids = own;
    }
}

/// A MaxDwellSeconds as a duration, to the millisecond.
fn duration(seconds: f64) -> Duration {
    Duration::milliseconds((seconds * 1000.0).round() as i64)
}
