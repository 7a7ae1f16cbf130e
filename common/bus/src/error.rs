//! The one error type of the bus, shared by both implementations.

/// Why a bus operation failed.
///
/// Messages never contain credentials: URLs are redacted before they are stored here.
#[derive(Debug, thiserror::Error)]
pub enum BusError {
    /// The NATS server could not be reached or refused the connection.
    #[error("cannot connect to NATS at {url}: {reason}")]
    Connect {
        /// The server URL with any user name, password or token removed.
        url: String,
        /// What went wrong, as reported by the client library.
        reason: String,
    },
    /// A message could not be handed to the bus.
    #[error("publish failed: {0}")]
    Publish(String),
    /// A subscription could not be created.
    #[error("subscribe failed: {0}")]
    Subscribe(String),
    /// Published messages could not be confirmed as delivered to the server.
    #[error("flush failed: {0}")]
    Flush(String),
    /// The subject or subscription pattern breaks the NATS subject rules.
    #[error("invalid subject: {0}")]
    InvalidSubject(String),
    /// The queue group name is empty or contains whitespace.
    #[error("invalid queue group: {0}")]
    InvalidQueueGroup(String),
    /// The journal could not store, deliver or describe records.
    #[error("journal: {0}")]
    Journal(String),
    /// JetStream cannot keep a stream on the servers `ZONECAST_NATS_REPLICAS` asks for (a single
    /// server asked for more than one, too few servers in the cluster, or a stream that has
    /// another count and that the server would not change): a configuration to correct, not a
    /// passing failure.
    #[error("{0}")]
    Replicas(String),
    /// The bus has been drained or its connection is gone for good.
    #[error("the bus is closed")]
    Closed,
}
