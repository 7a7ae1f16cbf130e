//! The event history (`GET /v3/events`) and the zone reports built on it
//! (`GET /v3/modules/zones/{ZoneID}/visits` and `.../occupancy`) seen by an HTTP client, in
//! both deployment modes: events produced by positions as ingest publishes them, pages
//! followed by their `NextCursor`, reports compared with a scenario computed by hand.
#![allow(clippy::unwrap_used)]

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use zonecast_model::format_timestamp;
use zonecast_tests::{Mode, READ_KEY, Server, assert_error, both_modes, eventually, next_json, sphere};

const WAIT: Duration = Duration::from_secs(10);

fn mac(n: u32) -> String {
    format!("00:00:00:00:{:02X}:{:02X}", n >> 8, n & 0xff)
}

fn ms(n: i64) -> chrono::Duration {
    chrono::Duration::milliseconds(n)
}

/// Now, to the millisecond (event times are kept to the millisecond).
fn now_ms() -> DateTime<Utc> {
    DateTime::from_timestamp_millis(Utc::now().timestamp_millis()).unwrap()
}

/// Waits until the wall clock has passed `t`.
async fn clock_passes(t: DateTime<Utc>) {
    eventually(WAIT, || async { (Utc::now() > t).then_some(()) }).await;
}

/// `GET path` as a reader; the status and the JSON body.
async fn get(server: &Server, path: &str) -> (StatusCode, Value) {
    server.call(Method::GET, path, Some(READ_KEY), None).await
}

/// `GET path` as a reader, which must answer 200.
async fn ok(server: &Server, path: &str) -> Value {
    let (status, body) = get(server, path).await;
    assert_eq!(status, StatusCode::OK, "GET {path} answered {body}");
    body
}

/// Every event of `GET /v3/events?<query>`, page after page of `limit`, until `NextCursor` is
/// null; also how many pages it took.
async fn all_pages(server: &Server, query: &str, limit: usize) -> (Vec<Value>, usize) {
    let (mut events, mut pages, mut cursor) = (Vec::new(), 0, None::<String>);
    loop {
        let mut path = format!("/v3/events?limit={limit}&{query}");
        if let Some(cursor) = &cursor {
            path.push_str(&format!("&cursor={cursor}"));
        }
        let page = ok(server, &path).await;
        let got = page["Events"].as_array().unwrap();
        assert!(got.len() <= limit, "a page holds at most its limit");
        events.extend(got.iter().cloned());
        pages += 1;
        match page["NextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return (events, pages),
        }
    }
}

fn event_ids(events: &[Value]) -> Vec<String> {
    events.iter().map(|e| e["EventID"].as_str().unwrap().to_owned()).collect()
}

/// Every EventID the bus carries until `count` have come.
async fn tapped(tap: &mut zonecast_bus::Subscription, count: usize) -> Vec<Value> {
    let mut out = Vec::new();
    while out.len() < count {
        out.push(next_json(tap, WAIT).await);
    }
    out
}

/// Each of `devices` devices enters (even rounds) or leaves (odd rounds) the zone around the
/// origin, `rounds` times.
async fn toggle(server: &Server, first: u32, devices: u32, rounds: u32) {
    let t = Utc::now();
    for round in 0..rounds {
        let x = if round % 2 == 0 { 0.0 } else { 50.0 };
        let at = t + ms(i64::from(round) * 10);
        let updates = (first..first + devices)
            .map(|n| zonecast_model::PositionUpdate {
                mac: mac(n).parse().unwrap(),
                position: [x, 0.0, 0.0],
                timestamp: at,
                gateway_uri: None,
                extra: Default::default(),
            })
            .collect();
        server.publish_positions(updates).await;
    }
}

async fn paging_returns_every_event_once_in_order_while_more_arrive(mode: Mode) {
    let server = Arc::new(Server::start(mode).await);
    server.create_zone(sphere("yard", [0.0, 0.0, 0.0], 5.0)).await;
    let mut tap = server.events().await;
    let (devices, rounds) = (5, 6);
    toggle(&server, 0, devices, rounds).await;
    tapped(&mut tap, (devices * rounds) as usize).await;
    // More events arrive while the client pages.
    let producer = tokio::spawn({
        let server = server.clone();
        async move { toggle(&server, 100, devices, rounds).await }
    });
    let (while_arriving, pages) = all_pages(&server, "", 7).await;
    producer.await.unwrap();
    tapped(&mut tap, (devices * rounds) as usize).await;
    assert!(pages >= 5, "30 events or more in pages of 7: {pages} pages");
    let (everything, _) = all_pages(&server, "", 1000).await;
    assert_eq!(everything.len(), (2 * devices * rounds) as usize, "every event is in the history once");
    let ids = event_ids(&while_arriving);
    assert_eq!(ids.iter().collect::<HashSet<_>>().len(), ids.len(), "no event came twice");
    assert!(ids.len() >= (devices * rounds) as usize, "every event stored before the first page is in");
    assert_eq!(ids, event_ids(&everything)[..ids.len()], "the pages read the log in its order, missing nothing");
    drop(tap);
    Arc::into_inner(server).unwrap().stop().await;
}

