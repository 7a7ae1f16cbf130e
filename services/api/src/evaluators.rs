//! What the API knows of the evaluators, for the cluster status (`GET /v3/system/cluster`).

use zonecast_bus::{Leases, Presence};

/// What the API knows of the evaluators, kept in its context.
pub struct Evaluators {
    /// `ZONECAST_PARTITIONS`.
    pub(crate) partitions: u32,
    /// `ZONECAST_NATS_REPLICAS`: the lease bucket is kept on that many servers.
    pub(crate) replicas: usize,
    /// The partitions of each evaluator of this process, when they are given them (the
    /// all-in-one); `None` when the evaluators claim theirs in the lease bucket.
    pub(crate) given: Option<Vec<Vec<u32>>>,
    /// The lease bucket, opened at the first request that needs it.
    pub(crate) leases: tokio::sync::OnceCell<Option<Leases>>,
    /// The replica bucket, opened at the first request that needs it.
    pub(crate) presence: tokio::sync::OnceCell<Option<Presence>>,
}

impl Evaluators {
    /// Evaluators that claim `partitions` partitions in the lease bucket, kept on `replicas`
    /// NATS servers.
    pub fn claimed(partitions: u32, replicas: usize) -> Self {
        Self { partitions, replicas, given: None, leases: Default::default(), presence: Default::default() }
    }

    /// Evaluators of this process, each given the partitions of its entry.
    pub fn given(partitions: u32, evaluators: Vec<Vec<u32>>) -> Self {
        Self {
            partitions,
            replicas: 1,
            given: Some(evaluators),
            leases: Default::default(),
            presence: Default::default(),
        }
    }

    /// How many position partitions there are.
    pub fn partitions(&self) -> u32 {
        self.partitions
    }
}
