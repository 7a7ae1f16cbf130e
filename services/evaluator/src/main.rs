//! `zonecast-evaluator`: the evaluator as its own service, on PostgreSQL and NATS.

/// mimalloc: allocation-heavy JSON paths run markedly faster than on the system allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let (config, shutdown) = zonecast_runtime::boot::<zonecast_evaluator::EvaluatorConfig>()?;
    zonecast_evaluator::run(config, shutdown).await?;
    Ok(())
}
