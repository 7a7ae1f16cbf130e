//! What every service that applies configuration (evaluators, forwarders) does with the change
//! log: follow it from the revision it loaded ([`Follower`]), and say on the bus which revision
//! it has in force ([`Reporter`]), so that the API can answer a write once it is in force
//! everywhere.

use std::sync::Arc;
use std::time::Duration;

use zonecast_bus::{Bus, Subjects};
use zonecast_model::{ConfigApplied, ConfigChanged};
use zonecast_store::{ChangeReader, StoreError};

/// How often a replica reports its revision while it runs, and looks at the log's revision in
/// case an announcement was missed.
pub const REPORT_EVERY: Duration = Duration::from_secs(1);

/// What a replica must apply to catch up with the change log.
#[derive(Debug, Clone, PartialEq)]
pub enum Pending {
    /// Nothing: it has the last revision in force.
    Nothing,
    /// These changes, in order; the last one's revision is the one it then has in force.
    Changes(Vec<ConfigChanged>),
    /// More than the log keeps, or a log that went back (a database replaced): the whole
    /// configuration, read after the log stood at `revision`.
    Everything {
        /// The log's revision before the configuration is read.
        revision: u64,
    },
}

/// A replica's place in the change log.
pub struct Follower {
    log: Arc<dyn ChangeReader>,
    applied: u64,
}

impl Follower {
    /// A follower at the log's current revision: call it before reading the configuration, so
    /// that what was read holds every change up to it (changes after it may be applied twice,
    /// which is harmless: applying reads the items' current state).
    pub async fn at_current(log: Arc<dyn ChangeReader>) -> Result<Self, StoreError> {
        let applied = log.revision().await?;
        Ok(Self { log, applied })
    }

    /// The revision in force.
    pub fn applied(&self) -> u64 {
        self.applied
    }

    /// Records that `revision` is in force (the last of the changes, or the `Everything`
    /// revision, that [`Follower::pending`] answered).
    pub fn advance(&mut self, revision: u64) {
        self.applied = revision;
    }

    /// What to apply, when an announcement says the log has reached `announced` (skipped at
    /// no cost when that is in force already) or, with `None`, when it is time to look.
    pub async fn pending(&self, announced: Option<u64>) -> Result<Pending, StoreError> {
        let revision = match announced {
            Some(announced) if announced <= self.applied => return Ok(Pending::Nothing),
            Some(announced) => announced,
            None => self.log.revision().await?,
        };
        if revision < self.applied {
            return Ok(Pending::Everything { revision });
        }
        if revision == self.applied {
            return Ok(Pending::Nothing);
        }
        Ok(match self.log.changes_since(self.applied).await? {
            Some(changes) if changes.is_empty() => Pending::Nothing,
            Some(changes) => Pending::Changes(changes),
            None => Pending::Everything { revision: self.log.revision().await? },
        })
    }
}

/// Publishes a replica's `<prefix>.config.applied` reports.
pub struct Reporter {
    bus: Arc<dyn Bus>,
    subject: String,
    service: &'static str,
    instance: uuid::Uuid,
}

impl Reporter {
    /// A reporter for one replica of `service` (`"evaluator"`, `"forwarder"`).
    pub fn new(bus: Arc<dyn Bus>, subjects: &Subjects, service: &'static str) -> Self {
        Self { bus, subject: subjects.config_applied(), service, instance: uuid::Uuid::new_v4() }
    }

    /// Says that `revision` is in force. A report that cannot be published is only logged:
    /// the API then answers writes after its bounded wait, telling how many replicas applied.
    pub async fn report(&self, revision: u64) {
        self.send(revision, false).await;
    }

    /// Says that this replica stops applying changes, so that writes no longer wait for it.
    pub async fn leave(&self, revision: u64) {
        self.send(revision, true).await;
    }

    async fn send(&self, revision: u64, leaving: bool) {
        let report = ConfigApplied { service: self.service.to_owned(), instance: self.instance, revision, leaving };
        let Ok(payload) = serde_json::to_vec(&report) else { return };
        if let Err(e) = self.bus.publish(self.subject.clone(), payload.into()).await {
            tracing::debug!(error = %e, "config.applied report not published");
        }
    }
}