async fn history_narrows_by_type_zone_mac_and_storing_time(mode: Mode) {
    let server = Server::start(mode).await;
    let mut high = sphere("high", [0.0, 0.0, 0.0], 2.0);
    high["AlertLevel"] = json!(5);
    let high = server.create_zone(high).await["ZoneID"].as_str().unwrap().to_owned();
    let low = server.create_zone(sphere("low", [100.0, 0.0, 0.0], 2.0)).await["ZoneID"].as_str().unwrap().to_owned();
    let mut tap = server.events().await;
    let (d1, d2) = (mac(1), mac(2));
    let t = Utc::now();
    server.position(&d1, [0.0, 0.0, 0.0], t).await;
    server.position(&d2, [100.0, 0.0, 0.0], t + ms(10)).await;
    let zone_events = |all: &[Value]| all.iter().filter(|e| e["Category"] == "ZONE").count();
    let mut first = Vec::new();
    while zone_events(&first) < 2 {
        first.push(next_json(&mut tap, WAIT).await);
    }
    // Alarms come with their entries: the high zone's DEVICE_ALARM is the last of the first part.
    while !first.iter().any(|e| e["Type"] == "DEVICE_ALARM") {
        first.push(next_json(&mut tap, WAIT).await);
    }
    let between = Utc::now() + ms(5);
    clock_passes(between).await;
    server.position(&d1, [50.0, 0.0, 0.0], t + ms(20)).await;
    server.position(&d2, [50.0, 0.0, 0.0], t + ms(30)).await;
    // Both exits, whatever alarms of the first part still come before them.
    let mut exits = 0;
    while exits < 2 {
        exits += usize::from(next_json(&mut tap, WAIT).await["Type"] == "ZONE_EXIT");
    }
    let (everything, _) = all_pages(&server, "", 1000).await;
    assert_eq!(zone_events(&everything), 4, "{everything:?}");
    let zone_of = |e: &Value| e["Content"]["ZoneID"].as_str().unwrap_or_default().to_owned();
    let is_exit = |e: &Value| e["Type"] == "ZONE_EXIT" || e["Type"] == "ALARM_CLEARED";
    type Wanted<'a> = Box<dyn Fn(&Value) -> bool + 'a>;
    let cases: Vec<(String, Wanted<'_>)> = vec![
        ("type=ZONE_EXIT".into(), Box::new(|e| e["Type"] == "ZONE_EXIT")),
        (
            "type=zone_enter&type=DEVICE_ALARM".into(),
            Box::new(|e| e["Type"] == "ZONE_ENTER" || e["Type"] == "DEVICE_ALARM"),
        ),
        (format!("zone={}", high.to_ascii_lowercase()), Box::new(|e| zone_of(e) == high)),
        (format!("mac={}", d2.replace(':', "-").to_ascii_lowercase()), Box::new(|e| e["Source"]["MAC"] == d2.as_str())),
        (
            format!("type=ZONE_ENTER,ZONE_EXIT&zone={low},{high}&mac={d1}"),
            Box::new(|e| e["Category"] == "ZONE" && e["Source"]["MAC"] == d1.as_str()),
        ),
        // The exits, and the end of the device alarm's condition that the first one brings.
        (format!("from={}", format_timestamp(&between)), Box::new(|e| is_exit(e))),
        (format!("to={}", format_timestamp(&between)), Box::new(|e| !is_exit(e))),
    ];
    for (query, wanted) in cases {
        let expected: Vec<Value> = everything.iter().filter(|e| wanted(e)).cloned().collect();
        assert!(!expected.is_empty(), "{query}: the scenario gives it something");
        let (got, _) = all_pages(&server, &query, 2).await;
        assert_eq!(got, expected, "{query} returns exactly the matching events, in order");
    }
    let (none, pages) = all_pages(&server, &format!("from={}", format_timestamp(&(Utc::now() + ms(60_000)))), 10).await;
    assert_eq!((none.len(), pages), (0, 1), "a range with nothing stored answers at once, empty, without a cursor");
    server.stop().await;
}

