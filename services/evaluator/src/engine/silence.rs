//! Silent devices: a device that sends nothing for DeviceOfflineSeconds is reported offline
//! (`DEVICE_OFFLINE`, found by the clock), and online again (`DEVICE_ONLINE`) with its next
//! position. Independent of DeviceTimeoutSeconds, which makes a silent device leave its zones:
//! with both set, each fires at its own time, and a timed-out device is kept until it is
//! reported offline.

use chrono::{DateTime, Duration, Utc};
use zonecast_geometry::Vec3;
use zonecast_model::{Content, DevicePresence, IdSource, Mac};

use super::stamp::Stamp;
use super::state::At;
use super::{Engine, Output};

impl Engine {
    /// Reports every device in `silent` offline: the device and the Timestamp of its last
    /// position, sorted by MAC.
    pub(super) fn offline(
        &mut self,
        silent: Vec<(Mac, DateTime<Utc>)>,
        after: Duration,
        now: DateTime<Utc>,
        out: &mut Vec<Output>,
    ) {
        for (mac, last_seen) in silent {
            let Some(device) = self.devices.get_mut(&mac) else { continue };
            device.offline = true;
            let at = At { ts: last_seen + after, now };
            let presence = DevicePresence { last_seen, silent_seconds: seconds(after), position: device.pos };
            // Keyed by the device and the instant: the same silence reported again after a
            // restart gets the same EventID.
            let mut ids = IdSource::keyed(at.ts, &[mac.as_str().as_bytes(), b"offline"]);
            let mut stamp = Stamp { ids: &mut ids, site_id: self.site_id };
            out.push(Output::Publish(stamp.event(&mac, at, Content::DeviceOffline(presence))));
        }
    }

    /// `mac`, reported offline and silent since `last_seen`, sent a position at `at.ts`.
    pub(super) fn online(&mut self, mac: &Mac, last_seen: DateTime<Utc>, pos: Vec3, at: At, out: &mut Vec<Output>) {
        let presence = DevicePresence { last_seen, silent_seconds: seconds(at.ts - last_seen), position: Some(pos) };
        let mut stamp = Stamp { ids: &mut self.ids, site_id: self.site_id };
        out.push(Output::Publish(stamp.event(mac, at, Content::DeviceOnline(presence))));
    }
}

/// `d` in seconds, to the millisecond.
pub(super) fn seconds(d: Duration) -> f64 {
    d.num_milliseconds() as f64 / 1000.0
}
