//! `zonecast-api`: the config API as its own service, on PostgreSQL and NATS.

/// mimalloc: allocation-heavy JSON paths run markedly faster than on the system allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let (config, shutdown) = zonecast_runtime::boot::<zonecast_api::ApiConfig>()?;
    zonecast_api::run(config, shutdown).await?;
    Ok(())
}
