//! The NATS bus: async-nats behind the [`Bus`] trait, with the same subject checks as the
//! in-process bus and a flush that is confirmed by the server.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use async_nats::client::PublishErrorKind;
use async_nats::connection::State;
use bytes::Bytes;
use futures::StreamExt;

use crate::pattern::{validate_pattern, validate_queue_group, validate_subject};
use crate::{Bus, BusError, Input, Message, Subscription};

/// How long the first connection attempt may take before start-up fails.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a flush waits for the server to echo its probe message.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(10);

/// A [`Bus`] on a NATS server.
///
/// The first connection must succeed (start-up fails fast otherwise); after that async-nats
/// reconnects on its own, buffering publishes meanwhile, and [`Bus::is_connected`] reports the
/// gap.
#[derive(Clone, Debug)]
pub struct NatsBus {
    client: async_nats::Client,
    /// The server URL without credentials, for logs and errors.
    url: String,
    /// What opens the connections of inputs ([`Bus::input_subscribe`]).
    opener: Opener,
    drained: Arc<AtomicBool>,
}

/// The URL (credentials included) and client name a connection is opened with.
#[derive(Clone)]
struct Opener {
    url: Arc<str>,
    name: Arc<str>,
}

impl std::fmt::Debug for Opener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Opener").field("url", &redact_url(&self.url)).field("name", &self.name).finish()
    }
}

impl Opener {
    /// Opens a connection on which each message the client drops for a full subscription queue
    /// counts in `zonecast_bus_slow_consumer_total` and in `dropped`.
    async fn open(&self, name: &str, dropped: Arc<AtomicU64>) -> Result<async_nats::Client, BusError> {
        let url = &*self.url;
        // A comma-separated list names several servers of one cluster: the client connects to
        // any of them, and moves to another when its server goes away.
        let servers: Vec<&str> = servers(url).collect();
        // Used when the URL (`tls://`) or the server asks for TLS: the operating system's roots,
        // as async-nats would trust, on zonecast's crypto provider.
        let tls = zonecast_tls::native_roots_config()
            .map_err(|e| BusError::Connect { url: redact_url(url), reason: format!("TLS configuration: {e}") })?;
        async_nats::ConnectOptions::new()
            .name(name)
            .tls_client_config(tls)
            .connection_timeout(CONNECT_TIMEOUT)
            .event_callback(move |event| {
                let dropped = dropped.clone();
                async move {
                    // The client drops a message for a subscription whose queue is full and
                    // reports each drop: counted, as the loss it is.
                    match event {
                        async_nats::Event::SlowConsumer(_) => {
                            metrics::counter!("zonecast_bus_slow_consumer_total").increment(1);
                            dropped.fetch_add(1, Ordering::Relaxed);
                        }
                        // The client's own line for each event is held back below warnings
                        // (the default filter), so that a flood of drops does not flood the log.
                        async_nats::Event::Connected => tracing::info!("NATS connection (re)established"),
                        async_nats::Event::Disconnected => tracing::warn!("NATS connection lost; reconnecting"),
                        other => tracing::info!(event = %other, "NATS client event"),
                    }
                }
            })
            .connect(servers)
            .await
            .map_err(|err| BusError::Connect { url: redact_url(url), reason: scrub_credentials(&err.to_string(), url) })
    }
}

impl NatsBus {
    /// Connects to the server at `url` (credentials may be embedded in it), announcing itself as
    /// `client_name`. `url` may list several servers of a cluster, separated by commas
    /// (`nats://a:4222,nats://b:4222`): the connection is made to one of them, and moves to
    /// another when that one goes away.
    ///
    /// Fails with [`BusError::Connect`], naming the URL without its credentials, when the server
    /// cannot be reached within a few seconds.
    pub async fn connect(url: &str, client_name: &str) -> Result<Self, BusError> {
        let redacted = redact_url(url);
        let opener = Opener { url: url.into(), name: client_name.into() };
        let client = opener.open(client_name, Arc::default()).await?;
        tracing::info!(url = %redacted, client = client_name, "connected to NATS");
        // At 0 from the connection on, so that an alert on its increase can fire.
        metrics::counter!("zonecast_bus_slow_consumer_total").increment(0);
        Ok(Self { client, url: redacted, opener, drained: Arc::new(AtomicBool::new(false)) })
    }

