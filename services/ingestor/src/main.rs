//! `zonecast-ingestor`: the position ingestor as its own service, on NATS.

use zonecast_runtime::{Config, shutdown, telemetry};

/// mimalloc: allocation-heavy JSON paths run markedly faster than on the system allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config = Config::from_env()?;
    telemetry::init(config.log_json);
    zonecast_ingestor::run(config, shutdown::on_signals()).await
}