async fn bad_queries_are_refused_and_credentials_are_required(mode: Mode) {
    let server = Server::start(mode).await;
    let zone = server.create_zone(sphere("cell", [0.0, 0.0, 0.0], 1.0)).await["ZoneID"].as_str().unwrap().to_owned();
    let cases = [
        ("/v3/events?limit=0", 422, "limit"),
        ("/v3/events?limit=1001", 422, "limit"),
        ("/v3/events?limit=ten", 422, "limit"),
        ("/v3/events?cursor=not-a-cursor", 400, "cursor"),
        ("/v3/events?cursor=", 400, "cursor"),
        ("/v3/events?from=yesterday", 422, "from"),
        ("/v3/events?from=2026-11-21T10:00:00Z&to=2026-11-21T09:00:00Z", 422, "from"),
        ("/v3/events?type=LOCATION_RAW_UPDATE", 422, "type"),
        ("/v3/events?zone=nope", 422, "zone"),
        ("/v3/events?since=1", 422, "since"),
        ("/v3/events?filter=%5B", 400, "filter"),
    ];
    for (path, status, named) in cases {
        let kind = if status == 400 { "malformed" } else { "invalid_data" };
        let message = assert_error(&get(&server, path).await, status, kind);
        assert!(message.starts_with(named), "{path}: {message}");
    }
    let report = format!("/v3/modules/zones/{zone}");
    let from = format_timestamp(&Utc::now());
    let cases = [
        (format!("{report}/occupancy?from={from}&step=0"), 422, "step"),
        (format!("{report}/occupancy?from={from}&step=86401"), 422, "step"),
        (format!("{report}/occupancy?from={from}&step=soon"), 422, "step"),
        (format!("{report}/occupancy?from=2020-01-01T00:00:00Z&to=2020-01-02T00:00:00Z&step=1"), 422, "step"),
        (format!("{report}/occupancy?step=60"), 422, "from"),
        (format!("{report}/occupancy?from={from}"), 422, "step"),
        (format!("{report}/visits?to=noon"), 422, "to"),
        (format!("{report}/visits?step=60"), 422, "step"),
    ];
    for (path, status, named) in cases {
        let message = assert_error(&get(&server, &path).await, status, "invalid_data");
        assert!(message.starts_with(named), "{path}: {message}");
    }
    let unknown = uuid::Uuid::new_v4();
    for path in [
        format!("/v3/modules/zones/{unknown}/visits"),
        format!("/v3/modules/zones/{unknown}/occupancy?from={from}&step=60"),
        "/v3/modules/zones/not-a-zone/visits".to_owned(),
    ] {
        assert_error(&get(&server, &path).await, 404, "not_found");
    }
    for path in ["/v3/events".to_owned(), format!("{report}/visits"), format!("{report}/occupancy?from={from}&step=60")]
    {
        assert_error(&server.call(Method::GET, &path, None, None).await, 401, "unauthorized");
        assert_error(&server.call(Method::GET, &path, Some("wrong-key"), None).await, 401, "unauthorized");
    }
    server.stop().await;
}

/// In the all-in-one the history is the journal file, which a restart keeps; over NATS it is
/// the events stream, read here directly and compared.
async fn the_history_is_the_event_log(mode: Mode) {
    let server = Server::start(mode).await;
    server.create_zone(sphere("yard", [0.0, 0.0, 0.0], 5.0)).await;
    let mut tap = server.events().await;
    toggle(&server, 0, 3, 4).await;
    tapped(&mut tap, 12).await;
    drop(tap);
    let (before, _) = all_pages(&server, "", 5).await;
    assert_eq!(before.len(), 12);
    let query = zonecast_bus::journal::HistoryQuery::new(zonecast_bus::journal::HistoryStart::Oldest, 1000, 1000);
    let logged = server.journal().history(&query).await.unwrap();
    let logged: Vec<Value> = logged.records.iter().map(|r| serde_json::from_slice(&r.payload).unwrap()).collect();
    assert_eq!(before, logged, "the history is what the event log holds");
    let server = match mode {
        Mode::AllInOne => {
            let server = server.restart().await;
            let (after, _) = all_pages(&server, "", 5).await;
            assert_eq!(after, before, "the history survives a restart");
            server
        }
        Mode::Distributed => server,
    };
    server.stop().await;
}