    /// The server URL this bus connected to, without credentials.
    pub fn url(&self) -> &str {
        &self.url
    }

    fn ensure_open(&self) -> Result<(), BusError> {
        if self.drained.load(Ordering::Acquire) {
            return Err(BusError::Closed);
        }
        Ok(())
    }

    /// Sends a probe to a private inbox and waits for the server to deliver it back.
    ///
    /// async-nats' own `flush` only writes the socket buffer. The server handles one
    /// connection's commands in order, so the echo proves that every earlier publish and
    /// subscription of this connection has been processed, and that messages it routed back to
    /// this connection's subscriptions have already been received.
    async fn round_trip(&self) -> Result<(), BusError> {
        self.round_trip_on(&self.client).await
    }

    /// [`NatsBus::round_trip`] on `client`'s connection.
    async fn round_trip_on(&self, client: &async_nats::Client) -> Result<(), BusError> {
        let inbox = client.new_inbox();
        let mut probe = client.subscribe(inbox.clone()).await.map_err(|err| BusError::Flush(err.to_string()))?;
        client.publish(inbox, Bytes::new()).await.map_err(publish_error)?;
        client.flush().await.map_err(|err| BusError::Flush(err.to_string()))?;
        match tokio::time::timeout(FLUSH_TIMEOUT, probe.next()).await {
            Ok(Some(_)) => Ok(()),
            Ok(None) => Err(BusError::Closed),
            Err(_) => Err(BusError::Flush(format!("NATS at {} did not confirm within {FLUSH_TIMEOUT:?}", self.url))),
        }
    }

    async fn add(&self, subject: &str, group: Option<&str>) -> Result<Subscription, BusError> {
        validate_pattern(subject)?;
        if let Some(group) = group {
            validate_queue_group(group)?;
        }
        self.ensure_open()?;
        let subscriber = match group {
            Some(group) => self.client.queue_subscribe(subject.to_owned(), group.to_owned()).await,
            None => self.client.subscribe(subject.to_owned()).await,
        }
        .map_err(|err| BusError::Subscribe(err.to_string()))?;
        // Wait until the server has registered the interest, so that, as in-process, a message
        // published by anyone after this returns reaches the subscription.
        self.round_trip().await?;
        Ok(Box::pin(subscriber.map(|message| Message {
            subject: message.subject.to_string(),
            payload: message.payload,
            decoded: None,
        })))
    }
}

#[async_trait::async_trait]
impl Bus for NatsBus {
    async fn publish(&self, subject: String, payload: Bytes) -> Result<(), BusError> {
        validate_subject(&subject)?;
        self.ensure_open()?;
        self.client.publish(subject, payload).await.map_err(publish_error)
    }

    async fn subscribe(&self, subject: &str) -> Result<Subscription, BusError> {
        self.add(subject, None).await
    }

    async fn queue_subscribe(&self, subject: &str, group: &str) -> Result<Subscription, BusError> {
        self.add(subject, Some(group)).await
    }

    async fn input_subscribe(&self, subject: &str, group: &str) -> Result<Input, BusError> {
        validate_pattern(subject)?;
        validate_queue_group(group)?;
        self.ensure_open()?;
        let dropped = Arc::new(AtomicU64::new(0));
        let client = self.opener.open(&format!("{}-input", self.opener.name), dropped.clone()).await?;
        let subscriber = client
            .queue_subscribe(subject.to_owned(), group.to_owned())
            .await
            .map_err(|err| BusError::Subscribe(err.to_string()))?;
        self.round_trip_on(&client).await?;
        // The connection lives as long as the subscription.
        let messages = subscriber.map(move |message| {
            let _connection = &client;
            Message { subject: message.subject.to_string(), payload: message.payload, decoded: None }
        });
        Ok(Input { messages: Box::pin(messages), lossy: true, dropped })
    }

    async fn flush(&self) -> Result<(), BusError> {
        self.ensure_open()?;
        self.round_trip().await
    }

    async fn drain(&self) -> Result<(), BusError> {
        if self.drained.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        self.round_trip().await?;
        self.client.drain().await.map_err(|_| BusError::Closed)?;
        tracing::info!(url = %self.url, "drained the NATS connection");
        Ok(())
    }

