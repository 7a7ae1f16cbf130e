//! The evaluator's I/O shell: its loop takes positions, configuration announcements and clock
//! ticks from the bus, feeds them to the [`Engine`], and publishes, logs, records and acts on
//! what the engine returns.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use futures::StreamExt;
use futures::stream::SelectAll;
use zonecast_bus::Subscription;
use zonecast_bus::journal::{ACTIONS_CONSUMER, ACTIONS_IN_HAND, Kind};
use zonecast_model::{IdSource, Mac, lag::Stage};
use zonecast_runtime::applier::{Follower, REPORT_EVERY, Reporter};
use zonecast_runtime::ratelog::RateLimited;
use zonecast_runtime::{Running, Shutdown, StartError};

use crate::catalog::Catalog;
pub use crate::engine::{Engine, Output};

mod applied;
mod handover;
mod lag;
mod outputs;

use applied::{Applied, apply};
use handover::Handover;
use outputs::Shell;

use crate::claims::{Claims, Order};
use crate::config_changes;
use crate::engine::Ownership;
use crate::engine::SourceHint;
use crate::{Deps, catch_up, collisions, feed};

/// How often the clock fires delayed transitions, timeouts and window ends.
const TICK: Duration = Duration::from_millis(100);

/// Positions evaluated in one turn of the loop once the first is in, before the events they
/// caused are stored and the collisions they changed are handed to their writer, in one
/// process (the journal a local file, the collisions beside it).
const DRAIN: usize = 256;

/// [`DRAIN`] when positions come stored over NATS: there a turn ends with a round trip to
/// JetStream for its events and a PostgreSQL transaction for its collisions, and while the
/// evaluator is behind, more positions per turn spread that cost, so that it catches up sooner.
/// Turns stay small while it keeps up: a turn takes only the batches already read, and those
/// the partitions' followers hand over when let run once.
const DRAIN_STORED: usize = 4096;

/// Logs the zones a catalog had to leave out.
fn log_skipped(catalog: &Catalog) {
    for s in &catalog.skipped {
        tracing::warn!(zone = %s.zone, error = %s.reason, "zone skipped: geometry does not validate");
    }
}

/// What an evaluator follows of the positions of mobile-zone sources outside its own
/// partitions.
struct Sources {
    /// The subscriptions: the batches of the partitions the devices are in.
    subscriptions: SelectAll<Subscription>,
    /// The devices.
    macs: HashSet<Mac>,
    /// Their MACs as written, to find their lines in a batch.
    written: Vec<String>,
}

impl Sources {
    /// Subscribes to the positions of the sources `engine` needs and does not own.
    async fn of(deps: &Deps, engine: &Engine) -> Result<Self, zonecast_bus::BusError> {
        let macs: HashSet<Mac> = engine.sources().filter(|m| !engine.owns(m)).cloned().collect();
        let mut subscriptions = SelectAll::new();
        let partitions: std::collections::BTreeSet<u32> =
            macs.iter().map(|mac| mac.partition(engine.ownership().count())).collect();
        if !partitions.is_empty() {
            let partitions: Vec<u32> = partitions.into_iter().collect();
            subscriptions.push(deps.positions.tap(Some(&partitions), None).await?);
        }
        let written = macs.iter().map(|mac| mac.as_str().to_owned()).collect();
        Ok(Self { subscriptions, macs, written })
    }
}

