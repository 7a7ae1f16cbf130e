//! `zonecast-forwarder`: the forwarder as its own service, on PostgreSQL and NATS.

use zonecast_runtime::{Config, shutdown, telemetry};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config = Config::from_env()?;
    let settings = zonecast_forwarder::Settings::from_env(&std::env::vars().collect()).map_err(anyhow::Error::msg)?;
    telemetry::init(config.log_json);
    zonecast_forwarder::run(config, settings, shutdown::on_signals()).await
}
