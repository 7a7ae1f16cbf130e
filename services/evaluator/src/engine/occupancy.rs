//! Which zones with occupancy limits to count: the zone of every entry and exit, every zone
//! with limits after a configuration change or a restart, and a zone whose limits were taken
//! away (its state is then forgotten). The counting itself is done over the store's collisions,
//! which hold every evaluator's devices ([`crate::occupancy`]).

use zonecast_store::OccupancyLimits;

use super::{Engine, Output};
use crate::catalog::{Catalog, Zone};
use crate::occupancy::Recount;

/// The count of `zone` to ask for, if it has limits.
pub(super) fn recount(zone: &Zone) -> Option<Recount> {
    let spec = &zone.spec;
    (spec.max_occupancy.is_some() || spec.min_occupancy.is_some()).then(|| of(zone))
}

/// The count of `zone` with its limits as they are (none, to forget its state).
fn of(zone: &Zone) -> Recount {
    let spec = &zone.spec;
    Recount {
        limits: OccupancyLimits { zone: spec.id, max: spec.max_occupancy, min: spec.min_occupancy },
        name: spec.name.clone(),
        alert_level: spec.alert_level,
    }
}

impl Engine {
    /// Asks for the count of every zone of `catalog` with limits, and of every zone of `old`
    /// that had limits and is still there without them.
    pub(super) fn recount_all<'a>(old: impl IntoIterator<Item = &'a Zone>, catalog: &Catalog, out: &mut Vec<Output>) {
        out.extend(catalog.zones.iter().filter_map(recount).map(Output::Recount));
        for zone in old.into_iter().filter(|z| recount(z).is_some()) {
            if let Some(&i) = catalog.by_id.get(&zone.spec.id)
                && recount(&catalog.zones[i]).is_none()
            {
                out.push(Output::Recount(of(&catalog.zones[i])));
            }
        }
    }
}
