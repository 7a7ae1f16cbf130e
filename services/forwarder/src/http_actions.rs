//! http-request zone actions. Every request carries its event's `EventID` as
//! `Idempotency-Key` and, when the action has a secret, an HMAC-SHA256 signature of its body
//! in `X-Zonecast-Signature`; it is retried with exponential backoff and full jitter until it is
//! delivered, refused, or its retry window (counted from the event's `LocalTimestamp`) closes.
//! [`Delivery::send`] takes one request to its final outcome, with a bounded number of tries in
//! flight: a request waiting for its next try holds no worker, so a slow or failing receiver
//! does not hold up the others. Requests reach it through the journal, where the evaluators
//! store them (`http_actions_consumer.rs`), so they survive the forwarder.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue, RETRY_AFTER};
use ring::hmac;
use ring::rand::{SecureRandom, SystemRandom};
use tokio::sync::Semaphore;
use tokio::time::Instant;
use zonecast_model::{ActionRequest, ActionSecret};
use zonecast_runtime::ratelog::RateLimited;
use zonecast_runtime::{Keys, Shutdown};

/// The header that carries the event's `EventID`, the same on every try and every copy.
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";
/// The header that carries `sha256=<hex HMAC-SHA256 of the body with the action's secret>`.
pub const SIGNATURE: &str = "x-zonecast-signature";

/// Tries in flight at once.
const WORKERS: usize = 64;
/// Time one try may take.
const TIMEOUT: Duration = Duration::from_secs(5);

/// How a request ended, or that it has not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// A 2xx answer.
    Delivered,
    /// Not delivered, and no longer tried.
    GaveUp {
        /// Why it is no longer tried.
        why: GiveUp,
        /// The last failure.
        reason: String,
    },
    /// Waiting for its next try when the forwarder stopped: no outcome yet. It stays in the
    /// journal and is sent again after the restart (or by another replica).
    Interrupted,
}

/// Why a request is no longer tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GiveUp {
    /// An answer that trying again will not change (a 4xx other than 408 and 429, a
    /// redirect), or a request that cannot be made (its secret cannot be unsealed).
    Failed,
    /// Still failing when its retry window closed.
    Expired,
}

impl Outcome {
    fn gave_up(why: GiveUp, reason: impl Into<String>) -> Self {
        Self::GaveUp { why, reason: reason.into() }
    }

    /// The `outcome` label of `zonecast_forwarder_http_actions_total`; `None` while the
    /// request has no final outcome.
    pub fn label(&self) -> Option<&'static str> {
        match self {
            Self::Delivered => Some("success"),
            Self::GaveUp { why: GiveUp::Failed, .. } => Some("failed"),
            Self::GaveUp { why: GiveUp::Expired, .. } => Some("expired"),
            Self::Interrupted => None,
        }
    }
}

/// When a request is tried again: exponential backoff with full jitter within a retry window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// The ceiling of the first wait.
    pub first: Duration,
    /// The largest ceiling; waits double up to it.
    pub cap: Duration,
    /// How long after its event a request is still tried again.
    pub retry_for: Duration,
}

impl RetryPolicy {
    /// First wait up to 200 ms, doubling up to 60 s, tried again for `retry_for`.
    pub fn within(retry_for: Duration) -> Self {
        Self { first: Duration::from_millis(200), cap: Duration::from_secs(60), retry_for }
    }

    /// The longest wait before try `retry + 2` (`retry` counts from 0): `first × 2^retry`, at
    /// most `cap`.
    pub fn ceiling(&self, retry: u32) -> Duration {
        self.first.saturating_mul(2u32.saturating_pow(retry)).min(self.cap)
    }

    /// Full jitter: the wait is `unit` (in `0..1`) of the ceiling, so receivers that failed
    /// together are not all tried again at the same instant.
    pub fn delay(&self, retry: u32, unit: f64) -> Duration {
        self.ceiling(retry).mul_f64(unit.clamp(0.0, 1.0))
    }
}

/// A `Retry-After` value (delay seconds or an HTTP date) as a wait from `now`; `None` when it
/// is neither.
pub fn retry_after(value: &str, now: chrono::DateTime<chrono::Utc>) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    Some((at.with_timezone(&chrono::Utc) - now).to_std().unwrap_or(Duration::ZERO))
}

