//! Partitions coming and going while the evaluator runs: taken over from the collisions and
//! marks the previous owner wrote, given back once this evaluator's own are written, dropped
//! at once when another evaluator owns them.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::Utc;
use tokio::sync::Notify;
use zonecast_store::{CollisionMarks, EvaluatorStore, StoreError};

use super::{Engine, Output};
use crate::claims::{Claims, Order};
use crate::feed::{Acks, Feed};

/// The partitions of an evaluator that claims its own.
pub(super) struct Handover {
    pub(super) claims: Claims,
    store: Arc<dyn EvaluatorStore>,
    /// The partitions held, with their epochs.
    epochs: BTreeMap<u32, u64>,
    /// Partitions being given back, once the turn counted is written.
    releasing: Vec<(Vec<u32>, u64)>,
    /// Has the collision writer write at once.
    flush: Arc<Notify>,
}

impl Handover {
    pub(super) fn new(claims: Claims, store: Arc<dyn EvaluatorStore>, flush: Arc<Notify>) -> Self {
        Self { claims, store, epochs: BTreeMap::new(), releasing: Vec::new(), flush }
    }

    /// The partitions held with their epochs, for the collision writer.
    pub(super) fn epochs(&self) -> Vec<(u32, u64)> {
        self.epochs.iter().map(|(p, e)| (*p, *e)).collect()
    }

    /// Carries out an order of the claims; `turns` is the count of turns sent to the collision
    /// writer so far. Returns whether the partitions owned changed.
    pub(super) async fn order(
        &mut self,
        order: Order,
        engine: &mut Engine,
        feed: &mut Feed,
        acks: &mut Acks,
        turns: u64,
        out: &mut Vec<Output>,
    ) -> bool {
        match order {
            Order::Take(taken) => self.take(taken, engine, feed, out).await,
            Order::GiveBack(partitions) => {
                // Every change of theirs is in a turn sent by now; the evaluator's later
                // turns have none. They are given back once those turns are written, which
                // the writer does at once: the evaluator taking them waits.
                self.drop(&partitions, engine, feed);
                self.releasing.push((partitions, turns));
                self.flush.notify_one();
                true
            }
            Order::Lost(partitions) => {
                self.lose(&partitions, engine, feed, acks);
                true
            }
        }
    }

    /// Drops `partitions` without writing anything more for them: another evaluator owns them.
    pub(super) fn lose(&mut self, partitions: &[u32], engine: &mut Engine, feed: &mut Feed, acks: &mut Acks) {
        self.drop(partitions, engine, feed);
        acks.forget(partitions);
        for (releasing, _) in &mut self.releasing {
            releasing.retain(|p| !partitions.contains(p));
        }
    }

    /// Drops everything held: this evaluator's lease ran out.
    pub(super) fn lose_all(&mut self, engine: &mut Engine, feed: &mut Feed, acks: &mut Acks) {
        let all: Vec<u32> = engine.ownership().partitions().collect();
        if !all.is_empty() {
            tracing::error!(
                partitions = all.len(),
                "lease ran out: the partitions' work under way is dropped, the evaluators that take them over do it again"
            );
            self.lose(&all, engine, feed, acks);
            // The claims may not have seen the lapse yet (they look at each heartbeat): what
            // they count as held is gone, to be claimed again.
            self.claims.lapsed();
        }
    }

    fn drop(&mut self, partitions: &[u32], engine: &mut Engine, feed: &mut Feed) {
        for p in partitions {
            feed.stop(*p);
            self.epochs.remove(p);
        }
        engine.give_up(partitions);
    }

    /// Gives back the partitions whose last turn is written (`written` turns are).
    pub(super) fn settle(&mut self, written: u64) {
        let (done, waiting): (Vec<_>, Vec<_>) = self.releasing.drain(..).partition(|(_, turn)| *turn <= written);
        self.releasing = waiting;
        for (partitions, _) in done {
            if !partitions.is_empty() {
                self.claims.given_back(partitions);
            }
        }
    }

    /// Takes partitions over: fences their former owner in the store, then restores their
    /// collisions and presence and follows their streams from the mark those collisions carry.
    async fn take(
        &mut self,
        taken: Vec<(u32, u64)>,
        engine: &mut Engine,
        feed: &mut Feed,
        out: &mut Vec<Output>,
    ) -> bool {
        let fence = CollisionMarks { epochs: taken.clone(), ..CollisionMarks::default() };
        let mut taken = taken;
        match self.store.write_collisions(&[], &[], &[], &fence).await {
            Ok(()) => {}
            Err(StoreError::Fenced { partitions }) => taken.retain(|(p, _)| !partitions.contains(p)),
            Err(e) => return self.not_taken(taken, &e),
        }
        let read =
            tokio::try_join!(self.store.collision_marks(), self.store.all_collisions(), self.store.all_presence());
        let (marks, rows, presence) = match read {
            Ok(read) => read,
            Err(e) => return self.not_taken(taken, &e),
        };
        let partitions: Vec<u32> = taken.iter().map(|(p, _)| *p).collect();
        engine.take_over(&partitions, rows, presence, Utc::now(), out);
        for (p, epoch) in taken {
            feed.start(p, marks.partition(p)).await;
            self.epochs.insert(p, epoch);
        }
        tracing::info!(partitions = ?partitions, owned = %engine.ownership().label(), "partitions taken over");
        !partitions.is_empty()
    }

    /// Partitions claimed that cannot be taken over now (the store is away): given back, for
    /// whoever claims them next.
    fn not_taken(&mut self, taken: Vec<(u32, u64)>, e: &StoreError) -> bool {
        tracing::warn!(error = %e.detail(), partitions = taken.len(), "partitions claimed but not taken over: the store cannot be read; given back");
        self.claims.given_back(taken.into_iter().map(|(p, _)| p).collect());
        false
    }
}
