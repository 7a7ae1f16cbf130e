//! Graceful shutdown: one token that SIGINT/SIGTERM (or a test) cancels; every loop selects on it.

use tokio_util::sync::CancellationToken;

/// Cancelled when the process should stop. Clone it into every task.
pub type Shutdown = CancellationToken;

/// A token cancelled on SIGINT or SIGTERM.
pub fn on_signals() -> Shutdown {
    let token = Shutdown::new();
    let trigger = token.clone();
    tokio::spawn(async move {
        let ctrl_c = tokio::signal::ctrl_c();
        #[cfg(unix)]
        let term = async {
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(mut s) => {
                    s.recv().await;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "cannot listen for SIGTERM");
                    std::future::pending::<()>().await;
                }
            }
        };
        #[cfg(not(unix))]
        let term = std::future::pending::<()>();
        tokio::select! {
            _ = ctrl_c => tracing::info!("SIGINT received, shutting down"),
            () = term => tracing::info!("SIGTERM received, shutting down"),
        }
        trigger.cancel();
    });
    token
}