/// One CSV answer: its rows, the header first (no field of these reports needs quoting).
async fn csv(server: &Server, path: &str) -> Vec<Vec<String>> {
    let response = server
        .http
        .get(format!("{}{path}", server.base))
        .header("X-API-Key", READ_KEY)
        .header("Accept", "text/csv")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "text/csv; charset=utf-8");
    let text = response.text().await.unwrap();
    assert!(text.ends_with("\r\n"), "{text:?}");
    text.trim_end_matches("\r\n").split("\r\n").map(|line| line.split(',').map(str::to_owned).collect()).collect()
}

fn text(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

async fn visits_and_occupancy_match_a_scenario_computed_by_hand(mode: Mode) {
    let server = Server::start(mode).await;
    let setting = |value: u64| json!({"SettingName": "DeviceTimeoutSeconds", "SettingValue": value});
    server.ok(Method::PUT, "/v3/modules/zones/settings", Some(setting(1))).await;
    let zone = server.create_zone(sphere("dock", [0.0, 0.0, 0.0], 2.0)).await["ZoneID"].as_str().unwrap().to_owned();
    let other = server.create_zone(sphere("gate", [100.0, 0.0, 0.0], 2.0)).await["ZoneID"].as_str().unwrap().to_owned();
    let mut tap = server.events().await;
    let (a, b, c, d) = (mac(0xA), mac(0xB), mac(0xC), mac(0xD));
    let t = now_ms();
    // A enters at t and walks out at t+100 ms; B enters at t+50 ms and falls silent: it times
    // out one second after its last position.
    server.position(&a, [0.0, 0.0, 0.0], t).await;
    server.position(&b, [0.5, 0.0, 0.0], t + ms(50)).await;
    server.position(&a, [50.0, 0.0, 0.0], t + ms(100)).await;
    let timed_out = next_matching(&mut tap, |e| e["Type"] == "ZONE_EXIT" && e["Source"]["MAC"] == b.as_str()).await;
    assert_eq!(timed_out["Content"]["Reason"], "timeout");
    server.ok(Method::PUT, "/v3/modules/zones/settings", Some(setting(0))).await;
    // C enters at t+1.5 s and stays; D enters the other zone, which is then deactivated.
    clock_passes(t + ms(1600)).await;
    server.position(&c, [0.0, 0.5, 0.0], t + ms(1500)).await;
    next_matching(&mut tap, |e| e["Type"] == "ZONE_ENTER" && e["Source"]["MAC"] == c.as_str()).await;
    server.position(&d, [100.0, 0.0, 0.0], t + ms(1600)).await;
    next_matching(&mut tap, |e| e["Type"] == "ZONE_ENTER" && e["Source"]["MAC"] == d.as_str()).await;
    // The evaluator has D inside once the zone shows it among its colliding devices.
    eventually(WAIT, || async {
        let gate = server.ok(Method::GET, &format!("/v3/modules/zones/{other}"), None).await;
        (gate["CollidingDevices"].as_array().unwrap().iter().any(|x| x["MAC"] == d.as_str())).then_some(())
    })
    .await;
    server.ok(Method::POST, "/v3/modules/zones/deactivate", Some(json!([other]))).await;
    let deactivated = next_matching(&mut tap, |e| e["Type"] == "ZONE_EXIT" && e["Source"]["MAC"] == d.as_str()).await;

    let at = |n: i64| format_timestamp(&(t + ms(n)));
    let (from, to) = (at(-1000), at(600_000));
    let asked = Utc::now();
    let visits = ok(&server, &format!("/v3/modules/zones/{zone}/visits?from={from}&to={to}")).await;
    let answered = Utc::now();
    let visits = visits.as_array().unwrap().clone();
    assert_eq!(visits.len(), 3, "{visits:?}");
    let row = |v: &Value| (v["MAC"].clone(), v["EntryTime"].clone(), v["ExitTime"].clone(), v["Reason"].clone());
    assert_eq!(row(&visits[0]), (json!(a), json!(at(0)), json!(at(100)), json!("position")));
    assert_eq!(row(&visits[1]), (json!(b), json!(at(50)), json!(at(1050)), json!("timeout")));
    assert_eq!(row(&visits[2]), (json!(c), json!(at(1500)), Value::Null, Value::Null));
    assert_eq!((visits[0]["DwellSeconds"].as_f64(), visits[1]["DwellSeconds"].as_f64()), (Some(0.1), Some(1.0)));
    let still_inside = visits[2]["DwellSeconds"].as_f64().unwrap();
    let dwell = |until: DateTime<Utc>| (until - (t + ms(1500))).num_milliseconds() as f64 / 1000.0;
    assert!(
        dwell(asked) - 0.001 <= still_inside && still_inside <= dwell(answered),
        "a device inside dwells until now: {still_inside}"
    );
    assert_eq!(visits[0]["CollisionID"], visits[0]["CollisionID"].as_str().unwrap().to_ascii_uppercase().as_str());
    assert_eq!(visits[1]["CollisionID"], timed_out["Content"]["CollisionID"]);

    // Windows: a visit that began before `from` and one still open are found; one inside at
    // the end dwells until it.
    let window = ok(&server, &format!("/v3/modules/zones/{zone}/visits?from={}&to={}", at(150), at(1300))).await;
    assert_eq!(window.as_array().unwrap().iter().map(|v| v["MAC"].clone()).collect::<Vec<_>>(), [json!(b)]);
    let window = ok(&server, &format!("/v3/modules/zones/{zone}/visits?from={}&to={}", at(1400), at(1600))).await;
    assert_eq!(row(&window[0]), (json!(c), json!(at(1500)), Value::Null, Value::Null));
    assert_eq!(window[0]["DwellSeconds"].as_f64(), Some(0.1));

    let gate = ok(&server, &format!("/v3/modules/zones/{other}/visits")).await;
    assert_eq!(
        row(&gate[0]),
        (json!(d), json!(at(1600)), deactivated["Content"]["ExitTime"].clone(), json!("deactivated"))
    );

    // Occupancy in steps of one second from t: A and B in the first (both at once for 50 ms),
    // B into the second until it times out, C from the middle of the second on.
    let path = format!("/v3/modules/zones/{zone}/occupancy?from={}&to={}&step=1", at(0), at(3000));
    // Steps after now count no one: the last one must have begun when it is asked for.
    clock_passes(t + ms(2000)).await;
    let steps = ok(&server, &path).await;
    let expected = json!([
        {"Start": at(0), "Inside": 1, "Peak": 2, "Entries": 2},
        {"Start": at(1000), "Inside": 1, "Peak": 1, "Entries": 1},
        {"Start": at(2000), "Inside": 1, "Peak": 1, "Entries": 0},
    ]);
    assert_eq!(steps, expected);
    // And a step that begins after now has no one inside.
    let future = format!("/v3/modules/zones/{zone}/occupancy?from={}&step=60&to={}", at(0), at(3_600_000));
    let future = ok(&server, &future).await;
    assert_eq!((future[0]["Inside"].clone(), future[0]["Peak"].clone()), (json!(1), json!(2)));
    assert_eq!((future[1]["Inside"].clone(), future[1]["Peak"].clone()), (json!(0), json!(0)), "{future}");

    // The same answers as CSV.
    let rows = csv(&server, &path).await;
    assert_eq!(rows[0], ["Start", "Inside", "Peak", "Entries"]);
    let from_json: Vec<Vec<String>> = expected
        .as_array()
        .unwrap()
        .iter()
        .map(|s| ["Start", "Inside", "Peak", "Entries"].iter().map(|k| text(&s[*k])).collect())
        .collect();
    assert_eq!(rows[1..], from_json[..]);
    let rows = csv(&server, &format!("/v3/modules/zones/{zone}/visits?from={}&to={}", at(-1000), at(1400))).await;
    assert_eq!(rows[0], ["MAC", "CollisionID", "EntryTime", "ExitTime", "DwellSeconds", "Reason"]);
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert_eq!(rows[1], [a.clone(), text(&visits[0]["CollisionID"]), at(0), at(100), "0.1".into(), "position".into()]);
    assert_eq!(rows[2], [b.clone(), text(&visits[1]["CollisionID"]), at(50), at(1050), "1".into(), "timeout".into()]);
    server.stop().await;
}

/// The next event of `tap` that `wanted` takes.
async fn next_matching(tap: &mut zonecast_bus::Subscription, wanted: impl Fn(&Value) -> bool) -> Value {
    zonecast_tests::next_matching(tap, WAIT, wanted).await
}

both_modes!(
    paging_returns_every_event_once_in_order_while_more_arrive,
    history_narrows_by_type_zone_mac_and_storing_time,
    bad_queries_are_refused_and_credentials_are_required,
    the_history_is_the_event_log,
    visits_and_occupancy_match_a_scenario_computed_by_hand,
);
