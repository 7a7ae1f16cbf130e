//! Each service's own settings: the API's, the ingestor's MQTT input, the evaluator's and the
//! forwarder's.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::{Check, secret, split_list};
use crate::config::{ApiSettings, EvaluatorSettings, ForwarderSettings, MqttInputConfig};

/// The API's own settings.
#[derive(Args)]
#[command(next_help_heading = "API")]
pub struct ApiArgs {
    /// Most MQTT connections that may exist (1-10000); each holds a client and a queue in every
    /// forwarder.
    #[arg(long, env = "ZONECAST_MAX_CONNECTIONS", value_name = "N", default_value = "100")]
    pub(super) max_connections: String,
    /// How long a configuration write waits, at most, for every live evaluator and forwarder to
    /// have it in force before the API answers (0-60000 ms; 0 answers at once).
    #[arg(long, env = "ZONECAST_APPLY_WAIT_MS", value_name = "MS", default_value = "2000")]
    pub(super) apply_wait_ms: String,
    /// How many events a live stream's client (`GET /v3/events/stream`) may fall behind the
    /// newest (1-1000000); past it the client gets `event: lagged` and the stream ends.
    #[arg(long, env = "ZONECAST_STREAM_BUFFER", value_name = "N", default_value = "5000")]
    pub(super) stream_buffer: String,
    /// Longest silence of a live stream before a `: keep-alive` comment (100-3600000 ms).
    #[arg(long, env = "ZONECAST_STREAM_HEARTBEAT_MS", value_name = "MS", default_value = "15000")]
    pub(super) stream_heartbeat_ms: String,
    /// Most positions per second a position stream (`GET /v3/positions/stream`) sends of one
    /// device (1-50); the newest of each device is sent at the next tick.
    #[arg(long, env = "ZONECAST_STREAM_POSITION_HZ", value_name = "HZ", default_value = "5")]
    pub(super) stream_position_hz: String,
    /// Origins (`https://host[:port]`, comma-separated, or `*`) whose pages may open the live
    /// streams from a browser; none by default (same origin only).
    #[arg(long, env = "ZONECAST_CORS_ORIGINS", value_name = "ORIGINS", default_value = "")]
    pub(super) cors_origins: String,
}

impl ApiArgs {
    pub(super) fn check(&self, c: &mut Check<'_>) -> ApiSettings {
        ApiSettings {
            max_connections: c.within("max_connections", &self.max_connections, 1, 10_000),
            apply_wait: std::time::Duration::from_millis(c.within("apply_wait_ms", &self.apply_wait_ms, 0, 60_000)),
            stream_buffer: c.within("stream_buffer", &self.stream_buffer, 1, 1_000_000),
            stream_heartbeat: std::time::Duration::from_millis(c.within(
                "stream_heartbeat_ms",
                &self.stream_heartbeat_ms,
                100,
                3_600_000,
            )),
            stream_position_hz: c.within("stream_position_hz", &self.stream_position_hz, 1, 50),
            cors_origins: self
                .cors_origins
                .split(',')
                .map(str::trim)
                .filter(|o| !o.is_empty())
                .map(str::to_owned)
                .collect(),
        }
    }
}

/// The ingestor's MQTT input.
#[derive(Args)]
#[command(next_help_heading = "MQTT position input")]
pub struct MqttArgs {
    /// RTLS broker to take positions from, e.g. `mqtt://user:pass@host:1883` or
    /// `mqtts://host:8883`; may carry credentials. Off when unset.
    #[arg(long, env = "ZONECAST_INGEST_MQTT_URL", value_name = "URL", hide_env_values = true)]
    pub(super) ingest_mqtt_url: Option<String>,
    /// Topic filters to subscribe, comma-separated (wildcards allowed); required with the URL.
    #[arg(long, env = "ZONECAST_INGEST_MQTT_TOPICS", value_name = "FILTERS")]
    pub(super) ingest_mqtt_topics: Option<String>,
    /// PEM file of the CA that signed the broker's certificate (`mqtts://` only).
    #[arg(long, env = "ZONECAST_INGEST_MQTT_CA", value_name = "FILE")]
    pub(super) ingest_mqtt_ca: Option<PathBuf>,
}

impl MqttArgs {
    pub(super) fn check(&self, c: &mut Check<'_>) -> Option<MqttInputConfig> {
        let topics: Vec<String> =
            split_list(self.ingest_mqtt_topics.as_deref().unwrap_or_default()).map(str::to_owned).collect();
        let url = secret(&self.ingest_mqtt_url)?;
        if topics.is_empty() {
            c.bad("ingest_mqtt_topics", "is required when ZONECAST_INGEST_MQTT_URL is set");
        }
        Some(MqttInputConfig { url, topics, ca: self.ingest_mqtt_ca.clone() })
    }
}

/// The evaluator's own settings.
#[derive(Args)]
#[command(next_help_heading = "Evaluator")]
pub struct EvaluatorArgs {
    /// Inclusive partition range this evaluator owns, e.g. `0-7` (all when unset).
    #[arg(long, env = "ZONECAST_EVALUATOR_PARTITIONS", value_name = "RANGE")]
    pub(super) evaluator_partitions: Option<String>,
    /// How long an http-request zone action is retried after its first try failed, in seconds
    /// (0-86400; 0 sends once): connection errors, timeouts, 408, 429 and 5xx are retried with
    /// exponential backoff, other answers are final.
    #[arg(long, env = "ZONECAST_HTTP_ACTION_RETRY_FOR", value_name = "SECONDS", default_value = "3600")]
    pub(super) http_action_retry_for: String,
}

impl EvaluatorArgs {
    pub(super) fn check(&self, c: &mut Check<'_>, partitions: u32) -> EvaluatorSettings {
        let retry_for = c.within("http_action_retry_for", &self.http_action_retry_for, 0, 86_400);
        let settings =
            EvaluatorSettings { http_action_retry_for: Duration::from_secs(retry_for), ..EvaluatorSettings::default() };
        let Some(raw) = self.evaluator_partitions.as_deref() else { return settings };
        let (a, b) = raw.trim().split_once('-').unwrap_or((raw.trim(), raw.trim()));
        let (Ok(lo), Ok(hi)) = (a.trim().parse::<u32>(), b.trim().parse::<u32>()) else {
            c.bad("evaluator_partitions", format!("'{raw}': expected a partition or a range such as 0-7"));
            return settings;
        };
        if lo > hi {
            c.bad("evaluator_partitions", format!("'{raw}': start after end"));
        } else if hi >= partitions {
            c.bad("evaluator_partitions", format!("range ends at {hi} but there are {partitions} partitions"));
        }
        EvaluatorSettings { partitions: Some((lo, hi)), ..settings }
    }
}

/// The forwarder's own settings.
#[derive(Args)]
#[command(next_help_heading = "Forwarder")]
pub struct ForwarderArgs {
    /// Messages one MQTT connection holds while its broker is away (1-10000000); beyond it the
    /// oldest is dropped and counted.
    #[arg(long, env = "ZONECAST_FORWARDER_QUEUE", value_name = "N", default_value = "10000")]
    pub(super) forwarder_queue: String,
}

impl ForwarderArgs {
    pub(super) fn check(&self, c: &mut Check<'_>) -> ForwarderSettings {
        ForwarderSettings { queue: c.within("forwarder_queue", &self.forwarder_queue, 1, 10_000_000) }
    }
}
