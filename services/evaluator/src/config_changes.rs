//! The evaluator's configuration follower: a task beside the evaluation loop that follows the
//! change log (woken by `config.changed`, and every second in case an announcement was
//! missed), reads from the store what the changes need, and hands the loop steps ready to
//! apply. Store reads and catalog builds happen here, so the loop goes on evaluating positions
//! meanwhile; it only puts each step in force.

use std::time::Duration;

use futures::StreamExt;
use tokio::sync::mpsc;
use zonecast_bus::{Message, Subscription};
use zonecast_model::{ConfigChanged, ConfigKind, DeviceTag, Mac, Settings, ZoneSpec};
use zonecast_runtime::Shutdown;
use zonecast_runtime::applier::{Follower, Pending, REPORT_EVERY};
use zonecast_runtime::ratelog::RateLimited;
use zonecast_store::{DeviceQuery, EvaluatorStore, StoreError};

use crate::catalog::{Catalog, Registered};

/// Changes up to a revision, read and ready to put in force.
pub(crate) struct Step {
    /// The revision in force once applied.
    pub revision: u64,
    /// What to put in force.
    pub update: Update,
}

/// What a step puts in force.
pub(crate) enum Update {
    /// The zones `touched` (only zone writes that name them): their current state, `changed`
    /// (a touched zone missing from it was deleted).
    Zones { changed: Vec<ZoneSpec>, touched: foldhash::HashSet<uuid::Uuid>, changes: Vec<ConfigChanged> },
    /// A whole new catalog: the changes were of several kinds, named no zone, or could not be
    /// followed (`changes` empty then).
    Catalog { catalog: Box<Catalog>, changes: Vec<ConfigChanged> },
    /// Only radius writes: the radii of the devices they name (`None`: the device's own radius
    /// was removed).
    Radii(Vec<(Mac, Option<f64>)>),
    /// Only settings (and radii): all of them, over the same zones.
    Parameters { settings: Settings, radii: Vec<(Mac, f64)> },
    /// Only device registry writes: the names and groups of the devices they name (`None`:
    /// no longer registered).
    Names(Vec<(Mac, Option<Registered>)>),
    /// Only MQTT connections or certificate profiles, which the evaluator does not hold.
    Nothing,
}

/// Reads the whole configuration into a catalog, with the device registry's names.
pub(crate) async fn load_catalog(store: &dyn EvaluatorStore) -> Result<Catalog, StoreError> {
    let zones = store.list_zones().await?;
    let settings = store.list_settings().await?;
    let radii = store.list_radii().await?;
    let mut catalog = Catalog::build(zones, &settings, radii);
    catalog.set_names(load_names(store).await?.into_iter().map(|(mac, entry)| (mac, Some(entry))));
    Ok(catalog)
}

/// What the evaluators keep of a registry entry.
fn registered(d: zonecast_model::Device) -> Registered {
    Registered { tag: DeviceTag { name: d.name, group: d.group }, offline_seconds: d.offline_seconds }
}

/// Registry pages read at once.
const NAMES_PAGE: usize = 1000;

/// The name and group of every registered device, a page at a time.
async fn load_names(store: &dyn EvaluatorStore) -> Result<Vec<(Mac, Registered)>, StoreError> {
    let mut names = Vec::new();
    let mut query = DeviceQuery { limit: NAMES_PAGE, ..DeviceQuery::default() };
    loop {
        let page = store.list_devices(&query).await?;
        let full = page.len() == NAMES_PAGE;
        query.after = page.last().map(|d| d.mac.clone());
        names.extend(page.into_iter().map(|d| (d.mac.clone(), registered(d))));
        if !full {
            return Ok(names);
        }
    }
}

/// Most registry entries read one by one after a burst of registry writes; beyond, the whole
/// registry is read again.
const NAMES_BY_ONE: usize = 100;

/// The registry entries of `macs` as they are now (`None`: no longer registered).
async fn find_names(store: &dyn EvaluatorStore, macs: Vec<Mac>) -> Result<Vec<(Mac, Option<Registered>)>, StoreError> {
    if macs.len() > NAMES_BY_ONE {
        let found: foldhash::HashMap<Mac, Registered> = load_names(store).await?.into_iter().collect();
        let mut all: Vec<(Mac, Option<Registered>)> =
            macs.into_iter().filter(|mac| !found.contains_key(mac)).map(|mac| (mac, None)).collect();
        all.extend(found.into_iter().map(|(mac, entry)| (mac, Some(entry))));
        return Ok(all);
    }
    let mut changed = Vec::with_capacity(macs.len());
    for mac in macs {
        let entry = match store.get_device(&mac).await {
            Ok(d) => Some(registered(d)),
            Err(StoreError::NotFound { .. }) => None,
            Err(e) => return Err(e),
        };
        changed.push((mac, entry));
    }
    Ok(changed)
}

/// The zones a burst touches, when it is only zone writes that name them: then only those are
/// read again. `None` when the whole catalog must be (a change of another kind in the burst, a
/// change that names no zone or one that is not a zone ID).
fn touched_zones(changes: &[ConfigChanged]) -> Option<foldhash::HashSet<uuid::Uuid>> {
    let mut touched = foldhash::HashSet::default();
    for change in changes {
        if change.kind != ConfigKind::Zones || change.ids.is_empty() {
            return None;
        }
        for id in &change.ids {
            touched.insert(id.parse().ok()?);
        }
    }
    Some(touched)
}