/// Starts the evaluator: loads configuration and this replica's collisions, subscribes, and
/// evaluates until `shutdown`. The task ends after pending collision writes are flushed.
/// http-request actions build TLS clients: ring must be the process's crypto provider (the
/// binary's start-up installs it; tests install it themselves).
pub async fn start(deps: Deps, shutdown: Shutdown) -> Result<Running, StartError> {
    let bus_err = |e: zonecast_bus::BusError| StartError::new("bus", e);
    let store_err = |e: zonecast_store::StoreError| StartError::new("store", e.detail());
    let count = deps.ownership.count();
    // Over NATS, an evaluator not given its partitions claims them with the others.
    let leases = match deps.claims {
        true => deps.bus.leases(deps.subjects.prefix(), deps.replicas).await.map_err(bus_err)?,
        false => None,
    };
    let label = match (&leases, deps.pinned) {
        (Some(_), None) => "claimed".to_owned(),
        _ => deps.ownership.label(),
    };
    let (partitions, devices, owned) = crate::register_metrics(&label);
    let announcements = deps.bus.subscribe(&deps.subjects.config_changed()).await.map_err(bus_err)?;
    let mut hints = deps.bus.subscribe(&deps.subjects.source_positions()).await.map_err(bus_err)?;
    let mut roll_calls = deps.bus.subscribe(&deps.subjects.config_roll()).await.map_err(bus_err)?;
    // The log's revision first: the catalog read after it holds every change up to it.
    let follower = Follower::at_current(deps.store.clone()).await.map_err(store_err)?;
    let revision = follower.applied();
    let catalog = config_changes::load_catalog(deps.store.as_ref()).await.map_err(store_err)?;
    log_skipped(&catalog);
    let ownership = if leases.is_some() { Ownership::none(count) } else { deps.ownership.clone() };
    let mut engine = Engine::new(catalog, deps.site_id, ownership, IdSource::random());
    let marks = deps.store.collision_marks().await.map_err(store_err)?;
    let rows = deps.store.all_collisions().await.map_err(store_err)?;
    let presence = deps.store.all_presence().await.map_err(store_err)?;
    let kept = deps.positions.keeps();
    let drain = if kept { DRAIN_STORED } else { DRAIN };
    // Where positions are not kept, they are not evaluated again after a crash: the collisions
    // catch up with the events the journal stored instead.
    let mut caught_up = match kept {
        true => Vec::new(),
        false => catch_up::from_journal(deps.journal.as_ref(), &deps.subjects, &rows, marks.through_all())
            .await
            .map_err(bus_err)?,
    };
    caught_up.retain(|change| engine.owns(change.mac()));
    let mut feed = feed::Feed::new(deps.positions.clone(), shutdown.clone());
    for p in engine.ownership().partitions() {
        feed.start(p, marks.partition(p)).await;
    }
    let mut sources = Sources::of(&deps, &engine).await.map_err(bus_err)?;
    let time_mark = leases.is_none().then(|| engine.ownership().partitions().next().unwrap_or(0));
    let occupancy = crate::occupancy::Occupancy::new(deps.journal.clone(), deps.subjects.clone(), deps.site_id);
    let collisions = collisions::spawn(deps.store.clone(), count, time_mark, occupancy);
    let collision_task = collisions.task;
    let mut fenced = collisions.fenced;
    let mut acks = feed::Acks::new(collisions.written);
    owned.set(engine.ownership().partitions().count() as f64);
    let mut handover = match leases {
        Some(leases) => {
            // The position stream set up before any claim: a partition claimed while its
            // stream is still being set up (slow on a busy replicated NATS) holds its devices'
            // events back for as long.
            prepare_positions(deps.positions.as_ref(), &shutdown).await;
            let about = serde_json::json!({ "Partitions": count });
            let claims = Claims::join(leases, count, deps.timing, deps.pinned, about).await.map_err(bus_err)?;
            Some(Handover::new(claims, deps.store.clone(), collisions.flush.clone()))
        }
        None => None,
    };
    let mut evaluated: Vec<feed::Taken> = Vec::new();
    // The forwarders' consumer of http-request actions exists before the first request is
    // stored, so that the journal keeps every request for it.
    deps.journal.create_consumer(Kind::Actions, ACTIONS_CONSUMER, ACTIONS_IN_HAND).await.map_err(bus_err)?;
    let mut out = Vec::new();
    if !caught_up.is_empty() {
        tracing::info!(
            changes = caught_up.len(),
            "collisions brought up to date with the events journaled before a stop"
        );
    }
    engine.restore(catch_up::apply(rows, &caught_up), Utc::now(), &mut out);
    engine.restore_presence(presence, Utc::now());
    let mut steps = config_changes::spawn(deps.store.clone(), announcements, follower, shutdown.clone());
    let mut applied =
        Applied { reporter: Reporter::new(deps.bus.clone(), &deps.subjects, "evaluator"), revision, held: None };
    let lag = Arc::new(lag::Lag::default());
    let lag_reports = {
        let lag = lag.clone();
        zonecast_runtime::lag::spawn_reports(
            deps.bus.clone(),
            &deps.subjects,
            Stage::Evaluator,
            Some(partitions),
            move || lag.report(),
            shutdown.clone(),
        )
    };
    let mut shell = Shell {
        bus: deps.bus.clone(),
        journal: deps.journal.clone(),
        records: Vec::new(),
        requests: Vec::new(),
        subjects: deps.subjects.clone(),
        collisions: collisions.turns,
        changes: caught_up,
        recounts: Vec::new(),
        turns: 0,
        last_turn: tokio::time::Instant::now(),
        publish_log: RateLimited::new(Duration::from_secs(10)),
        positions_total: metrics::counter!("zonecast_evaluator_positions_total"),
        events_total: std::collections::HashMap::new(),
        out_of_order_total: metrics::counter!("zonecast_evaluator_positions_out_of_order_total"),
        out_of_order_log: RateLimited::new(Duration::from_secs(10)),
        lag: metrics::histogram!("zonecast_evaluator_lag_seconds"),
        batch_lag: None,
        accepted_lag: lag,
        batch_accepted_ms: None,
        shutdown: shutdown.clone(),
        abandoned: false,
    };
    shell.emit(&mut out).await;
    shell.end_turn(Vec::new(), Vec::new);
    applied.reporter.report(revision).await;
    tracing::info!(
        partitions = %handover.as_ref().map_or_else(|| engine.ownership().label(), |h| format!("claimed as {}", h.claims.member)),
        zones = engine.catalog().zones.len(),
        revision,
        "evaluator started"
    );
    let task = tokio::spawn(async move {
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut report = tokio::time::interval(REPORT_EVERY);
        report.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut unreadable_log = RateLimited::new(Duration::from_secs(10));
        loop {
            tokio::select! {
                biased;
                () = shutdown.cancelled() => break,
                Some(step) = steps.recv() => {
                    if apply(&mut engine, step.update, &mut out) {
                        follow_sources(&deps, &engine, &mut sources).await;
                    }
                    // In force once what it implies is published, and once the other
                    // evaluators have said where the new mobile-zone sources they own are.
                    shell.emit(&mut out).await;
                    applied.put(step.revision, &engine).await;
                }
                Some(msg) = hints.next() => {
                    match serde_json::from_slice::<SourceHint>(&msg.payload) {
                        Ok(hint) => engine.on_source_hint(hint, Utc::now(), &mut out),
                        Err(e) => tracing::debug!(error = %e, "unreadable source hint ignored"),
                    }
                    applied.settle(&mut engine, false).await;
                }
                Some(batch) = feed.batches.recv() => {
                    // Batches already read are taken in the same turn, up to about `drain`
                    // positions. Those of a partition no longer owned are passed over: its
                    // new owner takes them from the collisions written.
                    let mut next = Some(batch);
                    let (mut taken, mut yielded) = (0, false);
                    while let Some(mut batch) = next.take() {
                        if !engine.ownership().holds(batch.partition) {
                            next = feed.batches.try_recv().ok();
                            continue;
                        }
                        skipped(&batch);
                        taken += batch.fixes.len();
                        let mut fixes = std::mem::take(&mut batch.fixes).into_iter().peekable();
                        while let Some(fix) = fixes.next() {
                            // The zone index data the next position needs loads into cache
                            // while this one is evaluated.
                            if let Some(Ok(after)) = fixes.peek() {
                                engine.prefetch(after.position);
                            }
                            shell.position(&mut engine, fix, &mut unreadable_log, &mut out);
                        }
                        evaluated.push(batch);
                        if taken < drain {
                            next = feed.batches.try_recv().ok();
                            // Once per turn, the partitions' followers that the same payload
                            // woke get to hand over their batches before the turn ends: a
                            // payload then makes a turn or two here, each ending with a journal
                            // transaction and a collisions write, instead of one per partition.
                            if next.is_none() && !yielded {
                                yielded = true;
                                tokio::task::yield_now().await;
                                next = feed.batches.try_recv().ok();
                            }
                        }
                    }
                    shell.record_lag();
                }
                Some(msg) = sources.subscriptions.next() => {
                    for fix in feed::of_devices(&msg, &sources.written) {
                        shell.position(&mut engine, fix, &mut unreadable_log, &mut out);
                    }
                    shell.record_lag();
                }
                () = acks.written() => {}
                Some(order) = next_order(&mut handover) => {
                    let Some(h) = handover.as_mut() else { continue };
                    if h.order(order, &mut engine, &mut feed, &mut acks, shell.turns, &mut out).await {
                        owned.set(engine.ownership().partitions().count() as f64);
                        follow_sources(&deps, &engine, &mut sources).await;
                    }
                }
                Some(lost) = fenced.recv() => {
                    let Some(h) = handover.as_mut() else { continue };
                    h.lose(&lost, &mut engine, &mut feed, &mut acks);
                    owned.set(engine.ownership().partitions().count() as f64);
                }
                _ = tick.tick() => {
                    engine.on_tick(Utc::now(), &mut out);
                    devices.set(engine.device_count() as f64);
                }
                _ = report.tick() => {
                    applied.settle(&mut engine, true).await;
                    applied.reporter.report(applied.revision).await;
                }
                Some(_) = roll_calls.next() => applied.reporter.report(applied.revision).await,
            }
            // An evaluator whose lease ran out acts no more for its partitions: others may own
            // them by now.
            if let Some(h) = handover.as_mut()
                && !h.claims.lease.held()
            {
                out.clear();
                shell.changes.clear();
                evaluated.clear();
                h.lose_all(&mut engine, &mut feed, &mut acks);
                owned.set(0.0);
            }
            shell.emit(&mut out).await;
            if shell.abandoned {
                // Stopping with events not stored: nothing of the turn is written or
                // acknowledged, so its positions are evaluated again, to the same events.
                shell.changes.clear();
                evaluated.clear();
                break;
            }
            // What was evaluated is done with once its events are stored (above) and the
            // collisions it changed are written.
            let batches = evaluated.iter().filter_map(|b| Some((b.partition, b.sequence?))).collect();
            let turn = shell.end_turn(batches, || handover.as_ref().map(Handover::epochs).unwrap_or_default());
            for batch in evaluated.drain(..) {
                acks.hold(batch.partition, batch.ack, turn);
            }
            let written = acks.settle();
            if let Some(h) = handover.as_mut() {
                h.settle(written);
            }
            // A batch waits for its collisions' write up to `SPACING` by design: only what
            // goes beyond is lag.
            if let Some(waited) = acks.oldest().map(|w| w.saturating_sub(collisions::SPACING)) {
                shell.accepted_lag.waited(u64::try_from(waited.as_millis()).unwrap_or(u64::MAX));
            }
        }
        applied.reporter.leave(applied.revision).await;
        drop(shell);
        let _ = collision_task.await;
        acks.finish();
        if let Some(handover) = handover {
            handover.claims.leave().await;
        }
        let _ = lag_reports.await;
        tracing::info!("evaluator stopped");
    });
    Ok(Running::new(task))
}

