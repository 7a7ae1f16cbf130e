//! The evaluator's I/O shell: its loop takes positions, configuration announcements and clock
//! ticks from the bus, feeds them to the [`Engine`], and publishes, logs, records and acts on
//! what the engine returns.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use futures::StreamExt;
use futures::stream::SelectAll;
use tokio::sync::mpsc;
use zonecast_bus::{Bus, Message, Subjects, Subscription};
use zonecast_model::{ConfigChanged, ConfigKind, Content, IdSource, Mac, PositionFix, Settings};
use zonecast_runtime::ratelog::RateLimited;
use zonecast_runtime::{Running, Shutdown, StartError};
use zonecast_store::EvaluatorStore;

use crate::catalog::Catalog;
pub use crate::engine::{Engine, Output};

use crate::{Deps, actions, collisions};

/// How often the clock fires delayed transitions, timeouts and window ends.
const TICK: Duration = Duration::from_millis(100);

/// Positions evaluated in one turn of the loop once the first is in, before the events they
/// caused are published.
const DRAIN: usize = 256;

async fn load_catalog(store: &dyn EvaluatorStore) -> Result<Catalog, zonecast_store::StoreError> {
    let zones = store.list_zones().await?;
    let settings = store.list_settings().await?;
    let radii = store.list_radii().await?;
    Ok(Catalog::build(zones, &settings, radii))
}

/// Logs the zones a catalog had to leave out.
fn log_skipped(catalog: &Catalog) {
    for s in &catalog.skipped {
        tracing::warn!(zone = %s.zone, error = %s.reason, "zone skipped: geometry does not validate");
    }
}

/// The settings in force and the device radii, for a change that touches no zone.
async fn load_parameters(
    store: &dyn EvaluatorStore,
) -> Result<(Settings, Vec<(Mac, f64)>), zonecast_store::StoreError> {
    Ok((Settings::from_written(&store.list_settings().await?), store.list_radii().await?))
}

/// The change a `config.changed` message announces. One that cannot be read could be anything:
/// it counts as a change of every zone (no IDs), so that the whole configuration is read again.
fn change_of(message: &Message) -> ConfigChanged {
    serde_json::from_slice(&message.payload).unwrap_or(ConfigChanged {
        kind: ConfigKind::Zones,
        ids: Vec::new(),
        operation: None,
    })
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

/// What a burst of configuration changes makes the evaluator read again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// Zones changed: those zones (or everything, see [`touched_zones`]), the scene rebuilt.
    Zones,
    /// Only settings or radii: those (or only the radii named, see [`touched_radii`]), over the
    /// same zones and scene.
    Parameters,
    /// Only MQTT connections or certificate profiles, which the evaluator does not hold.
    Nothing,
}

impl Scope {
    fn of(changes: &[ConfigChanged]) -> Self {
        if changes.iter().any(|c| c.kind == ConfigKind::Zones) {
            Self::Zones
        } else if changes.iter().any(|c| matches!(c.kind, ConfigKind::Settings | ConfigKind::Radii)) {
            Self::Parameters
        } else {
            Self::Nothing
        }
    }
}

/// Subscriptions to the positions of mobile-zone sources outside the owned partitions.
async fn source_subscriptions(
    deps: &Deps,
    engine: &Engine,
) -> Result<(SelectAll<Subscription>, HashSet<Mac>), zonecast_bus::BusError> {
    let wanted: HashSet<Mac> = engine.sources().filter(|m| !engine.owns(m)).cloned().collect();
    let mut all = SelectAll::new();
    for mac in &wanted {
        all.push(deps.bus.subscribe_decoded(&deps.subjects.positions_of_device(mac.as_str())).await?);
    }
    Ok((all, wanted))
}

