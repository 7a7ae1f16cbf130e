//! The evaluator's I/O shell: its loop takes positions, configuration announcements and clock
//! ticks from the bus, feeds them to the [`Engine`], and publishes, logs, records and acts on
//! what the engine returns.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use chrono::Utc;
use futures::stream::SelectAll;
use futures::{FutureExt, StreamExt};
use tokio::sync::mpsc;
use zonecast_bus::journal::Record;
use zonecast_bus::{Bus, Journal, Message, Subjects, Subscription};
use zonecast_model::{Content, IdSource, Mac, PositionFix, lag::Stage};
use zonecast_runtime::applier::{Follower, REPORT_EVERY, Reporter};
use zonecast_runtime::ratelog::RateLimited;
use zonecast_runtime::{Running, Shutdown, StartError};

use crate::catalog::Catalog;
pub use crate::engine::{Engine, Output};

use crate::config::{self, Update};
use crate::engine::SourceHint;
use crate::{Deps, actions, actions_consumer, collisions, feed};

/// How often the clock fires delayed transitions, timeouts and window ends.
const TICK: Duration = Duration::from_millis(100);

/// Positions evaluated in one turn of the loop once the first is in, before the events they
/// caused are published.
const DRAIN: usize = 256;

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
            macs.iter().map(|mac| mac.partition(deps.ownership.count)).collect();
        for partition in partitions {
            subscriptions.push(deps.bus.subscribe_decoded(&deps.subjects.position_batch(partition)).await?);
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
    let (partitions, devices) = crate::register_metrics(deps.ownership);
    let announcements = deps.bus.subscribe(&deps.subjects.config_changed()).await.map_err(bus_err)?;
    let mut hints = deps.bus.subscribe(&deps.subjects.source_positions()).await.map_err(bus_err)?;
    let mut roll_calls = deps.bus.subscribe(&deps.subjects.config_roll()).await.map_err(bus_err)?;
    // The log's revision first: the catalog read after it holds every change up to it.
    let follower = Follower::at_current(deps.store.clone()).await.map_err(store_err)?;
    let revision = follower.applied();
    let catalog = config::load_catalog(deps.store.as_ref()).await.map_err(store_err)?;
    log_skipped(&catalog);
    let mut engine = Engine::new(catalog, deps.site_id, deps.ownership, IdSource::random());
    // The owned partitions' batches: over NATS followed in their streams, in one process
    // through a subscription per partition.
    let streams = deps.bus.position_streams(deps.subjects.prefix(), deps.ownership.count, deps.positions);
    let mut positions = SelectAll::new();
    let mut batches = match streams {
        Some(streams) => feed::follow(streams, deps.ownership.lo, deps.ownership.hi, shutdown.clone()),
        None => {
            for p in deps.ownership.lo..=deps.ownership.hi {
                positions.push(deps.bus.subscribe_decoded(&deps.subjects.position_batch(p)).await.map_err(bus_err)?);
            }
            tokio::sync::mpsc::channel(1).1
        }
    };
    let mut sources = Sources::of(&deps, &engine).await.map_err(bus_err)?;
    let collisions = collisions::spawn(deps.store.clone());
    let collision_task = collisions.task;
    let mut acks = feed::Acks::new(collisions.written);
    let mut evaluated: Vec<(u32, zonecast_bus::journal::Ack)> = Vec::new();
    // The consumer of http-request actions exists before the first request is stored.
    actions_consumer::create(deps.journal.as_ref()).await.map_err(bus_err)?;
    let http_task = deps.http_actions.then(|| {
        let delivery = actions::Delivery::new(deps.keys.clone(), actions::Backoff::within(deps.http_action_retry_for));
        actions_consumer::spawn(deps.journal.clone(), delivery, shutdown.clone())
    });
    let mut out = Vec::new();
    engine.restore(deps.store.all_collisions().await.map_err(store_err)?, Utc::now(), &mut out);
    let mut steps = config::spawn(deps.store.clone(), announcements, follower, shutdown.clone());
    let mut applied =
        Applied { reporter: Reporter::new(deps.bus.clone(), &deps.subjects, "evaluator"), revision, held: None };
    // The largest age of the positions evaluated since the last lag report.
    let lag_ms = Arc::new(AtomicU64::new(0));
    let lag_reports = {
        let lag_ms = lag_ms.clone();
        zonecast_runtime::lag::spawn_reports(
            deps.bus.clone(),
            &deps.subjects,
            Stage::Evaluator,
            Some(partitions),
            move || lag_ms.swap(0, Ordering::Relaxed),
            shutdown.clone(),
        )
    };
    let mut shell = Shell {
        bus: deps.bus.clone(),
        journal: deps.journal.clone(),
        records: Vec::new(),
        requests: Vec::new(),
        subjects: deps.subjects.clone(),
        collisions: collisions.changes,
        collision_changes: 0,
        publish_log: RateLimited::new(Duration::from_secs(10)),
        positions_total: metrics::counter!("zonecast_evaluator_positions_total"),
        out_of_order_total: metrics::counter!("zonecast_evaluator_positions_out_of_order_total"),
        out_of_order_log: RateLimited::new(Duration::from_secs(10)),
        lag: metrics::histogram!("zonecast_evaluator_lag_seconds"),
        batch_lag: None,
        accepted_lag_ms: lag_ms,
        batch_accepted_ms: None,
    };
    shell.emit(&mut out).await;
    applied.reporter.report(revision).await;
    tracing::info!(
        lo = deps.ownership.lo,
        hi = deps.ownership.hi,
        zones = engine.catalog().zones.len(),
        revision,
        "evaluator started"
    );
    let task = tokio::spawn(async move {
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut report = tokio::time::interval(REPORT_EVERY);
        report.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut bad_log = RateLimited::new(Duration::from_secs(10));
        loop {
            tokio::select! {
                biased;
                () = shutdown.cancelled() => break,
                Some(step) = steps.recv() => {
                    if apply(&mut engine, step.update, &mut out) {
                        match Sources::of(&deps, &engine).await {
                            Ok(now) if now.macs != sources.macs => sources = now,
                            Ok(_) => {}
                            Err(e) => tracing::warn!(error = %e, "cannot follow mobile-zone sources"),
                        }
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
                Some(batch) = positions.next() => {
                    // Batches already queued are taken in the same turn, up to about DRAIN
                    // positions.
                    let mut next = Some(batch);
                    let mut taken = 0;
                    while let Some(batch) = next.take() {
                        taken += evaluate_batch(&mut shell, &mut engine, &batch, &mut bad_log, &mut out);
                        if taken < DRAIN {
                            next = positions.next().now_or_never().flatten();
                        }
                    }
                    shell.record_lag();
                }
                Some(batch) = batches.recv() => {
                    // Batches already read are taken in the same turn, up to about DRAIN
                    // positions.
                    let mut next = Some(batch);
                    let mut taken = 0;
                    while let Some(batch) = next.take() {
                        skipped(&batch);
                        taken += batch.fixes.len();
                        for fix in batch.fixes {
                            shell.position(&mut engine, fix, &mut bad_log, &mut out);
                        }
                        evaluated.push((batch.partition, batch.ack));
                        if taken < DRAIN {
                            next = batches.try_recv().ok();
                        }
                    }
                    shell.record_lag();
                }
                Some(msg) = sources.subscriptions.next() => {
                    for fix in feed::of_devices(&msg, &sources.written) {
                        shell.position(&mut engine, fix, &mut bad_log, &mut out);
                    }
                    shell.record_lag();
                }
                () = acks.written() => {}
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
            shell.emit(&mut out).await;
            // What was evaluated is done with once its events are stored (above) and the
            // collisions it changed are written.
            for (partition, ack) in evaluated.drain(..) {
                acks.hold(partition, ack, shell.collision_changes);
            }
            acks.settle();
        }
        applied.reporter.leave(applied.revision).await;
        drop(shell);
        let _ = collision_task.await;
        acks.finish();
        let _ = lag_reports.await;
        if let Some(http_task) = http_task {
            let _ = http_task.await;
        }
        tracing::info!("evaluator stopped");
    });
    Ok(Running::new(task))
}

/// How long an evaluator waits for the others to say where the new mobile-zone sources they
/// own are, before it reports a change in force without them.
const HINT_WAIT: Duration = Duration::from_secs(1);

/// The revision an evaluator reports in force, held back while it awaits source hints.
struct Applied {
    reporter: Reporter,
    /// The revision reported.
    revision: u64,
    /// A revision applied but not yet reported, and until when it may wait for hints.
    held: Option<(u64, tokio::time::Instant)>,
}

impl Applied {
    /// `revision` has been applied: reported now, or held until the awaited hints come.
    async fn put(&mut self, revision: u64, engine: &Engine) {
        if engine.awaiting_sources() {
            let until = self.held.map_or_else(|| tokio::time::Instant::now() + HINT_WAIT, |(_, until)| until);
            self.held = Some((revision, until));
        } else {
            self.held = None;
            self.revision = revision;
            self.reporter.report(revision).await;
        }
    }

    /// Reports a held revision once no hint is awaited any more, or, when `late` is allowed,
    /// once its wait is over.
    async fn settle(&mut self, engine: &mut Engine, late: bool) {
        let Some((revision, until)) = self.held else { return };
        if late && tokio::time::Instant::now() >= until && engine.awaiting_sources() {
            tracing::warn!(revision, "no word on new mobile-zone sources from the evaluators that own them; going on");
            engine.stop_awaiting();
        }
        if !engine.awaiting_sources() {
            self.put(revision, engine).await;
        }
    }
}

/// Puts a step read by the configuration follower in force; true when zones changed (the
/// mobile-zone sources to follow may have too).
fn apply(engine: &mut Engine, update: Update, out: &mut Vec<Output>) -> bool {
    let now = Utc::now();
    match update {
        Update::Zones { changed, touched, changes } => {
            engine.apply_zones(changed, &touched, &changes, now, out);
            log_skipped(engine.catalog());
            metrics::counter!("zonecast_evaluator_zone_patches_total").increment(1);
            true
        }
        Update::Catalog { catalog, changes } => {
            log_skipped(&catalog);
            engine.reload(*catalog, &changes, now, out);
            metrics::counter!("zonecast_evaluator_reloads_total").increment(1);
            true
        }
        Update::Radii(changed) => {
            engine.apply_radii(changed, now, out);
            metrics::counter!("zonecast_evaluator_radius_patches_total").increment(1);
            false
        }
        Update::Parameters { settings, radii } => {
            engine.reparameterise(settings, radii, now, out);
            metrics::counter!("zonecast_evaluator_parameter_reloads_total").increment(1);
            false
        }
        Update::Nothing => false,
    }
}

/// Counts and logs the batches that left a partition's stream before this evaluator had them.
fn skipped(batch: &feed::Taken) {
    if batch.skipped > 0 {
        metrics::counter!("zonecast_evaluator_position_batches_skipped_total").increment(batch.skipped);
        tracing::warn!(
            partition = batch.partition,
            batches = batch.skipped,
            "stored positions skipped: they left the partition's stream (older than its window, or beyond its size) before this evaluator took them"
        );
    }
}

/// Evaluates the positions of a batch from the bus and returns how many it held: published in
/// this process it comes decoded, and while a position is evaluated the zone index data the
/// next one needs is loading into cache; otherwise its lines are read.
fn evaluate_batch(
    shell: &mut Shell,
    engine: &mut Engine,
    batch: &Message,
    bad_log: &mut RateLimited,
    out: &mut Vec<Output>,
) -> usize {
    match batch.decoded::<Vec<PositionFix>>() {
        Some(fixes) => {
            for (i, fix) in fixes.iter().enumerate() {
                if let Some(after) = fixes.get(i + 1) {
                    engine.prefetch(after.position);
                }
                shell.position(engine, Ok(fix.clone()), bad_log, out);
            }
            fixes.len()
        }
        None => {
            let mut taken = 0;
            for fix in feed::lines(&batch.payload) {
                shell.position(engine, fix, bad_log, out);
                taken += 1;
            }
            taken
        }
    }
}

/// Where the engine's outputs go.
struct Shell {
    bus: Arc<dyn Bus>,
    /// Events are stored here (and so published) before anything acts on them.
    journal: Arc<dyn Journal>,
    /// The events of the outputs being emitted, appended together.
    records: Vec<Record>,
    /// The http-request actions of the outputs being emitted, appended after their events.
    requests: Vec<Record>,
    subjects: Subjects,
    collisions: mpsc::UnboundedSender<collisions::Change>,
    /// Collision changes sent to the writer.
    collision_changes: u64,
    publish_log: RateLimited,
    positions_total: metrics::Counter,
    /// Positions older than the last one applied for their device, not applied.
    out_of_order_total: metrics::Counter,
    out_of_order_log: RateLimited,
    lag: metrics::Histogram,
    /// The largest lag among the positions taken from the bus together, not yet recorded.
    batch_lag: Option<f64>,
    /// The largest time since acceptance among the positions evaluated since the last lag
    /// report.
    accepted_lag_ms: Arc<AtomicU64>,
    /// When the oldest of the positions taken together was accepted (Unix ms), not yet
    /// recorded.
    batch_accepted_ms: Option<u64>,
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
                if let Some(accepted) = p.event_id.and_then(zonecast_model::lag::accepted_ms) {
                    self.batch_accepted_ms = Some(self.batch_accepted_ms.map_or(accepted, |a| a.min(accepted)));
                }
                if !engine.on_fix(&p, now, out) {
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
    /// largest, and their age since acceptance for the lag reports: once per batch instead of
    /// per position.
    fn record_lag(&mut self) {
        if let Some(lag) = self.batch_lag.take() {
            self.lag.record(lag.max(0.0));
        }
        if let Some(accepted) = self.batch_accepted_ms.take() {
            let age = zonecast_model::lag::now_ms().saturating_sub(accepted);
            self.accepted_lag_ms.fetch_max(age, Ordering::Relaxed);
        }
    }

    /// Stores the events among `out` in the journal first, with the requests of http-request
    /// actions after them (sent from the journal by the actions' consumer), then acts on the
    /// rest (collision records, source hints): nothing acts on an event before it is stored.
    async fn emit(&mut self, out: &mut Vec<Output>) {
        let (stored, acts): (Vec<Output>, Vec<Output>) =
            out.drain(..).partition(|o| matches!(o, Output::Publish(_) | Output::Http { .. }));
        for output in stored {
            match output {
                Output::Publish(event) => self.record(&event),
                Output::Http { zone, action, uri, method, headers, event, secret } => {
                    self.request(&zone, action, &actions::Request { uri, method, headers, event, secret });
                }
                _ => {}
            }
        }
        self.store_events().await;
        for output in acts {
            match output {
                // Stored above.
                Output::Publish(_) | Output::Http { .. } => {}
                Output::Entered(c) => self.collision(collisions::Change::Entered(c)),
                Output::Exited { zone, mac } => self.collision(collisions::Change::Exited(zone, mac)),
                Output::Source(hint) => {
                    let subject = self.subjects.source_position(hint.mac.as_str());
                    let Ok(payload) = serde_json::to_vec(&hint) else { continue };
                    if let Err(e) = self.bus.publish(subject, payload.into()).await {
                        tracing::warn!(error = %e, mac = %hint.mac.as_str(), "mobile-zone source position not told to the other evaluators");
                    }
                }
            }
        }
    }

    /// Sends a collision change to the writer.
    fn collision(&mut self, change: collisions::Change) {
        if self.collisions.send(change).is_ok() {
            self.collision_changes += 1;
        }
    }

    /// Counts and logs an event and adds it to the records to store.
    fn record(&mut self, event: &zonecast_model::Event) {
        let kind = event.kind();
        metrics::counter!("zonecast_evaluator_events_total", "type" => kind.as_str()).increment(1);
        log_event(event);
        let Some(subject) = self.subjects.of_event(event) else {
            tracing::error!(r#type = kind.as_str(), "event without a subject not published");
            return;
        };
        match serde_json::to_vec(event) {
            // Shrunk to its length: the journal holds it until every consumer has it, and the
            // buffer's doubling would leave a third of it unused.
            Ok(payload) => self.records.push(Record {
                subject,
                payload: payload.into_boxed_slice().into(),
                id: event.event_id.to_string(),
            }),
            Err(e) => tracing::error!(error = %e, "cannot encode event"),
        }
    }

    /// Adds the request of an http-request action to the records to store.
    fn request(&mut self, zone: &uuid::Uuid, action: usize, request: &actions::Request) {
        match request.record(&self.subjects, zone, action) {
            Ok(record) => self.requests.push(record),
            Err(reason) => {
                metrics::counter!("zonecast_evaluator_http_actions_total", "outcome" => "failed").increment(1);
                tracing::error!(%reason, "http-request action not stored");
            }
        }
    }

    /// Appends the events gathered by [`Shell::emit`], then the action requests, to the
    /// journal in one call, trying again for a while when it cannot store them (NATS or
    /// JetStream away); what still cannot be stored is counted (events in
    /// `zonecast_evaluator_publish_failures_total`, requests as `outcome="lost"`) and logged.
    async fn store_events(&mut self) {
        if self.records.is_empty() && self.requests.is_empty() {
            return;
        }
        let mut records = std::mem::take(&mut self.records);
        let count = records.len() as u64;
        let requests = self.requests.len() as u64;
        records.append(&mut self.requests);
        let mut delay = Duration::from_millis(50);
        let mut last_error = None;
        for _ in 0..STORE_TRIES {
            match self.journal.append(records.clone()).await {
                Ok(()) => return,
                Err(e) => last_error = Some(e),
            }
            tokio::time::sleep(delay).await;
            delay *= 2;
        }
        metrics::counter!("zonecast_evaluator_publish_failures_total").increment(count);
        metrics::counter!("zonecast_evaluator_http_actions_total", "outcome" => "lost").increment(requests);
        if let (Some(held_back), Some(e)) = (self.publish_log.allow(), last_error) {
            tracing::error!(error = %e, events = count, requests, held_back, "events not stored: lost");
        }
    }
}

/// Tries to store a batch of events: with doubling delays from 50 ms, about 3 s in all.
const STORE_TRIES: u32 = 6;

/// The log lines of an event: every entry at debug (target `zonecast::entry`; entries are
/// events, kept in the journal and history, and would flood an operator's log at info), and the
/// message of every info event at info (target `zonecast::zone_info`: writing that message is
/// the action its zone asks for).
fn log_event(event: &zonecast_model::Event) {
    let mac = event.source.mac.as_ref().map_or("", |m| m.as_str());
    match &event.content {
        Content::ZoneEnter(c) => tracing::debug!(
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
