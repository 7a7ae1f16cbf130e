//! `zonecast`: the all-in-one binary. `cargo run --release` starts it on its embedded defaults.

/// mimalloc: allocation-heavy JSON paths run markedly faster than on the system allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let (config, shutdown) = zonecast_runtime::boot::<zonecast::Config>()?;
    let running = zonecast::start(config, shutdown).await?;
    if let Some(file) = &running.admin_key_file {
        eprintln!("zonecast: admin API key is in {} (send it as X-API-Key)", file.display());
    }
    eprintln!("zonecast: listening on http://{}", running.http_addr);
    running.task.await?;
    Ok(())
}