/// Starts the evaluator: loads configuration and this replica's collisions, subscribes, and
/// evaluates until `shutdown`. The task ends after pending collision writes are flushed.
/// http-request actions build TLS clients: ring must be the process's crypto provider (the
/// binary's start-up installs it; tests install it themselves).
pub async fn start(deps: Deps, shutdown: Shutdown) -> Result<Running, StartError> {
    let bus_err = |e: zonecast_bus::BusError| StartError::new("bus", e);
    let store_err = |e: zonecast_store::StoreError| StartError::new("store", e.detail());
    let mut config_sub = deps.bus.subscribe(&deps.subjects.config_changed()).await.map_err(bus_err)?;
    let catalog = load_catalog(deps.store.as_ref()).await.map_err(store_err)?;
    log_skipped(&catalog);
    let mut engine = Engine::new(catalog, deps.site_id, deps.ownership, IdSource::random());
    let mut positions = SelectAll::new();
    for p in deps.ownership.lo..=deps.ownership.hi {
        positions.push(deps.bus.subscribe_decoded(&deps.subjects.positions_partition(p)).await.map_err(bus_err)?);
    }
    let (mut sources, mut source_set) = source_subscriptions(&deps, &engine).await.map_err(bus_err)?;
    let (collision_tx, collision_task) = collisions::spawn(deps.store.clone());
    let (http_tx, http_task) = actions::spawn();
    let mut out = Vec::new();
    engine.restore(deps.store.all_collisions().await.map_err(store_err)?, Utc::now(), &mut out);
    let mut shell = Shell {
        bus: deps.bus.clone(),
        subjects: deps.subjects.clone(),
        collisions: collision_tx,
        http: http_tx,
        publish_log: RateLimited::new(Duration::from_secs(10)),
        positions_total: metrics::counter!("zonecast_evaluator_positions_total"),
        out_of_order_total: metrics::counter!("zonecast_evaluator_positions_out_of_order_total"),
        out_of_order_log: RateLimited::new(Duration::from_secs(10)),
        lag: metrics::histogram!("zonecast_evaluator_lag_seconds"),
        batch_lag: None,
    };
    shell.emit(&mut out).await;
    tracing::info!(
        lo = deps.ownership.lo,
        hi = deps.ownership.hi,
        zones = engine.catalog().zones.len(),
        "evaluator started"
    );
    let task = tokio::spawn(async move {
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut bad_log = RateLimited::new(Duration::from_secs(10));
        // Set when applying changes failed: the catalog may lack some, so the next change of any
        // kind reads the whole configuration again.
        let mut catalog_stale = false;
        loop {
            tokio::select! {
                biased;
                () = shutdown.cancelled() => break,
                Some(msg) = config_sub.next() => {
                    // A burst of changes (a thousand zone creates) is applied as one reload: the
                    // store is read once for all the changes already queued, not once per change.
                    let mut changes = vec![change_of(&msg)];
                    let coalesced = zonecast_bus::take_ready(&mut config_sub, MAX_COALESCED, |msg| {
                        changes.push(change_of(&msg));
                    });
                    metrics::counter!("zonecast_evaluator_changes_coalesced_total").increment(coalesced as u64);
                    let scope = if catalog_stale { Scope::Zones } else { Scope::of(&changes) };
                    match scope {
                        Scope::Zones => {
                            // After a failed read the catalog may miss changes: the next burst reads all.
                            let touched = if catalog_stale { None } else { touched_zones(&changes) };
                            let applied = match touched {
                                // Only these zones: read them alone and patch the catalog.
                                Some(touched) => {
                                    let ids: Vec<uuid::Uuid> = touched.iter().copied().collect();
                                    deps.store.find_zones(&ids).await.map(|changed| {
                                        engine.apply_zones(changed, &touched, &changes, Utc::now(), &mut out);
                                        log_skipped(engine.catalog());
                                        metrics::counter!("zonecast_evaluator_zone_patches_total").increment(1);
                                    })
                                }
                                None => load_catalog(deps.store.as_ref()).await.map(|catalog| {
                                    log_skipped(&catalog);
                                    engine.reload(catalog, &changes, Utc::now(), &mut out);
                                    metrics::counter!("zonecast_evaluator_reloads_total").increment(1);
                                }),
                            };
                            catalog_stale = applied.is_err();
                            match applied {
                                Ok(()) => match source_subscriptions(&deps, &engine).await {
                                    Ok((subs, set)) if set != source_set => { sources = subs; source_set = set; }
                                    Ok(_) => {}
                                    Err(e) => tracing::warn!(error = %e, "cannot follow mobile-zone sources"),
                                },
                                Err(e) => tracing::warn!(error = %e, "configuration reload failed; keeping the previous one until the next change"),
                            }
                        }
                        Scope::Parameters => {
                            let applied = match touched_radii(&changes) {
                                // Only these devices' radii: read them alone, touch no other device.
                                Some(macs) => deps.store.find_radii(&macs).await.map(|changed| {
                                    engine.apply_radii(changed, Utc::now(), &mut out);
                                    metrics::counter!("zonecast_evaluator_radius_patches_total").increment(1);
                                }),
                                None => load_parameters(deps.store.as_ref()).await.map(|(settings, radii)| {
                                    engine.reparameterise(settings, radii, Utc::now(), &mut out);
                                    metrics::counter!("zonecast_evaluator_parameter_reloads_total").increment(1);
                                }),
                            };
                            if let Err(e) = applied {
                                catalog_stale = true;
                                tracing::warn!(error = %e, "settings reload failed; keeping the previous ones until the next change");
                            }
                        }
                        Scope::Nothing => {}
                    }
                }
                Some(msg) = positions.next() => {
                    // What is already queued is taken without going round the select again, one
                    // message ahead: while a position is evaluated, the zone index data the next
                    // one needs is loading into cache.
                    let mut current = fix_of(&msg);
                    zonecast_bus::take_ready(&mut positions, DRAIN - 1, |msg| {
                        let next = fix_of(&msg);
                        if let Ok(fix) = &next {
                            engine.prefetch(fix.position);
                        }
                        shell.position(&mut engine, std::mem::replace(&mut current, next), &mut bad_log, &mut out);
                    });
                    shell.position(&mut engine, current, &mut bad_log, &mut out);
                    shell.record_lag();
                }
                Some(msg) = sources.next() => {
                    shell.position(&mut engine, fix_of(&msg), &mut bad_log, &mut out);
                    shell.record_lag();
                }
                _ = tick.tick() => {
                    engine.on_tick(Utc::now(), &mut out);
                    metrics::gauge!("zonecast_evaluator_devices").set(engine.device_count() as f64);
                }
            }
            shell.emit(&mut out).await;
        }
        drop(shell);
        let _ = collision_task.await;
        let _ = http_task.await;
        tracing::info!("evaluator stopped");
    });
    Ok(Running::new(task))
}

