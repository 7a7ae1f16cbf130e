//! Positions from an RTLS broker: one MQTT subscription (QoS 1) to the configured topic
//! filters, resubscribed on every reconnect, with capped exponential backoff while the broker
//! is away. Payloads go through the same normalisation as every other input.

use std::sync::Arc;
use std::time::Duration;

use rumqttc::{AsyncClient, Event, MqttOptions, Packet, QoS, TlsConfiguration, Transport};
use zonecast_ingest::Publisher;
use zonecast_runtime::backoff::Backoff;
use zonecast_runtime::ratelog::RateLimited;
use zonecast_runtime::{Secret, Shutdown};

use crate::MqttInputConfig;

/// The MQTT input is misconfigured.
#[derive(Debug, thiserror::Error)]
pub enum MqttInputError {
    /// `ZONECAST_INGEST_MQTT_URL` does not parse.
    #[error("ZONECAST_INGEST_MQTT_URL: {0}")]
    Url(String),
    /// The CA file cannot be used.
    #[error("ZONECAST_INGEST_MQTT_CA: {0}")]
    Ca(String),
}

/// Where and what to subscribe.
pub struct MqttInput {
    host: String,
    port: u16,
    tls: Option<Arc<rustls::ClientConfig>>,
    username: Option<String>,
    password: Option<Secret>,
    topics: Vec<String>,
}

impl std::fmt::Debug for MqttInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MqttInput")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("tls", &self.tls.is_some())
            .field("username", &self.username)
            .field("topics", &self.topics)
            .finish()
    }
}

impl MqttInput {
    /// The input `config` describes.
    pub fn from_config(config: &MqttInputConfig) -> Result<Self, MqttInputError> {
        let url = url::Url::parse(config.url.expose()).map_err(|e| MqttInputError::Url(e.to_string()))?;
        let (tls, default_port) = match url.scheme() {
            "mqtt" | "tcp" => (false, 1883),
            "mqtts" | "ssl" => (true, 8883),
            other => return Err(MqttInputError::Url(format!("scheme '{other}' (use mqtt:// or mqtts://)"))),
        };
        let host = url.host_str().ok_or_else(|| MqttInputError::Url("no host".into()))?.to_owned();
        let decode =
            |s: &str| url::form_urlencoded::parse(s.as_bytes()).map(|(k, _)| k.into_owned()).collect::<String>();
        let username = (!url.username().is_empty()).then(|| decode(url.username()));
        let password = url.password().map(|p| Secret::new(decode(p)));
        let tls = if tls {
            let path = config.ca.as_ref().ok_or_else(|| MqttInputError::Ca("is required for mqtts://".into()))?;
            let pem = std::fs::read(path).map_err(|e| MqttInputError::Ca(format!("{}: {e}", path.display())))?;
            let roots = zonecast_tls::parse_ca(&pem).map_err(|e| MqttInputError::Ca(e.to_string()))?;
            let client = zonecast_tls::client_builder()
                .map_err(|e| MqttInputError::Ca(e.to_string()))?
                .with_root_certificates(roots)
                .with_no_client_auth();
            Some(Arc::new(client))
        } else {
            None
        };
        Ok(Self {
            host,
            port: url.port().unwrap_or(default_port),
            tls,
            username,
            password,
            topics: config.topics.clone(),
        })
    }

    /// A plain input, for tests and tools.
    pub fn plain(host: &str, port: u16, topics: Vec<String>) -> Self {
        Self { host: host.to_owned(), port, tls: None, username: None, password: None, topics }
    }

    /// Subscribes and publishes what arrives until `shutdown`.
    pub fn start(self, publisher: Publisher, shutdown: Shutdown) -> tokio::task::JoinHandle<()> {
        let mut options =
            MqttOptions::new(format!("zonecast-ingestor-{}", uuid::Uuid::new_v4().simple()), &self.host, self.port);
        options.set_keep_alive(Duration::from_secs(30)).set_clean_session(true).set_max_packet_size(8 << 20, 8 << 20);
        if let Some(user) = &self.username {
            options.set_credentials(
                user.clone(),
                self.password.as_ref().map(|p| p.expose().to_owned()).unwrap_or_default(),
            );
        }
        if let Some(tls) = &self.tls {
            options.set_transport(Transport::tls_with_config(TlsConfiguration::Rustls(tls.clone())));
        }
        let (client, mut events) = AsyncClient::new(options, 1024);
        let mut network = events.network_options();
        network.set_tcp_nodelay(true);
        events.set_network_options(network);
        tokio::spawn(async move {
            let mut log = RateLimited::new(crate::LOG_EVERY);
            let mut error_log = RateLimited::new(crate::LOG_EVERY);
            let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(10));
            tracing::info!(input = ?self, "MQTT position input starting");
            loop {
                tokio::select! {
                    biased;
                    () = shutdown.cancelled() => {
                        let _ = client.try_disconnect();
                        break;
                    }
                    event = events.poll() => match event {
                        Ok(Event::Incoming(Packet::ConnAck(_))) => {
                            backoff.reset();
                            metrics::gauge!("zonecast_ingest_mqtt_connected").set(1.0);
                            tracing::info!(host = %self.host, port = self.port, "MQTT position input connected");
                            for topic in &self.topics {
                                if let Err(e) = client.try_subscribe(topic.clone(), QoS::AtLeastOnce) {
                                    tracing::warn!(%topic, error = %e, "cannot subscribe");
                                }
                            }
                        }
                        Ok(Event::Incoming(Packet::Publish(p))) => {
                            // While the pipeline is behind, this waits and the broker holds
                            // what comes next.
                            super::ingest(&publisher, &p.payload, "mqtt", &mut log).await;
                        }
                        Ok(_) => {}
                        Err(e) => {
                            metrics::gauge!("zonecast_ingest_mqtt_connected").set(0.0);
                            if let Some(held_back) = error_log.allow() {
                                tracing::warn!(host = %self.host, port = self.port, error = %e, held_back, "MQTT position input disconnected; retrying");
                            }
                            tokio::select! {
                                () = shutdown.cancelled() => break,
                                () = tokio::time::sleep(backoff.next_delay()) => {}
                            }
                        }
                    },
                }
            }
        })
    }
}