/// `sha256=<lower-case hex HMAC-SHA256 of body keyed with secret>`: the `X-Zonecast-Signature`.
pub fn signature(secret: &[u8], body: &[u8]) -> String {
    let tag = hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, secret), body);
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256=");
    for byte in tag.as_ref() {
        out.push(char::from(HEX[usize::from(byte >> 4)]));
        out.push(char::from(HEX[usize::from(byte & 0x0f)]));
    }
    out
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// What an answer's status means for the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Delivered.
    Done,
    /// Try again later: 408, 429 and 5xx.
    Again,
    /// Final: every other status.
    Final,
}

/// The verdict on an answer with `status`.
pub fn verdict(status: u16) -> Verdict {
    match status {
        200..=299 => Verdict::Done,
        408 | 429 | 500..=599 => Verdict::Again,
        _ => Verdict::Final,
    }
}

/// What one try came to.
enum Attempt {
    Done,
    Final(String),
    Again { reason: String, after: Option<Duration> },
}

/// A request ready to go out: body and headers are the same on every try.
struct Prepared {
    method: reqwest::Method,
    uri: String,
    headers: HeaderMap,
    body: Vec<u8>,
}

/// Sends requests: the HTTP client, the keys that unseal action secrets, the retry policy, and the
/// workers every try takes one of.
pub struct Delivery {
    client: Result<reqwest::Client, String>,
    keys: Arc<Keys>,
    retries: RetryPolicy,
    workers: Semaphore,
    rng: SystemRandom,
}

impl Delivery {
    /// A delivery with `keys` (the API's) and `retries`. Redirects are not followed: a signed
    /// request goes to the URI its action names, or nowhere.
    pub fn new(keys: Arc<Keys>, retries: RetryPolicy) -> Self {
        let client = zonecast_tls::http_client()
            .map_err(|e| e.to_string())
            .and_then(|b| {
                b.timeout(TIMEOUT).redirect(reqwest::redirect::Policy::none()).build().map_err(|e| e.to_string())
            })
            .map_err(|e| {
                tracing::error!(error = %e, "http-request actions disabled: cannot build HTTP client");
                format!("no HTTP client: {e}")
            });
        Self { client, keys, retries, workers: Semaphore::new(WORKERS), rng: SystemRandom::new() }
    }