/// Sets the position stream up, trying again until it is or the evaluator stops.
async fn prepare_positions(positions: &dyn zonecast_bus::PositionLog, shutdown: &Shutdown) {
    let mut backoff = zonecast_runtime::backoff::Backoff::new(Duration::from_millis(100), Duration::from_secs(2));
    let mut log = RateLimited::new(Duration::from_secs(10));
    while let Err(e) = positions.prepare().await {
        if let Some(held_back) = log.allow() {
            tracing::warn!(error = %e, held_back, "position stream not set up yet; no partition is claimed before it is");
        }
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(backoff.next_delay()) => {}
        }
    }
}

/// The next order of the claims; never, for an evaluator given its partitions.
async fn next_order(handover: &mut Option<Handover>) -> Option<Order> {
    match handover {
        Some(handover) => handover.claims.orders.recv().await,
        None => std::future::pending().await,
    }
}

/// Follows the mobile-zone sources the engine needs and does not own, when they changed.
async fn follow_sources(deps: &Deps, engine: &Engine, sources: &mut Sources) {
    match Sources::of(deps, engine).await {
        Ok(now) if now.macs != sources.macs => *sources = now,
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "cannot follow mobile-zone sources"),
    }
}

/// Counts and logs the messages that left the position stream before this evaluator had them.
fn skipped(batch: &feed::Taken) {
    if batch.skipped > 0 {
        metrics::counter!("zonecast_evaluator_position_batches_skipped_total").increment(batch.skipped);
        tracing::warn!(
            partition = batch.partition,
            batches = batch.skipped,
            "stored positions skipped: they left the position stream (older than its window, or beyond its size) before this evaluator took them"
        );
    }
}
