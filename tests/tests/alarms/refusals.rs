//! Requests about alarms that are refused, each with its status and a message naming what is
//! wrong, and none changing an alarm.

use reqwest::Method;
use serde_json::json;
use zonecast_tests::{ADMIN_KEY, Mode, READ_KEY, Server, WRITE_KEY, assert_error};

use super::{all_alarms, path, raise_alarm};

/// Sends a request that must be refused with `status` and `kind`, proves that no alarm
/// changed, and returns the error message.
async fn refused(
    server: &Server,
    method: Method,
    path: &str,
    key: Option<&str>,
    body: Option<&[u8]>,
    status: u16,
    kind: &str,
) -> String {
    let before = all_alarms(server).await;
    let answer = server.raw(method.clone(), path, key, body.map(<[u8]>::to_vec)).await;
    let message = assert_error(&answer, status, kind);
    assert_eq!(all_alarms(server).await, before, "{method} {path} was refused but changed an alarm");
    message
}

pub(crate) async fn bad_alarm_requests_are_refused_with_a_clear_error_and_change_nothing(mode: Mode) {
    let server = Server::start(mode).await;
    let event = raise_alarm(&server, 1, 0.0).await;
    let id = event["EventID"].as_str().unwrap().to_owned();
    let acknowledge = format!("{}/acknowledge", path(&id));
    let unknown = "01900000-0000-7000-8000-0000000000FF";

    for p in [path(unknown), format!("{}/acknowledge", path(unknown)), format!("{}/resolve", path(unknown))] {
        let method = if p.ends_with(unknown) { Method::GET } else { Method::POST };
        let message = refused(&server, method, &p, Some(ADMIN_KEY), None, 404, "not_found").await;
        assert_eq!(message, format!("alarm {unknown} not found"));
    }
    for p in [path("not-an-id"), format!("{}/resolve", path("not-an-id"))] {
        let method = if p.ends_with("resolve") { Method::POST } else { Method::GET };
        let message = refused(&server, method, &p, Some(ADMIN_KEY), None, 422, "invalid_data").await;
        assert_eq!(message, "AlarmID: 'not-an-id' is not a UUID");
    }
    let message =
        refused(&server, Method::GET, "/v3/alarms?state=open,closed", Some(READ_KEY), None, 422, "invalid_data").await;
    assert_eq!(message, "state: 'closed' is not an alarm state (expected open, acknowledged or resolved)");
    refused(&server, Method::GET, "/v3/alarms?limit=1001", Some(READ_KEY), None, 422, "invalid_data").await;
    refused(&server, Method::GET, "/v3/alarms?cursor=nope", Some(READ_KEY), None, 400, "malformed").await;
    let message = refused(&server, Method::GET, "/v3/alarms?mac=xyz", Some(READ_KEY), None, 422, "invalid_data").await;
    assert!(message.starts_with("mac: "), "{message}");

    let long = serde_json::to_vec(&json!({"Note": "n".repeat(1001)})).unwrap();
    let message = refused(&server, Method::POST, &acknowledge, Some(WRITE_KEY), Some(&long), 422, "invalid_data").await;
    assert_eq!(message, "Note: must be at most 1000 characters, got 1001");
    let message =
        refused(&server, Method::POST, &acknowledge, Some(WRITE_KEY), Some(br#"{"Note": 7}"#), 422, "invalid_data")
            .await;
    assert_eq!(message, "Note: must be a string, got a number");
    let message =
        refused(&server, Method::POST, &acknowledge, Some(WRITE_KEY), Some(b"{\"Note\": "), 400, "malformed").await;
    assert!(message.starts_with("request body is not valid JSON"), "{message}");
    refused(&server, Method::POST, &acknowledge, Some(WRITE_KEY), Some(b"[]"), 400, "malformed").await;

    refused(&server, Method::GET, "/v3/alarms", None, None, 401, "unauthorized").await;
    refused(&server, Method::POST, &acknowledge, None, None, 401, "unauthorized").await;
    let message = refused(&server, Method::POST, &acknowledge, Some(READ_KEY), None, 403, "forbidden").await;
    assert!(message.contains("write authority"), "{message}");

    let alarm = server.ok(Method::GET, &path(&id), None).await;
    assert_eq!(alarm["State"], "open", "still open after every refusal");
    server.stop().await;
}

pub(crate) async fn a_second_change_that_cannot_follow_the_first_is_a_conflict_and_changes_nothing(mode: Mode) {
    let server = Server::start(mode).await;
    let id = raise_alarm(&server, 1, 0.0).await["EventID"].as_str().unwrap().to_owned();
    let (acknowledge, resolve) = (format!("{}/acknowledge", path(&id)), format!("{}/resolve", path(&id)));
    server.ok(Method::POST, &acknowledge, Some(json!({"Note": "first"}))).await;
    let message = refused(&server, Method::POST, &acknowledge, Some(WRITE_KEY), Some(b"{}"), 409, "conflict").await;
    assert_eq!(message, format!("alarm {id} is acknowledged already; only an alarm that is open can be acknowledged"));
    let resolved = server.ok(Method::POST, &resolve, None).await;
    assert_eq!(resolved["AcknowledgedNote"], "first", "the first acknowledgement stands");
    for p in [&acknowledge, &resolve] {
        let message = refused(&server, Method::POST, p, Some(WRITE_KEY), None, 409, "conflict").await;
        assert!(message.starts_with(&format!("alarm {id} is resolved already; only an alarm that is ")), "{message}");
    }
    assert_eq!(server.ok(Method::GET, &path(&id), None).await, resolved);
    assert_eq!(resolved["Event"]["EventID"], json!(id));
    server.stop().await;
}