    /// Sends `request` until it is delivered, refused, its retry window (from the event's
    /// `LocalTimestamp`, so a request taken again after a restart is not given a new one)
    /// closes, or `shutdown` comes while it waits for its next try. It is tried at least once
    /// each time it is taken. Each try takes a worker; waits take none.
    pub async fn send(&self, request: &ActionRequest, shutdown: &Shutdown) -> Outcome {
        let client = match &self.client {
            Ok(client) => client,
            Err(reason) => return Outcome::gave_up(GiveUp::Failed, reason.clone()),
        };
        let prepared = match self.prepare(request) {
            Ok(p) => p,
            Err(reason) => return Outcome::gave_up(GiveUp::Failed, reason),
        };
        let window = self
            .retries
            .retry_for
            .saturating_sub((chrono::Utc::now() - request.event.local_timestamp).to_std().unwrap_or(Duration::ZERO));
        let deadline = Instant::now() + window;
        let mut retry = 0u32;
        loop {
            let attempt = match self.workers.acquire().await {
                Ok(_worker) => attempt(client, &prepared).await,
                // The workers are never closed; should they be, the request stays in the journal.
                Err(_) => return Outcome::Interrupted,
            };
            let (reason, after) = match attempt {
                Attempt::Done => return Outcome::Delivered,
                Attempt::Final(reason) => return Outcome::gave_up(GiveUp::Failed, reason),
                Attempt::Again { reason, after } => (reason, after),
            };
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Outcome::gave_up(GiveUp::Expired, reason);
            }
            if shutdown.is_cancelled() {
                return Outcome::Interrupted;
            }
            let wait = after.unwrap_or_else(|| self.retries.delay(retry, self.unit())).min(left);
            metrics::counter!("zonecast_forwarder_http_action_retries_total").increment(1);
            tokio::select! {
                () = shutdown.cancelled() => return Outcome::Interrupted,
                () = tokio::time::sleep(wait) => {}
            }
            retry = retry.saturating_add(1);
        }
    }

    /// A random number in `0..1`; 1 (the whole ceiling) if the system source fails.
    fn unit(&self) -> f64 {
        let mut bytes = [0u8; 8];
        match self.rng.fill(&mut bytes) {
            Ok(()) => (u64::from_le_bytes(bytes) >> 11) as f64 / (1u64 << 53) as f64,
            Err(_) => 1.0,
        }
    }

    /// Body and headers: the action's headers, then `Content-Type`, `Idempotency-Key` and the
    /// signature, which no action header overrides.
    fn prepare(&self, request: &ActionRequest) -> Result<Prepared, String> {
        let method = reqwest::Method::from_bytes(request.method.as_bytes()).unwrap_or(reqwest::Method::POST);
        let body = serde_json::to_vec(&request.event).map_err(|e| format!("cannot encode the event: {e}"))?;
        let mut headers = HeaderMap::new();
        for (name, value) in &request.headers {
            let name = HeaderName::from_bytes(name.as_bytes()).map_err(|e| format!("header {name}: {e}"))?;
            let value = HeaderValue::from_bytes(value.as_bytes()).map_err(|e| format!("header {name}: {e}"))?;
            headers.append(name, value);
        }
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let key = HeaderValue::from_str(&request.event.event_id.to_string()).map_err(|e| e.to_string())?;
        headers.insert(HeaderName::from_static(IDEMPOTENCY_KEY), key);
        match &request.secret {
            None => {}
            Some(ActionSecret::Sealed(sealed)) => {
                let secret = self.keys.open_text(sealed).map_err(|_| {
                    "not sent: its secret cannot be unsealed (is ZONECAST_SECRET_KEY the API's?)".to_owned()
                })?;
                let signed =
                    HeaderValue::from_str(&signature(secret.expose().as_bytes(), &body)).map_err(|e| e.to_string())?;
                headers.insert(HeaderName::from_static(SIGNATURE), signed);
            }
            Some(ActionSecret::Given(_) | ActionSecret::Kept) => {
                return Err("not sent: its secret was stored unsealed".into());
            }
        }
        Ok(Prepared { method, uri: request.uri.clone(), headers, body })
    }
}

/// One try.
async fn attempt(client: &reqwest::Client, p: &Prepared) -> Attempt {
    let sent = client.request(p.method.clone(), &p.uri).headers(p.headers.clone()).body(p.body.clone()).send().await;
    match sent {
        Ok(answer) => {
            let status = answer.status();
            match verdict(status.as_u16()) {
                Verdict::Done => Attempt::Done,
                Verdict::Final => Attempt::Final(format!("HTTP {status}")),
                Verdict::Again => Attempt::Again {
                    reason: format!("HTTP {status}"),
                    after: answer
                        .headers()
                        .get(RETRY_AFTER)
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| retry_after(v, chrono::Utc::now())),
                },
            }
        }
        // The URL stays out of the reason: it may carry credentials.
        Err(e) if e.is_builder() => Attempt::Final(e.without_url().to_string()),
        Err(e) => Attempt::Again { reason: e.without_url().to_string(), after: None },
    }
}

/// The scheme, host and port of `uri`, as failures are logged (its path and query may carry
/// credentials).
fn origin(uri: &str) -> String {
    reqwest::Url::parse(uri).map_or_else(|_| "(invalid URI)".into(), |u| u.origin().ascii_serialization())
}

/// Counts `outcome` and logs a failure (at a limited rate).
pub(crate) fn record(uri: &str, outcome: &Outcome, log: &Mutex<RateLimited>) {
    let Some(label) = outcome.label() else { return };
    metrics::counter!("zonecast_forwarder_http_actions_total", "outcome" => label).increment(1);
    let Outcome::GaveUp { reason, .. } = outcome else { return };
    let allowed = log.lock().map_or(None, |mut l| l.allow());
    if let Some(held_back) = allowed {
        tracing::warn!(target = %origin(uri), outcome = label, %reason, held_back, "http-request action not delivered");
    }
}

#[cfg(test)]
mod tests;
