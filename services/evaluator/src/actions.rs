//! http-request zone actions: sent off the evaluation path by a bounded worker pool, 5 s
//! timeout, 3 tries with backoff, each outcome counted. A full queue drops the request and
//! counts it rather than holding up evaluation.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Semaphore, mpsc};
use zonecast_model::Event;

/// One request to send.
#[derive(Debug)]
pub struct Request {
    /// Target URI.
    pub uri: String,
    /// HTTP method.
    pub method: String,
    /// Extra headers.
    pub headers: Vec<(String, String)>,
    /// The event, sent as the JSON body.
    pub event: Event,
}

const QUEUE: usize = 10_000;
const CONCURRENCY: usize = 64;
const TRIES: u32 = 3;
const TIMEOUT: Duration = Duration::from_secs(5);

/// Starts the pool; the sender is for `try_send`.
pub fn spawn() -> (mpsc::Sender<Request>, tokio::task::JoinHandle<()>) {
    let (tx, mut rx) = mpsc::channel::<Request>(QUEUE);
    let task = tokio::spawn(async move {
        let client = match reqwest::Client::builder().timeout(TIMEOUT).build() {
            Ok(c) => c,
            Err(e) => {
                tracing::error!(error = %e, "http-request actions disabled: cannot build HTTP client");
                while rx.recv().await.is_some() {
                    metrics::counter!("zonecast_evaluator_http_actions_total", "outcome" => "failed").increment(1);
                }
                return;
            }
        };
        let permits = Arc::new(Semaphore::new(CONCURRENCY));
        let mut running = tokio::task::JoinSet::new();
        while let Some(request) = rx.recv().await {
            let Ok(permit) = permits.clone().acquire_owned().await else { break };
            let client = client.clone();
            running.spawn(async move {
                send(&client, request).await;
                drop(permit);
            });
            while running.try_join_next().is_some() {}
        }
        while running.join_next().await.is_some() {}
    });
    (tx, task)
}

async fn send(client: &reqwest::Client, request: Request) {
    let method = reqwest::Method::from_bytes(request.method.as_bytes()).unwrap_or(reqwest::Method::POST);
    let mut last_error = String::new();
    for attempt in 0..TRIES {
        if attempt > 0 {
            tokio::time::sleep(Duration::from_millis(200 * 2u64.pow(attempt - 1))).await;
        }
        let mut builder = client.request(method.clone(), &request.uri).json(&request.event);
        for (k, v) in &request.headers {
            builder = builder.header(k, v);
        }
        match builder.send().await {
            Ok(r) if r.status().is_success() => {
                metrics::counter!("zonecast_evaluator_http_actions_total", "outcome" => "success").increment(1);
                return;
            }
            // A 4xx will not get better by retrying.
            Ok(r) if r.status().is_client_error() => {
                last_error = format!("HTTP {}", r.status());
                break;
            }
            Ok(r) => last_error = format!("HTTP {}", r.status()),
            Err(e) => last_error = e.to_string(),
        }
        metrics::counter!("zonecast_evaluator_http_action_retries_total").increment(1);
    }
    metrics::counter!("zonecast_evaluator_http_actions_total", "outcome" => "failed").increment(1);
    tracing::warn!(uri = %request.uri, error = %last_error, "http-request action failed");
}
