//! Occupancy limits counted over every evaluator: where each zone with a limit stands, changed
//! only by the transitions of its site-wide count, with an outbox flag so that the event of
//! each change is stored in the event journal at least once.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::{Result, StoreError};

/// The limits of one zone as the evaluator asking has them (both `None`: the zone has no
/// limit any more, and its state is forgotten).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OccupancyLimits {
    /// The zone.
    pub zone: Uuid,
    /// MaxOccupancy.
    pub max: Option<u64>,
    /// MinOccupancy.
    pub min: Option<u64>,
}

/// Where a zone's count stands against its limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OccupancyState {
    /// Within both limits.
    Within,
    /// Above MaxOccupancy.
    Above,
    /// Below MinOccupancy.
    Below,
}

impl OccupancyState {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Within => "within",
            Self::Above => "above",
            Self::Below => "below",
        }
    }

    pub(crate) fn parse(s: &str) -> Result<Self> {
        match s {
            "within" => Ok(Self::Within),
            "above" => Ok(Self::Above),
            "below" => Ok(Self::Below),
            other => Err(StoreError::Backend(format!("stored occupancy state '{other}'"))),
        }
    }
}

/// A change of a zone's state whose event is not stored yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OccupancyChange {
    /// The zone.
    pub zone: Uuid,
    /// Where it stands now.
    pub state: OccupancyState,
    /// The count that made the change.
    pub count: u64,
    /// How many changes the zone's state has had: with the zone, the change's identity.
    pub generation: u64,
    /// When the change was found.
    pub changed_at: DateTime<Utc>,
    /// Whether this count found it: otherwise an earlier count did, whose evaluator may be
    /// storing its event now.
    pub fresh: bool,
}

/// A zone's stored state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stored {
    pub(crate) state: OccupancyState,
    pub(crate) count: u64,
    pub(crate) generation: u64,
    pub(crate) changed_at: DateTime<Utc>,
    pub(crate) published: bool,
}

impl Stored {
    /// The change this row records, when its event is not stored yet; `fresh` when the count
    /// under way found it.
    pub(crate) fn unpublished(&self, zone: Uuid, fresh: bool) -> Option<OccupancyChange> {
        (!self.published).then_some(OccupancyChange {
            zone,
            state: self.state,
            count: self.count,
            generation: self.generation,
            changed_at: self.changed_at,
            fresh,
        })
    }
}

/// The state a zone moves to from `stored` (none: the zone was not counted before) with
/// `count` inside: above MaxOccupancy is above; below MinOccupancy is below once the count had
/// reached it (a zone first counted below its minimum is below without a change to report);
/// anything else is within. The row to store when it changed, or when there was none.
pub(crate) fn next(stored: Option<&Stored>, limits: OccupancyLimits, count: u64, now: DateTime<Utc>) -> Option<Stored> {
    let state = if limits.max.is_some_and(|max| count > max) {
        OccupancyState::Above
    } else if limits.min.is_some_and(|min| count < min) {
        OccupancyState::Below
    } else {
        OccupancyState::Within
    };
    match stored {
        Some(s) if s.state == state => None,
        Some(s) => Some(Stored { state, count, generation: s.generation + 1, changed_at: now, published: false }),
        None => {
            let silent = state == OccupancyState::Below;
            Some(Stored {
                state,
                count,
                generation: u64::from(!silent && state != OccupancyState::Within),
                changed_at: now,
                published: silent || state == OccupancyState::Within,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn limits(max: Option<u64>, min: Option<u64>) -> OccupancyLimits {
        OccupancyLimits { zone: Uuid::nil(), max, min }
    }

    #[test]
    fn a_zone_changes_state_only_when_its_count_crosses_a_limit() {
        let now = Utc::now();
        let cap = limits(Some(2), None);
        let first = next(None, cap, 2, now).unwrap();
        assert_eq!((first.state, first.published), (OccupancyState::Within, true), "nothing to report");
        assert!(next(Some(&first), cap, 1, now).is_none());
        let above = next(Some(&first), cap, 3, now).unwrap();
        assert_eq!((above.state, above.generation, above.published), (OccupancyState::Above, 1, false));
        assert!(next(Some(&above), cap, 4, now).is_none(), "still above: no second report");
        let back = next(Some(&above), cap, 2, now).unwrap();
        assert_eq!((back.state, back.generation), (OccupancyState::Within, 2));
        // A zone first counted above its limit reports it.
        assert_eq!(
            next(None, cap, 5, now).unwrap().unpublished(Uuid::nil(), true).unwrap().state,
            OccupancyState::Above
        );
    }

    #[test]
    fn a_muster_point_reports_reaching_its_head_count_and_losing_it() {
        let now = Utc::now();
        let muster = limits(None, Some(3));
        let empty = next(None, muster, 0, now).unwrap();
        assert_eq!((empty.state, empty.published), (OccupancyState::Below, true), "below from the start: silent");
        let reached = next(Some(&empty), muster, 3, now).unwrap();
        assert_eq!((reached.state, reached.published), (OccupancyState::Within, false));
        let lost = next(Some(&reached), muster, 2, now).unwrap();
        assert_eq!((lost.state, lost.generation, lost.published), (OccupancyState::Below, 2, false));
    }
}