    fn position_log(
        &self,
        prefix: &str,
        partitions: u32,
        settings: crate::PositionSettings,
    ) -> Arc<dyn crate::PositionLog> {
        let bus = Arc::new(self.clone());
        Arc::new(crate::positions::JetStreamPositions::new(self.client.clone(), bus, prefix, partitions, settings))
    }

    async fn presence(&self, prefix: &str, replicas: usize) -> Result<Option<crate::Presence>, BusError> {
        crate::Presence::open(self.client.clone(), prefix, replicas).await.map(Some)
    }

    async fn leases(&self, prefix: &str, replicas: usize) -> Result<Option<crate::Leases>, BusError> {
        crate::Leases::open(self.client.clone(), prefix, replicas).await.map(Some)
    }

    fn journal(&self, prefix: &str, settings: crate::JournalSettings) -> Arc<dyn crate::Journal> {
        Arc::new(crate::journal::JetStreamJournal::new(self.client.clone(), prefix, settings))
    }

    fn is_connected(&self) -> bool {
        !self.drained.load(Ordering::Acquire) && self.client.connection_state() == State::Connected
    }

    fn kind(&self) -> &'static str {
        "nats"
    }
}

fn publish_error(err: async_nats::PublishError) -> BusError {
    match err.kind() {
        // The client's command channel is gone: the connection was drained or closed.
        PublishErrorKind::Send => BusError::Closed,
        _ => BusError::Publish(err.to_string()),
    }
}

/// The user-info part of a URL (`user:password` in `nats://user:password@host:4222`), if any.
fn credentials(url: &str) -> Option<(&str, &str)> {
    let (scheme, rest) = match url.find("://") {
        Some(at) => url.split_at(at + 3),
        None => ("", url),
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    authority.rfind('@').map(|at| (scheme, &authority[..at])).filter(|(_, userinfo)| !userinfo.is_empty())
}

/// The server URLs of a comma-separated list (a single URL is a list of one).
fn servers(url: &str) -> impl Iterator<Item = &str> {
    url.split(',').map(str::trim).filter(|server| !server.is_empty())
}

/// `url` (each URL of a list) with its credentials replaced by `***`.
fn redact_url(url: &str) -> String {
    let redact = |url: &str| match credentials(url) {
        Some((scheme, userinfo)) => url.replacen(&format!("{scheme}{userinfo}@"), &format!("{scheme}***@"), 1),
        None => url.to_owned(),
    };
    servers(url).map(redact).collect::<Vec<_>>().join(",")
}

/// `text` with any credentials of `url` (of each URL of a list) replaced by `***`, in case a
/// library echoes them.
fn scrub_credentials(text: &str, url: &str) -> String {
    let mut scrubbed = text.to_owned();
    for (_, userinfo) in servers(url).filter_map(credentials) {
        scrubbed = scrubbed.replace(userinfo, "***");
        if let Some((_, password)) = userinfo.split_once(':')
            && !password.is_empty()
        {
            scrubbed = scrubbed.replace(password, "***");
        }
    }
    scrubbed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_their_credentials() {
        assert_eq!(redact_url("nats://alice:s3cret@nats.example:4222"), "nats://***@nats.example:4222");
        assert_eq!(redact_url("tls://t0ken@h:4222/x"), "tls://***@h:4222/x");
        assert_eq!(redact_url("alice:s3cret@h:4222"), "***@h:4222");
        assert_eq!(redact_url("nats://127.0.0.1:4222"), "nats://127.0.0.1:4222");
        assert_eq!(
            redact_url("nats://a:pw@h1:4222, nats://h2:4222,nats://b:pw2@h3:4222"),
            "nats://***@h1:4222,nats://h2:4222,nats://***@h3:4222"
        );
    }

    #[test]
    fn error_text_loses_the_credentials_of_the_url() {
        let url = "nats://alice:s3cret@h:4222";
        assert_eq!(
            scrub_credentials("auth alice:s3cret failed; password s3cret", url),
            "auth *** failed; password ***"
        );
        assert_eq!(scrub_credentials("refused", "nats://h:4222"), "refused");
        assert_eq!(scrub_credentials("bad pw1 or pw2", "nats://a:pw1@h1,nats://b:pw2@h2"), "bad *** or ***");
    }
}