/// The devices a burst changes the radius of, when it is only radius writes that name them:
/// then only those radii are read again and only those devices reconciled. `None` when all
/// settings and radii must be (a settings change in the burst, a change that names no device
/// or one that is not a MAC).
fn touched_radii(changes: &[ConfigChanged]) -> Option<Vec<Mac>> {
    let mut touched = Vec::new();
    for change in changes {
        if change.kind != ConfigKind::Radii || change.ids.is_empty() {
            return None;
        }
        for mac in &change.ids {
            touched.push(mac.parse().ok()?);
        }
    }
    touched.sort_unstable();
    touched.dedup();
    Some(touched)
}

/// Reads what a burst of changes needs: only the zones or radii it names where it can, all
/// settings and radii for a settings change, nothing for changes the evaluator does not hold,
/// everything when the burst mixes zones with other kinds.
async fn read(store: &dyn EvaluatorStore, changes: Vec<ConfigChanged>) -> Result<Update, StoreError> {
    let zones = changes.iter().any(|c| c.kind == ConfigKind::Zones);
    let parameters = changes.iter().any(|c| matches!(c.kind, ConfigKind::Settings | ConfigKind::Radii));
    let names = changes.iter().any(|c| c.kind == ConfigKind::Devices);
    if names && (zones || parameters) {
        return Ok(Update::Catalog { catalog: Box::new(load_catalog(store).await?), changes });
    }
    if names {
        let mut macs: Vec<Mac> = changes
            .iter()
            .filter(|c| c.kind == ConfigKind::Devices)
            .flat_map(|c| c.ids.iter().filter_map(|id| id.parse().ok()))
            .collect();
        macs.sort_unstable();
        macs.dedup();
        return Ok(Update::Names(find_names(store, macs).await?));
    }
    if zones {
        return Ok(match touched_zones(&changes) {
            Some(touched) => {
                let ids: Vec<uuid::Uuid> = touched.iter().copied().collect();
                Update::Zones { changed: store.find_zones(&ids).await?, touched, changes }
            }
            None => Update::Catalog { catalog: Box::new(load_catalog(store).await?), changes },
        });
    }
    if !parameters {
        return Ok(Update::Nothing);
    }
    Ok(match touched_radii(&changes) {
        Some(macs) => Update::Radii(store.find_radii(&macs).await?),
        None => Update::Parameters {
            settings: Settings::from_written(&store.list_settings().await?),
            radii: store.list_radii().await?,
        },
    })
}

/// The revision an announcement names; `None` (look at the log) for one that cannot be read.
fn announced(message: &Message) -> Option<u64> {
    serde_json::from_slice::<ConfigChanged>(&message.payload).ok().map(|c| c.revision)
}

/// Most queued announcements taken together with the one that woke the follower.
const MAX_COALESCED: usize = 10_000;

/// Follows the change log from `follower`'s revision until `shutdown`, sending each step read
/// to the loop. A step that cannot be read is tried again a second later (the follower stays
/// where it was), so a store outage delays changes but loses none.
pub(crate) fn spawn(
    store: std::sync::Arc<dyn EvaluatorStore>,
    mut announcements: Subscription,
    mut follower: Follower,
    shutdown: Shutdown,
) -> mpsc::Receiver<Step> {
    // One step ahead at most: while the loop applies one, the next burst accumulates in the
    // log and is read as one.
    let (tx, rx) = mpsc::channel(1);
    tokio::spawn(async move {
        let mut look = tokio::time::interval(REPORT_EVERY);
        look.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut fail_log = RateLimited::new(Duration::from_secs(10));
        loop {
            let announced = tokio::select! {
                () = shutdown.cancelled() => break,
                Some(msg) = announcements.next() => {
                    let mut announced = announced(&msg);
                    let coalesced = zonecast_bus::take_ready(&mut announcements, MAX_COALESCED, |msg| {
                        announced = announced.zip(self::announced(&msg)).map(|(a, b)| a.max(b));
                    });
                    metrics::counter!("zonecast_evaluator_changes_coalesced_total").increment(coalesced as u64);
                    announced
                }
                _ = look.tick() => None,
            };
            let step = match follower.pending(announced).await {
                Ok(Pending::Nothing) => continue,
                Ok(Pending::Changes(changes)) => {
                    let revision = changes.last().map_or(follower.applied(), |c| c.revision);
                    read(store.as_ref(), changes).await.map(|update| Step { revision, update })
                }
                Ok(Pending::Everything { revision }) => load_catalog(store.as_ref()).await.map(|catalog| Step {
                    revision,
                    update: Update::Catalog { catalog: Box::new(catalog), changes: Vec::new() },
                }),
                Err(e) => Err(e),
            };
            match step {
                Ok(step) => {
                    let revision = step.revision;
                    if tx.send(step).await.is_err() {
                        break;
                    }
                    follower.advance(revision);
                }
                Err(e) => {
                    metrics::counter!("zonecast_evaluator_config_read_failures_total").increment(1);
                    if let Some(held_back) = fail_log.allow() {
                        tracing::warn!(error = %e, held_back, "configuration changes not read; trying again");
                    }
                }
            }
        }
    });
    rx
}
