//! What an entry, exit or dwell sets off besides its own event: the site and device alarms of
//! the entry's alarm kind, and the zone's actions (info events, device alarms, http requests).

use uuid::Uuid;
use zonecast_model::{ActionTrigger, Alarm, AlarmKind, Content, Event, Mac, ZoneAction, ZoneInfo};

use super::Output;
use super::stamp::Stamp;
use super::state::At;
use crate::catalog::Zone;

/// An entry, exit or dwell, as its alarms and actions see it.
pub(super) struct Trigger<'a> {
    /// The zone entered or left.
    pub(super) zone: &'a Zone,
    /// The device.
    pub(super) mac: &'a Mac,
    /// The `ZONE_ENTER`, `ZONE_EXIT` or `ZONE_DWELL_EXCEEDED`.
    pub(super) event: &'a Event,
    /// The stay's CollisionID.
    pub(super) collision: Uuid,
    /// Entry, exit or dwell.
    pub(super) when: ActionTrigger,
    /// When.
    pub(super) at: At,
}

impl Trigger<'_> {
    fn alarm_content(&self) -> Alarm {
        Alarm {
            zone_id: self.zone.spec.id,
            zone_name: self.zone.spec.name.clone(),
            alert_level: self.zone.spec.alert_level,
            collision_id: self.collision,
        }
    }
}

/// The alarms of an entry of kind `alarm`, then the zone's entry actions.
pub(super) fn alarms_and_actions(t: &Trigger<'_>, alarm: AlarmKind, stamp: &mut Stamp<'_>, out: &mut Vec<Output>) {
    if alarm == AlarmKind::Site {
        let e = stamp.event(t.mac, t.at, Content::SiteAlarm(t.alarm_content()));
        out.push(Output::Publish(e));
    }
    let device_alarm = alarm == AlarmKind::Device;
    if device_alarm {
        self::device_alarm(t, stamp, out);
    }
    run_actions(t, device_alarm, stamp, out);
}

/// A device alarm: the command for the device's gateway and the `DEVICE_ALARM` event.
fn device_alarm(t: &Trigger<'_>, stamp: &mut Stamp<'_>, out: &mut Vec<Output>) {
    let content = t.alarm_content();
    let command = stamp.event(t.mac, t.at, Content::DeviceAlarmCommand(content.clone()));
    out.push(Output::Publish(command));
    let e = stamp.event(t.mac, t.at, Content::DeviceAlarm(content));
    out.push(Output::Publish(e));
}

/// Runs the zone's actions for `t.when`; `device_alarm_done` avoids a second device alarm
/// when the alarm kind already raised one for this entry.
pub(super) fn run_actions(t: &Trigger<'_>, device_alarm_done: bool, stamp: &mut Stamp<'_>, out: &mut Vec<Output>) {
    let zone = &t.zone.spec;
    for (index, action) in zone.zone_actions.iter().enumerate() {
        // `both` is entry and exit; a dwell runs only the actions bound to it.
        let fires =
            action.trigger() == t.when || (action.trigger() == ActionTrigger::Both && t.when != ActionTrigger::Dwell);
        if !fires {
            continue;
        }
        match action {
            ZoneAction::InfoEvent { message, .. } => {
                let message = message.clone().unwrap_or_else(|| format!("{} {}", t.event.kind(), zone.name));
                let content =
                    ZoneInfo { zone_id: zone.id, zone_name: zone.name.clone(), message, collision_id: t.collision };
                out.push(Output::Publish(stamp.event(t.mac, t.at, Content::ZoneInfo(content))));
            }
            ZoneAction::DeviceAlarm { .. } => {
                if !(device_alarm_done && t.when == ActionTrigger::Enter) {
                    device_alarm(t, stamp, out);
                }
            }
            ZoneAction::HttpRequest { uri, method, headers, secret, .. } => out.push(Output::Http {
                zone: zone.id,
                action: index,
                uri: uri.clone(),
                method: method.clone(),
                headers: headers.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                event: t.event.clone(),
                secret: secret.clone(),
            }),
        }
    }
}
