//! Unit tests of the http-request action delivery: backoff, signing, outcomes.
#![allow(clippy::unwrap_used)]

use chrono::TimeZone;
use zonecast_model::Event;

use super::*;

#[test]
fn the_ceiling_starts_at_200_ms_and_doubles_up_to_60_s() {
    let b = RetryPolicy::within(Duration::from_secs(3600));
    assert_eq!(b.ceiling(0), Duration::from_millis(200));
    assert_eq!(b.ceiling(1), Duration::from_millis(400));
    assert_eq!(b.ceiling(5), Duration::from_millis(6400));
    assert_eq!(b.ceiling(8), Duration::from_millis(51_200));
    assert_eq!(b.ceiling(9), Duration::from_secs(60));
    assert_eq!(b.ceiling(u32::MAX), Duration::from_secs(60));
}

#[test]
fn full_jitter_stays_between_zero_and_the_ceiling() {
    let b = RetryPolicy::within(Duration::from_secs(3600));
    let delivery = Delivery::new(Arc::new(test_keys()), b);
    for retry in 0..40 {
        assert_eq!(b.delay(retry, 0.0), Duration::ZERO);
        assert_eq!(b.delay(retry, 1.0), b.ceiling(retry));
        assert_eq!(b.delay(retry, 7.0), b.ceiling(retry), "a unit past 1 is clamped");
        for _ in 0..50 {
            let unit = delivery.unit();
            assert!((0.0..1.0).contains(&unit), "{unit}");
            assert!(b.delay(retry, unit) <= b.ceiling(retry));
        }
    }
    // Random units spread over the range rather than sticking to one end.
    let units: Vec<f64> = (0..1000).map(|_| delivery.unit()).collect();
    assert!(units.iter().any(|u| *u < 0.25) && units.iter().any(|u| *u > 0.75));
}

#[test]
fn retry_after_reads_seconds_and_http_dates() {
    let now = chrono::Utc.with_ymd_and_hms(2015, 10, 21, 7, 28, 0).unwrap();
    assert_eq!(retry_after("120", now), Some(Duration::from_secs(120)));
    assert_eq!(retry_after(" 0 ", now), Some(Duration::ZERO));
    assert_eq!(retry_after("Wed, 21 Oct 2015 07:28:30 GMT", now), Some(Duration::from_secs(30)));
    assert_eq!(retry_after("Wed, 21 Oct 2015 07:27:00 GMT", now), Some(Duration::ZERO), "a past date: now");
    assert_eq!(retry_after("-5", now), None);
    assert_eq!(retry_after("1.5", now), None);
    assert_eq!(retry_after("soon", now), None);
    assert_eq!(retry_after("", now), None);
}

#[test]
fn statuses_408_429_and_5xx_are_tried_again_other_failures_are_final() {
    for status in [200, 201, 204, 299] {
        assert_eq!(verdict(status), Verdict::Done, "{status}");
    }
    for status in [408, 429, 500, 502, 503, 504, 599] {
        assert_eq!(verdict(status), Verdict::Again, "{status}");
    }
    for status in [301, 302, 400, 401, 403, 404, 409, 410, 422] {
        assert_eq!(verdict(status), Verdict::Final, "{status}");
    }
}

#[test]
fn the_signature_is_the_hex_hmac_sha256_of_the_body() {
    // RFC 4231, test case 2.
    assert_eq!(
        signature(b"Jefe", b"what do ya want for nothing?"),
        "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
    );
}

fn event() -> Event {
    serde_json::from_str(
        r#"{"Category":"ZONE","Type":"ZONE_ENTER","EventID":"01900000-0000-7000-8000-000000000001",
        "Timestamp":"2026-11-21T10:00:00.100Z","LocalTimestamp":"2026-11-21T10:00:00.104Z",
        "Source":{"MAC":"00:AA:BB:CC:DD:EE","GatewayURI":null,"SiteID":501},
        "Content":{"ZoneID":"00000000-0000-0000-0000-0000000000AB","ZoneName":"dock","AlertLevel":5,
        "Alarm":"device","CollisionID":"00000000-0000-0000-0000-0000000000CD",
        "EntryTime":"2026-11-21T10:00:00.100Z","Position":[0.5,1.0,0.0]}}"#,
    )
    .unwrap()
}

/// An unsigned POST of `event` to `/hook` at `addr`.
fn post_to(addr: impl std::fmt::Display, event: Event) -> ActionRequest {
    ActionRequest {
        uri: format!("http://{addr}/hook"),
        method: "POST".into(),
        headers: Vec::new(),
        event,
        secret: None,
    }
}

#[tokio::test]
async fn a_secret_sealed_with_another_key_is_not_sent_and_fails_at_once() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let sealed = test_keys().seal_text("a-receiver-secret-1").unwrap();
    let delivery = Delivery::new(Arc::new(test_keys()), RetryPolicy::within(Duration::from_secs(3600)));
    let request = ActionRequest {
        secret: Some(ActionSecret::Sealed(sealed)),
        ..post_to(listener.local_addr().unwrap(), event())
    };
    let outcome = delivery.send(&request, &Shutdown::new()).await;
    let Outcome::GaveUp { why: GiveUp::Failed, reason } = &outcome else { panic!("{outcome:?}") };
    assert!(reason.contains("cannot be unsealed"), "{reason}");
    assert_eq!(outcome.label(), Some("failed"));
    // Nothing reached the receiver: the outcome came before any connection was made.
    let accepted = tokio::time::timeout(Duration::from_millis(1), listener.accept()).await;
    assert!(accepted.is_err(), "the unsigned request was sent");
}

#[tokio::test]
async fn a_request_still_failing_when_its_window_closes_expires() {
    // A port nothing listens on: every try is a connection error, tried again until the
    // window (zero here) closes.
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let delivery = Delivery::new(Arc::new(test_keys()), RetryPolicy::within(Duration::ZERO));
    let request = post_to(free, event());
    let outcome = delivery.send(&request, &Shutdown::new()).await;
    assert_eq!(outcome.label(), Some("expired"), "{outcome:?}");
}

#[tokio::test]
async fn a_request_taken_after_its_window_closed_is_tried_once_and_expires() {
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let delivery = Delivery::new(Arc::new(test_keys()), RetryPolicy::within(Duration::from_secs(60)));
    let mut event = event();
    event.local_timestamp = chrono::Utc::now() - chrono::Duration::seconds(61);
    let request = post_to(free, event);
    let outcome = tokio::time::timeout(Duration::from_secs(5), delivery.send(&request, &Shutdown::new()))
        .await
        .expect("no wait: the window closed a second ago");
    assert_eq!(outcome.label(), Some("expired"), "{outcome:?}");
}

#[tokio::test]
async fn a_request_waiting_for_its_next_try_at_shutdown_has_no_outcome_yet() {
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let delivery = Delivery::new(Arc::new(test_keys()), RetryPolicy::within(Duration::from_secs(3600)));
    let mut event = event();
    event.local_timestamp = chrono::Utc::now();
    let request = post_to(free, event);
    let shutdown = Shutdown::new();
    shutdown.cancel();
    let outcome = delivery.send(&request, &shutdown).await;
    assert_eq!(outcome, Outcome::Interrupted);
    assert_eq!(outcome.label(), None, "not counted as an outcome: it is sent again after the restart");
}

fn test_keys() -> Keys {
    Keys::from_secret(&zonecast_runtime::Secret::new(zonecast_runtime::keys::random_base64(32).unwrap())).unwrap()
}