/// Most queued configuration changes applied together with the one that woke the loop.
const MAX_COALESCED: usize = 10_000;

/// The fix of a position message: published in this process it comes decoded; from NATS it is
/// parsed from the bytes.
fn fix_of(message: &Message) -> Result<PositionFix, String> {
    match message.decoded::<PositionFix>() {
        Some(fix) => Ok(fix.clone()),
        None => PositionFix::from_event_bytes(&message.payload),
    }
}

/// Where the engine's outputs go.
struct Shell {
    bus: Arc<dyn Bus>,
    subjects: Subjects,
    collisions: mpsc::UnboundedSender<collisions::Change>,
    http: mpsc::Sender<actions::Request>,
    publish_log: RateLimited,
    positions_total: metrics::Counter,
    /// Positions older than the last one applied for their device, not applied.
    out_of_order_total: metrics::Counter,
    out_of_order_log: RateLimited,
    lag: metrics::Histogram,
    /// The largest lag among the positions taken from the bus together, not yet recorded.
    batch_lag: Option<f64>,
}

impl Shell {
    fn position(
        &mut self,
        engine: &mut Engine,
        fix: Result<PositionFix, String>,
        bad_log: &mut RateLimited,
        out: &mut Vec<Output>,
    ) {
        match fix {
            Ok(p) => {
                let now = Utc::now();
                self.positions_total.increment(1);
                // Lag: measurement to evaluation (includes ingestion and the bus).
                let lag = (now - p.timestamp).num_microseconds().unwrap_or(0) as f64 / 1e6;
                self.batch_lag = Some(self.batch_lag.map_or(lag, |l| l.max(lag)));
                if !engine.on_position(&p.mac, p.position, p.timestamp, p.sequence, now, out) {
                    self.out_of_order_total.increment(1);
                    if let Some(held_back) = self.out_of_order_log.allow() {
                        tracing::info!(
                            mac = %p.mac.as_str(),
                            timestamp = %zonecast_model::format_timestamp(&p.timestamp),
                            held_back,
                            "position older than the last one applied for its device skipped"
                        );
                    }
                }
            }
            Err(reason) => {
                metrics::counter!("zonecast_evaluator_bad_messages_total").increment(1);
                if let Some(held_back) = bad_log.allow() {
                    tracing::warn!(%reason, held_back, "position message skipped");
                }
            }
        }
    }

