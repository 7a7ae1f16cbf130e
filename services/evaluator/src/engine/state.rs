//! What the engine remembers per device: its last position and order, and its phase in each
//! zone it is entering or inside.

use chrono::{DateTime, Utc};
use uuid::Uuid;
use zonecast_geometry::Vec3;
use zonecast_model::AlarmKind;

/// Where a device stands with one zone (outside is having no phase).
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Phase {
    /// Inside, waiting for EntryDelayMs since `since`.
    Entering { since: DateTime<Utc> },
    /// Inside; `exit_since` when it has been beyond the tolerance since then; `dwell_reported`
    /// once the stay's `ZONE_DWELL_EXCEEDED` is raised.
    Inside {
        collision: Uuid,
        entry_time: DateTime<Utc>,
        alarm: AlarmKind,
        exit_since: Option<DateTime<Utc>>,
        dwell_reported: bool,
    },
}

/// One device's state.
#[derive(Debug, Clone)]
pub(super) struct Device {
    pub(super) pos: Option<Vec3>,
    pub(super) ts: DateTime<Utc>,
    /// Where the last position applied stands in the device's order; none yet for a device
    /// known only from its restored collisions.
    pub(super) order: Option<Order>,
    pub(super) zones: Vec<(Uuid, Phase)>,
    /// Reported offline (`DEVICE_OFFLINE`) and silent since.
    pub(super) offline: bool,
    /// The last Timestamp recorded for the device in the store (its presence).
    pub(super) noted: Option<DateTime<Utc>>,
    /// When the offline rule in force for it (DeviceOfflineSeconds, or its own) took effect:
    /// its silence counts from its last position or from then, whichever is later, so that a
    /// rule is never applied to the time before it existed.
    pub(super) watched: DateTime<Utc>,
}

impl Device {
    /// A device not seen yet, as of `ts`.
    pub(super) fn new(ts: DateTime<Utc>) -> Self {
        Self {
            pos: None,
            ts,
            order: None,
            zones: Vec::new(),
            offline: false,
            noted: None,
            watched: DateTime::<Utc>::MIN_UTC,
        }
    }

    /// Since when its silence counts: its last position, or when its offline rule took effect
    /// if that is later.
    pub(super) fn silent_since(&self) -> DateTime<Utc> {
        self.ts.max(self.watched)
    }

    /// The Timestamp of its last position: the one recorded for a device known only from the
    /// store since a restart.
    pub(super) fn last_seen(&self) -> DateTime<Utc> {
        match (self.order, self.noted) {
            (None, Some(noted)) => noted,
            _ => self.ts,
        }
    }
}

/// Where a position stands in its device's order: its Timestamp, then its `Sequence` when the
/// source sends one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Order {
    pub(super) ts: DateTime<Utc>,
    pub(super) sequence: Option<u64>,
}

impl Order {
    /// Whether a position at `self` comes before `last`, the last one applied: an earlier
    /// Timestamp, or the same Timestamp and a Sequence no higher than the last one's. The
    /// Sequence only breaks ties: tags wrap it (often at 8 or 16 bits) and restart it, while the
    /// Timestamp is when the position was measured.
    pub(super) fn before(self, last: Order) -> bool {
        match self.ts.cmp(&last.ts) {
            std::cmp::Ordering::Less => true,
            std::cmp::Ordering::Greater => false,
            std::cmp::Ordering::Equal => matches!((self.sequence, last.sequence), (Some(n), Some(l)) if n <= l),
        }
    }
}

/// The two times of a transition: `ts` when it happened (the position's Timestamp, the
/// moment a delay ran out, the time of a change) and `now`, the local clock, for
/// LocalTimestamp and new IDs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct At {
    pub(super) ts: DateTime<Utc>,
    pub(super) now: DateTime<Utc>,
}
