//! Which service replicas of a site run: every distributed service process writes a heartbeat
//! to a JetStream key-value bucket, `<prefix>_REPLICAS`, under `<service>.<id>`, with what it
//! says of itself (JSON: how far behind it is), every [`Presence::HEARTBEAT`]. A replica whose
//! key has not been written for [`Presence::LEASE`] is dead; a key not written for [`Presence::FORGET`] leaves the
//! bucket on its own (the bucket's age limit), and a replica stopping cleanly deletes its key.

use std::time::Duration;

use async_nats::jetstream::{self, kv};
use bytes::Bytes;

use crate::BusError;

/// One replica as the bucket knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replica {
    /// The service: `api`, `ingestor`, `evaluator`, `forwarder`.
    pub service: String,
    /// Its ID (random per start).
    pub id: String,
    /// What it says of itself (JSON).
    pub about: Bytes,
    /// When its key was last written, by the server's clock (Unix ns).
    pub heartbeat_ns: i128,
}

impl Replica {
    /// Whether this replica is alive at `now_ns`, by the server's clock (Unix ns): its last
    /// heartbeat within [`Presence::LEASE`].
    pub fn alive(&self, now_ns: i128) -> bool {
        now_ns - self.heartbeat_ns <= i128::try_from(Presence::LEASE.as_nanos()).unwrap_or(i128::MAX)
    }
}

/// The replica bucket of a site.
#[derive(Clone)]
pub struct Presence {
    store: kv::Store,
}

impl Presence {
    /// How often a replica writes its heartbeat.
    pub const HEARTBEAT: Duration = Duration::from_millis(500);
    /// How long a replica may go without a heartbeat before it is listed as dead.
    pub const LEASE: Duration = Duration::from_secs(3);

    /// How long a replica's key stays after its last heartbeat: a dead replica is listed (as
    /// dead) that long.
    pub const FORGET: Duration = Duration::from_secs(30);

    /// Opens (making it if needed) the replica bucket under `prefix`, its stream kept on
    /// `replicas` servers.
    pub async fn open(client: async_nats::Client, prefix: &str, replicas: usize) -> Result<Self, BusError> {
        let context = jetstream::new(client);
        let bucket = format!("{prefix}_REPLICAS");
        let store = crate::journal::replicas::key_value(&context, &bucket, replicas, Self::FORGET).await?;
        Ok(Self { store })
    }

    /// Writes the heartbeat of replica `id` of `service`, with what it says of itself.
    pub async fn heartbeat(&self, service: &str, id: &str, about: Bytes) -> Result<(), BusError> {
        self.store
            .put(format!("{service}.{id}"), about)
            .await
            .map(|_| ())
            .map_err(|e| BusError::Journal(format!("heartbeat not written: {e}")))
    }

    /// Removes the key of replica `id` of `service`: it stopped.
    pub async fn remove(&self, service: &str, id: &str) -> Result<(), BusError> {
        self.store
            .delete(format!("{service}.{id}"))
            .await
            .map_err(|e| BusError::Journal(format!("replica not removed: {e}")))
    }

    /// Every replica whose key is in the bucket, with its last heartbeat.
    pub async fn snapshot(&self) -> Result<Vec<Replica>, BusError> {
        let err = |e: String| BusError::Journal(format!("cannot read the replicas: {e}"));
        let mut replicas = Vec::new();
        for entry in crate::journal::replicas::entries(&self.store).await.map_err(err)? {
            if matches!(entry.operation, kv::Operation::Delete | kv::Operation::Purge) {
                continue;
            }
            let Some((service, id)) = entry.key.split_once('.') else { continue };
            replicas.push(Replica {
                service: service.to_owned(),
                id: id.to_owned(),
                about: entry.value.clone(),
                heartbeat_ns: entry.created.unix_timestamp_nanos(),
            });
        }
        Ok(replicas)
    }
}
