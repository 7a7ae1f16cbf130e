//! Silent devices: a device that sends nothing for DeviceOfflineSeconds is reported offline
//! (`DEVICE_OFFLINE`, found by the clock), and online again (`DEVICE_ONLINE`) with its next
//! position. Independent of DeviceTimeoutSeconds, which makes a silent device leave its zones:
//! with both set, each fires at its own time, and a timed-out device is kept until it is
//! reported offline.

use std::collections::HashMap;

use chrono::{DateTime, Duration, Utc};
use zonecast_geometry::Vec3;
use zonecast_model::{AlarmCleared, Content, DevicePresence, EventType, IdSource, Mac, Presence};

use super::stamp::Stamp;
use super::state::{At, Device};
use super::{Engine, Output};

impl Engine {
    /// Reports every device in `silent` offline: the device, when its silence began and how
    /// long it may stay silent, sorted by MAC.
    pub(super) fn offline(
        &mut self,
        silent: Vec<(Mac, DateTime<Utc>, Duration)>,
        now: DateTime<Utc>,
        out: &mut Vec<Output>,
    ) {
        for (mac, silent_from, after) in silent {
            let Some(device) = self.devices.get_mut(&mac) else { continue };
            device.offline = true;
            let last_seen = device.last_seen();
            let at = At { ts: silent_from + after, now };
            let presence = DevicePresence { last_seen, silent_seconds: seconds(after), position: device.pos };
            // Keyed by the device and the Timestamp last recorded for it: the same silence
            // reported again by an evaluator that restarted, or took the device's partition
            // over, gets the same EventID.
            let key = device.noted.unwrap_or(last_seen);
            let mut ids = IdSource::keyed(key, &[mac.as_str().as_bytes(), b"offline"]);
            let mut stamp = Stamp { ids: &mut ids, site_id: self.site_id, catalog: &self.catalog };
            out.push(Output::Publish(stamp.event(&mac, at, Content::DeviceOffline(presence))));
            device.noted = Some(last_seen);
            out.push(Output::Presence(Presence { mac, last_seen, offline: true }));
        }
    }

    /// `mac`, reported offline and silent since `last_seen`, sent a position at `at.ts`: it is
    /// online, and its `DEVICE_OFFLINE` alarm's condition cleared.
    pub(super) fn online(&mut self, mac: &Mac, last_seen: DateTime<Utc>, pos: Vec3, at: At, out: &mut Vec<Output>) {
        let presence = DevicePresence { last_seen, silent_seconds: seconds(at.ts - last_seen), position: Some(pos) };
        let mut stamp = Stamp { ids: &mut self.ids, site_id: self.site_id, catalog: &self.catalog };
        out.push(Output::Publish(stamp.event(mac, at, Content::DeviceOnline(presence))));
        let cleared =
            AlarmCleared { kind: EventType::DeviceOffline, zone_id: None, zone_name: None, collision_id: None };
        out.push(Output::Publish(stamp.event(mac, at, Content::AlarmCleared(cleared))));
    }
}

impl Engine {
    /// Puts the device registry's entries of the devices `changed` names in force at `now`
    /// (`None`: no longer registered): the names and groups the events from now on carry, and
    /// each device's own offline time.
    pub fn apply_names(&mut self, changed: Vec<(Mac, Option<crate::catalog::Registered>)>, now: DateTime<Utc>) {
        let rules = self.offline_rules();
        self.catalog.set_names(changed);
        self.offline_rules_took_effect(&rules, now);
        self.forget_offline_unless_reported();
    }

    /// The offline rule of each known device, to tell after a change whose rule it changed.
    pub(super) fn offline_rules(&self) -> HashMap<Mac, Option<Duration>> {
        self.devices.keys().map(|mac| (mac.clone(), self.catalog.offline_after(mac))).collect()
    }

    /// Notes `now` as when the offline rule took effect for every device whose rule differs
    /// from the one it had in `before`: its silence counts from then at the earliest.
    pub(super) fn offline_rules_took_effect(&mut self, before: &HashMap<Mac, Option<Duration>>, now: DateTime<Utc>) {
        for (mac, device) in &mut self.devices {
            if before.get(mac).is_some_and(|rule| *rule != self.catalog.offline_after(mac)) {
                device.watched = now;
            }
        }
    }

    /// With offline reports turned off for a device (the site's and its own), who is offline
    /// is forgotten: a device that comes back while they are off, or after they are turned on
    /// again, is not reported online.
    pub(super) fn forget_offline_unless_reported(&mut self) {
        for (mac, device) in &mut self.devices {
            if device.offline && self.catalog.offline_after(mac).is_none() {
                device.offline = false;
            }
        }
    }

    /// Restores the presence recorded before a restart (only owned devices that may be
    /// reported offline): a device reported offline stays offline until its next
    /// position; the silence of the others counts from the Timestamp recorded plus the recording
    /// interval (the latest their last position can have been), so that none is reported
    /// offline early.
    pub fn restore_presence(&mut self, rows: Vec<Presence>, now: DateTime<Utc>) {
        if !self.catalog.reports_offline() {
            return;
        }
        for row in rows.into_iter().filter(|p| self.ownership.owns(&p.mac)) {
            if self.catalog.offline_after(&row.mac).is_none() {
                continue;
            }
            let interval = self.catalog.presence_interval(&row.mac);
            let device = self.devices.entry(row.mac).or_insert_with(|| Device::new(now));
            if device.order.is_some() {
                continue;
            }
            device.ts = (row.last_seen + interval).min(now);
            device.offline = row.offline;
            device.noted = Some(row.last_seen);
        }
    }
}

/// `d` in seconds, to the millisecond.
pub(super) fn seconds(d: Duration) -> f64 {
    d.num_milliseconds() as f64 / 1000.0
}
