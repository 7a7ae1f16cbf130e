//! Event building: the `ZONE_ENTER` and `ZONE_EXIT` of a transition, with the collision record
//! they start or end, stamped ([`super::stamp::Stamp`]).

use zonecast_model::{
    ActionTrigger, AlarmCleared, AlarmKind, Collision, Content, EventType, ExitReason, Mac, ZoneAction, ZoneEnter,
    ZoneExit,
};

use super::actions::{self, Trigger};
use super::occupancy;
use super::stamp::Stamp;
use super::state::{At, Phase};
use super::{Engine, Output};
use crate::catalog::Zone;

impl Engine {
    /// Entry of `mac` into the zone at `zone_index`: the event, the collision record, alarms
    /// and actions.
    pub(super) fn enter(&mut self, mac: &Mac, zone_index: usize, at: At, out: &mut Vec<Output>) {
        let zone = &self.catalog.zones[zone_index];
        let collision = self.ids.next(at.now);
        let alarm = self.catalog.alarm_kind(zone.spec.alert_level);
        let position = self.devices.get(mac).and_then(|d| d.pos);
        let content = stay(zone, collision, at.ts, alarm, position);
        let mut stamp = Stamp { ids: &mut self.ids, site_id: self.site_id, catalog: &self.catalog };
        let event = stamp.event(mac, at, Content::ZoneEnter(content));
        out.push(Output::Publish(event.clone()));
        out.push(Output::Entered(Collision {
            zone_id: zone.spec.id,
            mac: mac.clone(),
            collision_id: collision,
            entry_time: at.ts,
            dwell_reported: false,
        }));
        out.extend(occupancy::recount(zone).map(Output::Recount));
        let trigger = Trigger { zone, mac, event: &event, collision, when: ActionTrigger::Enter, at };
        actions::alarms_and_actions(&trigger, alarm, &mut stamp, out);
        if let Some(device) = self.devices.get_mut(mac) {
            let inside = Phase::Inside { collision, entry_time: at.ts, alarm, exit_since: None, dwell_reported: false };
            device.zones.push((zone.spec.id, inside));
        }
        self.occupants.entry(zone.spec.id).or_default().insert(mac.clone());
    }

    /// Exit of `mac` from the zone at `zone_index` of the current catalog; a stay that passed the
    /// zone's dwell limit before the clock noticed raises its `ZONE_DWELL_EXCEEDED` first.
    pub(super) fn exit(&mut self, mac: &Mac, zone_index: usize, reason: ExitReason, at: At, out: &mut Vec<Output>) {
        self.dwell_limit_before(mac, zone_index, at, out);
        let zone = self.catalog.zones[zone_index].clone();
        self.exit_zone(mac, &zone, reason, at, out);
    }

    /// Exit of `mac` from `zone` (which may be gone from the catalog already): the event, the
    /// end of the collision record, an `ALARM_CLEARED` for each alarm the stay raised, and the
    /// zone's exit actions. A device only entering the zone leaves it without an event.
    pub(super) fn exit_zone(&mut self, mac: &Mac, zone: &Zone, reason: ExitReason, at: At, out: &mut Vec<Output>) {
        let Some(device) = self.devices.get(mac) else { return };
        let Some((_, Phase::Inside { collision, entry_time, alarm, dwell_reported, .. })) =
            device.zones.iter().find(|(id, _)| *id == zone.spec.id).cloned()
        else {
            self.forget(mac, zone.spec.id);
            return;
        };
        let content =
            ZoneExit { enter: stay(zone, collision, entry_time, alarm, device.pos), exit_time: at.ts, reason };
        let mut stamp = Stamp { ids: &mut self.ids, site_id: self.site_id, catalog: &self.catalog };
        let event = stamp.event(mac, at, Content::ZoneExit(content));
        out.push(Output::Publish(event.clone()));
        out.push(Output::Exited { zone: zone.spec.id, mac: mac.clone() });
        out.extend(occupancy::recount(zone).map(Output::Recount));
        for kind in raised_by_stay(zone, alarm, dwell_reported) {
            let content = AlarmCleared {
                kind,
                zone_id: Some(zone.spec.id),
                zone_name: Some(zone.spec.name.clone()),
                collision_id: Some(collision),
            };
            out.push(Output::Publish(stamp.event(mac, at, Content::AlarmCleared(content))));
        }
        let trigger = Trigger { zone, mac, event: &event, collision, when: ActionTrigger::Exit, at };
        actions::run_actions(&trigger, false, &mut stamp, out);
        self.forget(mac, zone.spec.id);
    }
}

/// The types of the alarms a stay in `zone` may have raised, whose condition (the device
/// inside) its exit ends: the entry's alarm kind, the zone's device alarm actions, and the
/// dwell limit if the stay passed it.
fn raised_by_stay(zone: &Zone, alarm: AlarmKind, dwell_reported: bool) -> Vec<EventType> {
    let device_action = zone.spec.zone_actions.iter().any(|a| matches!(a, ZoneAction::DeviceAlarm { .. }));
    let mut kinds = Vec::new();
    if alarm == AlarmKind::Site {
        kinds.push(EventType::SiteAlarm);
    }
    if alarm == AlarmKind::Device || device_action {
        kinds.push(EventType::DeviceAlarm);
    }
    if dwell_reported {
        kinds.push(EventType::ZoneDwellExceeded);
    }
    kinds
}

/// The fields of the `ZONE_ENTER` of a stay in `zone`, which its exit and dwell events repeat;
/// `position` is the device's last known one.
pub(super) fn stay(
    zone: &Zone,
    collision: uuid::Uuid,
    entry_time: chrono::DateTime<chrono::Utc>,
    alarm: zonecast_model::AlarmKind,
    position: Option<zonecast_geometry::Vec3>,
) -> ZoneEnter {
    ZoneEnter {
        zone_id: zone.spec.id,
        zone_name: zone.spec.name.clone(),
        alert_level: zone.spec.alert_level,
        alarm,
        collision_id: collision,
        entry_time,
        position,
    }
}
