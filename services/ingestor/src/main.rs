//! `zonecast-ingestor`: the position ingestor as its own service, on NATS.

/// mimalloc: allocation-heavy JSON paths run markedly faster than on the system allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let (config, shutdown) = zonecast_runtime::boot::<zonecast_ingestor::IngestorConfig>()?;
    zonecast_ingestor::run(config, shutdown).await?;
    Ok(())
}