    /// Records the lag of the positions taken together (up to [`DRAIN`]) as one sample, their
    /// largest: one histogram update per batch instead of per position.
    fn record_lag(&mut self) {
        if let Some(lag) = self.batch_lag.take() {
            self.lag.record(lag.max(0.0));
        }
    }

    async fn emit(&mut self, out: &mut Vec<Output>) {
        for output in out.drain(..) {
            match output {
                Output::Publish(event) => {
                    let kind = event.kind();
                    metrics::counter!("zonecast_evaluator_events_total", "type" => kind.as_str()).increment(1);
                    log_event(&event);
                    let Some(subject) = self.subjects.of_event(&event) else {
                        tracing::error!(r#type = kind.as_str(), "event without a subject not published");
                        continue;
                    };
                    let payload = match serde_json::to_vec(&event) {
                        Ok(p) => p,
                        Err(e) => {
                            tracing::error!(error = %e, "cannot encode event");
                            continue;
                        }
                    };
                    if let Err(e) = self.bus.publish(subject, payload.into()).await {
                        metrics::counter!("zonecast_evaluator_publish_failures_total").increment(1);
                        if let Some(held_back) = self.publish_log.allow() {
                            tracing::warn!(error = %e, held_back, "event not published");
                        }
                    }
                }
                Output::Entered(c) => {
                    let _ = self.collisions.send(collisions::Change::Entered(c));
                }
                Output::Exited { zone, mac } => {
                    let _ = self.collisions.send(collisions::Change::Exited(zone, mac));
                }
                Output::Http { uri, method, headers, event } => {
                    if self.http.try_send(actions::Request { uri, method, headers, event }).is_err() {
                        metrics::counter!("zonecast_evaluator_http_actions_total", "outcome" => "dropped").increment(1);
                    }
                }
            }
        }
    }
}

/// The log lines of an event: every entry (target `zonecast::entry`) and the message of every
/// info event (target `zonecast::zone_info`).
fn log_event(event: &zonecast_model::Event) {
    let mac = event.source.mac.as_ref().map_or("", |m| m.as_str());
    match &event.content {
        Content::ZoneEnter(c) => tracing::info!(
            target: "zonecast::entry",
            zone = %zonecast_model::format_id(&c.zone_id),
            name = %c.zone_name,
            mac = %mac,
            alarm = c.alarm.as_str(),
            "zone entered"
        ),
        Content::ZoneInfo(c) => {
            tracing::info!(target: "zonecast::zone_info", zone = %c.zone_name, mac = %mac, "{}", c.message);
        }
        _ => {}
    }
}
