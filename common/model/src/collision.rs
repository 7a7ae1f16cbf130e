//! A current collision: one device inside one zone now, as the evaluator records it and the
//! API returns it in `CollidingDevices`.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::{CollidingDevice, Mac};

/// One device inside one zone now. Stores keep times to the microsecond.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Collision {
    /// The zone.
    pub zone_id: Uuid,
    /// The device.
    pub mac: Mac,
    /// Identity of this stay, from its `ZONE_ENTER` event.
    pub collision_id: Uuid,
    /// When the device entered.
    pub entry_time: DateTime<Utc>,
    /// Whether the stay's `ZONE_DWELL_EXCEEDED` has been raised: a restarted evaluator, or the
    /// one a partition moves to, raises none again.
    pub dwell_reported: bool,
}

impl From<Collision> for CollidingDevice {
    fn from(c: Collision) -> Self {
        Self { collision_id: c.collision_id, mac: c.mac, entry_time: c.entry_time }
    }
}

/// When a device last reported, as the evaluator records it (to within a minute, or a quarter
/// of DeviceOfflineSeconds), and whether it is reported offline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Presence {
    /// The device.
    pub mac: Mac,
    /// The Timestamp of a position of the device: its last, or one at most the recording
    /// interval before its last.
    pub last_seen: DateTime<Utc>,
    /// Whether its `DEVICE_OFFLINE` has been raised and no position came since.
    pub offline: bool,
}
