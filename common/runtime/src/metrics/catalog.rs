//! Every metric zonecast serves, in one list: the recorder describes each from it (`# HELP`,
//! `# TYPE`), gives its histograms their buckets, the services register their series at 0 from
//! it, and the metrics table of `docs/operations.md` is written from it.

use metrics::Unit;

/// What a metric is, as its `# TYPE` line says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Only goes up (from 0 at start).
    Counter,
    /// A value that goes up and down.
    Gauge,
    /// Observations counted into cumulative buckets (`_bucket{le}`, `_sum`, `_count`).
    Histogram,
}

impl Kind {
    /// The name in `# TYPE` lines.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Counter => "counter",
            Self::Gauge => "gauge",
            Self::Histogram => "histogram",
        }
    }
}

/// The part of zonecast that serves a metric; the all-in-one serves those of every part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// Every process (`zonecast_build_info`, `process_*`).
    Process,
    /// Every process connected to NATS.
    Nats,
    /// `zonecast-api`.
    Api,
    /// `zonecast-ingestor` (in the all-in-one, with the API's position input).
    Ingestor,
    /// `zonecast-evaluator`.
    Evaluator,
    /// `zonecast-forwarder`.
    Forwarder,
}

/// From when a metric's series are served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presence {
    /// From start, at 0 (with every label value known at start).
    Start,
    /// From start when the MQTT position input is configured.
    MqttInput,
    /// Once the replica has an MQTT connection (one series per connection).
    Connection,
    /// Once the replica has answered a request (one series per operation and status).
    Request,
}

/// One metric.
#[derive(Debug, Clone, Copy)]
pub struct Metric {
    /// The name, as served.
    pub name: &'static str,
    /// Counter, gauge or histogram.
    pub kind: Kind,
    /// Its unit, when it has one.
    pub unit: Option<Unit>,
    /// Who serves it.
    pub owners: &'static [Owner],
    /// From when.
    pub presence: Presence,
    /// Its labels and their values, as documented (empty when it has none).
    pub labels: &'static str,
    /// What it counts or measures: its `# HELP` text and its meaning in the documentation.
    pub help: &'static str,
    /// Whether it counts positions, events or requests that were lost, skipped, refused or
    /// failed: each such metric has an alert in `deploy/prometheus/zonecast-alerts.yml`.
    pub loss: bool,
}

/// The buckets (seconds) of every latency and lag histogram: from 1 ms, where positions are
/// evaluated, to 10 s, where a pipeline is far behind.
pub const LATENCY_BUCKETS: &[f64] = &[0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

use Kind::{Counter, Gauge, Histogram};
use Owner::{Api, Evaluator, Forwarder, Ingestor, Nats, Process};
use Presence::{Connection, MqttInput, Request, Start};

const fn m(
    name: &'static str,
    kind: Kind,
    owners: &'static [Owner],
    labels: &'static str,
    help: &'static str,
) -> Metric {
    Metric { name, kind, unit: None, owners, presence: Start, labels, help, loss: false }
}

impl Metric {
    const fn unit(self, unit: Unit) -> Self {
        Self { unit: Some(unit), ..self }
    }
    const fn from(self, presence: Presence) -> Self {
        Self { presence, ..self }
    }
    const fn loss(self) -> Self {
        Self { loss: true, ..self }
    }
    /// The buckets of a histogram (none for other kinds).
    pub const fn buckets(&self) -> &'static [f64] {
        match self.kind {
            Histogram => LATENCY_BUCKETS,
            _ => &[],
        }
    }
}

const INPUT: &str = "`input` (`http`, `nats`, `mqtt` when configured; `demo` for the demo site)";

