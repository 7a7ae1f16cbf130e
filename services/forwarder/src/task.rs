//! A task of one connection (its MQTT client, its journal consumer) that can be stopped on its
//! own, or with the whole service.

use std::future::Future;

use tokio_util::sync::CancellationToken;

/// A running task with its own stop token, a child of the service's.
pub struct Stoppable {
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
    what: &'static str,
}

impl Stoppable {
    /// Spawns `run` with a token that is cancelled by [`Stoppable::stop`] or by `shutdown`;
    /// `what` names the task in the log if it fails.
    pub fn spawn<F>(shutdown: &CancellationToken, what: &'static str, run: impl FnOnce(CancellationToken) -> F) -> Self
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let stop = shutdown.child_token();
        let task = tokio::spawn(run(stop.clone()));
        Self { stop, task, what }
    }

    /// Stops it without waiting.
    pub fn stop(&self) {
        self.stop.cancel();
    }

    /// Whether it has ended.
    pub fn is_finished(&self) -> bool {
        self.task.is_finished()
    }

    /// Stops it and waits until it has ended.
    pub async fn finish(self) {
        self.stop.cancel();
        if let Err(e) = self.task.await {
            tracing::error!(task = self.what, error = %e, "forwarder task failed");
        }
    }
}