/// Every metric zonecast serves.
pub static CATALOG: &[Metric] = &[
    m("zonecast_build_info", Gauge, &[Process], "`binary`, `version`", "always 1: the running binary and its version"),
    m("process_cpu_seconds_total", Counter, &[Process], "", "CPU time the process used, user and system")
        .unit(Unit::Seconds),
    m("process_resident_memory_bytes", Gauge, &[Process], "", "resident memory of the process").unit(Unit::Bytes),
    m("process_virtual_memory_bytes", Gauge, &[Process], "", "virtual memory of the process").unit(Unit::Bytes),
    m("process_start_time_seconds", Gauge, &[Process], "", "when the process started, in seconds since the Unix epoch")
        .unit(Unit::Seconds),
    m("process_open_fds", Gauge, &[Process], "", "file descriptors the process has open"),
    m("process_max_fds", Gauge, &[Process], "", "the most file descriptors the process may open"),
    m("process_threads", Gauge, &[Process], "", "threads of the process"),
    m("zonecast_api_requests_total", Counter, &[Api], "`operation`, `status`", "requests answered, by operation and status")
        .from(Request),
    m("zonecast_api_request_seconds", Histogram, &[Api], "`operation`", "time from a request's arrival to its answer")
        .unit(Unit::Seconds)
        .from(Request),
    m("zonecast_api_announce_failures_total", Counter, &[Api], "",
        "committed writes that could not be logged in the change log or announced on config.changed").loss(),
    m("zonecast_api_alarm_change_events_lost_total", Counter, &[Api], "",
        "alarm acknowledgements and resolutions stored but whose event could not be stored in the event journal within 5 s (missing from the streams, the history and MQTT)").loss(),
    m("zonecast_api_alarm_events_lost_total", Counter, &[Api], "",
        "alarm events that left the event journal (older than ZONECAST_EVENT_RETENTION_SECS, or beyond its size) before any API recorded them: no alarm row, counted by every API replica that looks").loss(),
    m("zonecast_api_alarm_raises_total", Counter, &[Api], "`type` (`SITE_ALARM`, `DEVICE_ALARM`, … every alarm type)",
        "alarm events recorded (each once, whatever the copies): those that opened an alarm and those counted on the unresolved alarm of their condition"),
    m("zonecast_api_alarms_opened_total", Counter, &[Api], "`type` (`SITE_ALARM`, `DEVICE_ALARM`, … every alarm type)",
        "new alarms: alarm events for a condition with no unresolved alarm (the figure the alarm-management standards bound, at most 10 per operator in 10 minutes)"),
    m("zonecast_api_alarm_raises_shelved_total", Counter, &[Api], "`type` (`SITE_ALARM`, `DEVICE_ALARM`, … every alarm type)",
        "alarm events of a zone or device shelved when they were raised: they opened no alarm and counted on none"),
    m("zonecast_api_apply_wait_timeouts_total", Counter, &[Api], "",
        "writes answered before every live evaluator and forwarder had them in force (ZONECAST_APPLY_WAIT_MS ran out)"),
    m("zonecast_api_streams_open", Gauge, &[Api], "", "live event and position streams open on this replica"),
    m("zonecast_api_streams_lagged_total", Counter, &[Api], "",
        "live event streams ended with event: lagged, their client having fallen more than ZONECAST_STREAM_BUFFER events behind, or the events it was to read next having left the journal").loss(),
    m("zonecast_api_position_streams_lagged_total", Counter, &[Api], "",
        "event: lagged messages of position streams: their client could not take a tick when it came and got each device's newest position later, in one frame").loss(),
    m("zonecast_api_write_conflicts_total", Counter, &[Api], "",
        "zone writes redone because a concurrent write changed the zone first"),
    m("zonecast_ingest_accepted_total", Counter, &[Ingestor], INPUT, "positions taken"),
    m("zonecast_ingest_rejected_total", Counter, &[Ingestor], INPUT,
        "positions refused as malformed or out of bounds").loss(),
    m("zonecast_ingest_publish_failures_total", Counter, &[Ingestor], INPUT,
        "payloads not published because the bus was down").loss(),
    m("zonecast_ingest_refused_total", Counter, &[Ingestor], INPUT,
        "payloads refused with 503 because the pipeline stayed further behind than ZONECAST_INGEST_MAX_LAG_MS, or (all-in-one) too many positions waited in its queues, for the whole ZONECAST_INGEST_HOLD_MS").loss(),
    m("zonecast_ingest_dropped_total", Counter, &[Ingestor], "`input` (`nats`)",
        "payloads on the NATS ingest subject dropped unread because the input was behind its publishers: its buffer (ZONECAST_INGEST_NATS_BUFFER_BYTES) was full, or before it the NATS client's queue for the subscription (65,536 messages); core NATS cannot slow a publisher down").loss(),
    m("zonecast_ingest_holds_total", Counter, &[Ingestor], "`input` (`http`, `nats`, `mqtt` when configured)",
        "times an input waited for the pipeline to catch up before taking its next payload (HTTP: held a request)"),
    m("zonecast_ingest_partitions_unowned", Gauge, &[Ingestor], "",
        "position partitions no live evaluator follows, as this ingestor sees the evaluators' lease bucket: their positions wait in the stream until an evaluator claims them; always 0 in the all-in-one"),
    m("zonecast_ingest_mqtt_connected", Gauge, &[Ingestor], "", "MQTT position input connected (1) or not (0)")
        .from(MqttInput),
    m("zonecast_pipeline_lag_seconds", Gauge, &[Evaluator, Forwarder],
        "`stage` (`evaluator`, `forwarder`); `partitions` (`lo-hi`, evaluators only)",
        "this replica's lag as it reports it on <prefix>.pipeline.lag, each evaluator with the partitions it owns")
        .unit(Unit::Seconds),
    m("zonecast_bus_slow_consumer_total", Counter, &[Nats], "",
        "messages the NATS client dropped for this process's subscriptions because their queue (65,536 messages) was full (for the ingest subject also in zonecast_ingest_dropped_total; the NATS server counts what it drops itself in its slow_consumers)").loss(),
    m("zonecast_evaluator_positions_total", Counter, &[Evaluator], "", "positions evaluated"),
    m("zonecast_evaluator_lag_seconds", Histogram, &[Evaluator], "",
        "position timestamp to evaluation, the pipeline's lag: one observation per batch of positions taken from the bus together (up to 256), their largest")
        .unit(Unit::Seconds),
    m("zonecast_evaluator_events_total", Counter, &[Evaluator], "`type` (`ZONE_ENTER`, `ZONE_EXIT`, … every event type)",
        "events produced"),
    m("zonecast_evaluator_bad_messages_total", Counter, &[Evaluator], "", "malformed position messages skipped").loss(),
    m("zonecast_evaluator_position_batches_skipped_total", Counter, &[Evaluator], "",
        "over NATS, stored messages of positions that left the position stream (older than ZONECAST_POSITION_RETENTION_SECS, or beyond its size) before the evaluator took them, counted by each partition that needed them: lost, each skip logged with its partition").loss(),
    m("zonecast_evaluator_positions_out_of_order_total", Counter, &[Evaluator], "",
        "positions older than the last one applied for their device, skipped").loss(),
    m("zonecast_evaluator_devices", Gauge, &[Evaluator], "`partitions` (`lo-hi`, or `claimed`)",
        "devices with state in the evaluator owning these partitions; the site's count is their sum"),
    m("zonecast_evaluator_partitions_owned", Gauge, &[Evaluator], "`partitions` (`lo-hi`, or `claimed`)",
        "position partitions the evaluator owns and evaluates now"),
    m("zonecast_evaluator_rebalances_total", Counter, &[Evaluator], "",
        "times the evaluator claimed partitions or was told to hand some over"),
    m("zonecast_evaluator_handover_seconds", Histogram, &[Evaluator], "",
        "from being told to hand partitions over to having given them back (their collisions written)"),
    m("zonecast_evaluator_fenced_writes_total", Counter, &[Evaluator], "",
        "collision writes the store refused: another evaluator owns the partitions now (their changes dropped; the new owner evaluates them again)"),
    m("zonecast_evaluator_publish_failures_total", Counter, &[Evaluator], "",
        "tries to store events in the journal that failed (NATS or JetStream away, a stream electing a new leader); the evaluator tries again until they are stored, holding back its positions meanwhile").loss(),
    m("zonecast_evaluator_collision_write_failures_total", Counter, &[Evaluator], "",
        "collision batches whose write failed and was tried again (store trouble)").loss(),
    m("zonecast_evaluator_occupancy_failures_total", Counter, &[Evaluator], "",
        "counts of zones with occupancy limits that failed (store or journal trouble); tried again after the next collision write, the store keeping every change until its event is stored").loss(),
    m("zonecast_evaluator_config_read_failures_total", Counter, &[Evaluator], "",
        "attempts to read configuration changes that failed (tried again a second later)").loss(),
    m("zonecast_evaluator_http_actions_unstored_total", Counter, &[Evaluator], "",
        "requests of http-request actions the evaluator could not store in the journal (their secret was not sealed): never sent").loss(),
    m("zonecast_evaluator_reloads_total", Counter, &[Evaluator], "",
        "full reloads of the configuration (at start-up, and for a burst that mixes zone changes with other kinds or names no zone)"),
    m("zonecast_evaluator_zone_patches_total", Counter, &[Evaluator], "",
        "bursts of zone writes applied incrementally: only the named zones read and prepared again"),
    m("zonecast_evaluator_parameter_reloads_total", Counter, &[Evaluator], "",
        "reloads of all settings and radii alone, over the same zones and scene"),
    m("zonecast_evaluator_radius_patches_total", Counter, &[Evaluator], "",
        "bursts of radius writes applied incrementally: only the named devices' radii read and reconciled"),
    m("zonecast_evaluator_changes_coalesced_total", Counter, &[Evaluator], "",
        "configuration changes applied together with an earlier one of their burst"),
    m("zonecast_forwarder_events_total", Counter, &[Forwarder], "", "events taken from the journal (once per connection)"),
    m("zonecast_forwarder_positions_total", Counter, &[Forwarder], "", "positions taken from the bus"),
    m("zonecast_forwarder_routed_total", Counter, &[Forwarder], "", "messages routed to topics (one per matching topic)"),
    m("zonecast_forwarder_bad_messages_total", Counter, &[Forwarder], "", "payloads taken that are no event or position, skipped")
        .loss(),
    m("zonecast_forwarder_reloads_total", Counter, &[Forwarder], "", "reloads of the MQTT connections' configuration"),
    m("zonecast_forwarder_status_failures_total", Counter, &[Forwarder], "",
        "connection status rows that could not be written (store trouble; written again next round)"),
    m("zonecast_forwarder_forwarded_total", Counter, &[Forwarder], "`connection`", "messages acknowledged by the broker")
        .from(Connection),
    m("zonecast_forwarder_dropped_total", Counter, &[Forwarder], "`connection`",
        "messages given up on: events that left the journal unsent, events too large, positions past the queue bound")
        .from(Connection)
        .loss(),
    m("zonecast_forwarder_queued", Gauge, &[Forwarder], "`connection`", "the connection's journal backlog plus positions queued")
        .from(Connection),
    m("zonecast_forwarder_connected", Gauge, &[Forwarder], "`connection`", "broker connected (1) or not (0)")
        .from(Connection),
    m("zonecast_forwarder_http_actions_total", Counter, &[Forwarder], "`outcome` (`success`, `failed`, `expired`, `lost`)",
        "http-request actions by final outcome: delivered; refused by a final answer or not sendable (secret cannot be unsealed); still failing when ZONECAST_HTTP_ACTION_RETRY_FOR ran out; never sent, because it left the journal before it was delivered (every replica counts the losses it sees of the shared consumer)").loss(),
    m("zonecast_forwarder_http_actions_interrupted_total", Counter, &[Forwarder], "",
        "requests waiting for a try when their forwarder stopped: no loss, they stay in the journal and are sent again after the restart or by another replica"),
    m("zonecast_forwarder_http_action_retries_total", Counter, &[Forwarder], "",
        "tries of http-request actions after a first one failed"),
];

/// The metric named `name`.
pub fn find(name: &str) -> Option<&'static Metric> {
    CATALOG.iter().find(|m| m.name == name)
}

/// The metrics table of `docs/operations.md`, one row per metric.
pub fn markdown_table() -> String {
    let mut out = String::from("| Metric | Type | Labels | Meaning | Buckets (s) |\n|---|---|---|---|---|\n");
    for metric in CATALOG {
        let buckets = metric.buckets().iter().map(f64::to_string).collect::<Vec<_>>().join(", ");
        let help = metric.help.replace('|', "\\|");
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {buckets} |\n",
            metric.name,
            metric.kind.as_str(),
            metric.labels,
            help
        ));
    }
    out
}
