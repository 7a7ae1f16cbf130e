//! Which events go to which topic: filters, changed topics, a dead broker beside a live one, and
//! positions taken only while a topic wants them.

use std::collections::{BTreeMap, BTreeSet};

use reqwest::Method;
use serde_json::json;
use uuid::Uuid;
use zonecast_model::{AlarmKind, ZoneEventKind};
use zonecast_tests::mosquitto::{Broker, Subscriber};
use zonecast_tests::{Mode, Server, eventually};

use super::{CONNECTIONS, WAIT, client_id, create, event, mac, plain, position, seq, wait_connected, wait_status};

pub(crate) async fn every_filter_form_routes_exactly_the_matching_events(mode: Mode) {
    let server = Server::start(mode).await;
    let broker = Broker::plain().await;
    let mut sub = Subscriber::new(&broker, "f/#").await;
    let (one, two, three, last) = (mac(0x11), mac(0x12), mac(0x13), mac(0xFF));
    let topics = [
        ("f/template", json!([{"FilterTemplate": "zone_events"}])),
        ("f/dashboard", json!([{"FilterTemplate": "dashboard"}])),
        ("f/equals", json!([{"Selector": "Source.MAC", "Type": "equals", "Match": one}])),
        ("f/regex", json!([{"Selector": "Content.ZoneName", "Type": "regex", "Match": "^dock-"}])),
        ("f/exists", json!([{"Selector": "Content.AlertLevel", "Type": "exists"}])),
        ("f/lt", json!([{"Selector": "Content.Position.2", "Type": "lt", "Match": 1}])),
        ("f/gte", json!([{"Selector": "Content.Position.2", "Type": "gte", "Match": 3}])),
        ("f/invert", json!([{"Selector": "Source.MAC", "Type": "equals", "Match": one, "Invert": true}])),
        (
            "f/all",
            json!([{"FilterTemplate": "position_events", "Children": {"all": [
                {"Selector": "Source.MAC", "Type": "equals", "Match": two},
                {"Selector": "Content.Position.2", "Type": "gte", "Match": 2}]}}]),
        ),
        (
            "f/any",
            json!([{"FilterTemplate": "zone_events", "Children": {"any": [
                {"Selector": "Content.ZoneName", "Type": "equals", "Match": "yard"},
                {"Selector": "Content.AlertLevel", "Type": "gte", "Match": 5}]}}]),
        ),
        ("f/everything", json!([])),
    ];
    let id = create(&server, plain(broker.port, &topics)).await;
    wait_connected(&server, &id).await;

    let zone = Uuid::new_v4().to_string().to_uppercase();
    let subjects = &server.subjects;
    position(&server, &one, 0.5, 1).await;
    position(&server, &two, 3.0, 2).await;
    let enter = json!({"ZoneID": zone, "ZoneName": "dock-a", "AlertLevel": 5, "Position": [0, 0, 10], "Sequence": 3});
    event(&server, subjects.zone_event(&zone, ZoneEventKind::Enter), "ZONE", "ZONE_ENTER", &one, enter).await;
    let exit = json!({"ZoneID": zone, "ZoneName": "yard", "AlertLevel": 1, "Position": [0, 0, 2.5], "Sequence": 4});
    event(&server, subjects.zone_event(&zone, ZoneEventKind::Exit), "ZONE", "ZONE_EXIT", &two, exit).await;
    let alarm = json!({"ZoneID": zone, "ZoneName": "dock-a", "AlertLevel": 9, "Sequence": 5});
    event(&server, subjects.alarm(AlarmKind::Site, &three), "ALARM", "SITE_ALARM", &three, alarm).await;
    position(&server, &two, 1.5, 6).await;
    // Published last and matched by the last topic, so once it is there everything is.
    position(&server, &last, 2.0, 7).await;
    let got = sub.until(WAIT, |t, v| t == "f/everything" && seq(v) == 7).await;

    let mut routed: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for (topic, value) in &got {
        routed.entry(topic.clone()).or_default().push(seq(value));
    }
    let expected: BTreeMap<String, Vec<u64>> = [
        ("f/template", vec![3, 4]),
        ("f/dashboard", vec![1, 2, 3, 4, 6, 7]),
        ("f/equals", vec![1, 3]),
        ("f/regex", vec![3, 5]),
        ("f/exists", vec![3, 4, 5]),
        ("f/lt", vec![1]),
        ("f/gte", vec![2, 3]),
        ("f/invert", vec![2, 4, 5, 6, 7]),
        ("f/all", vec![2]),
        ("f/any", vec![3, 4]),
        ("f/everything", vec![1, 2, 3, 4, 5, 6, 7]),
    ]
    .into_iter()
    .map(|(t, s)| (t.to_owned(), s))
    .collect();
    // Over NATS, positions and events arrive on two subscriptions, so compare each topic's set.
    // Positions and zone events come on two subscriptions, so the sentinel position may overtake
    // an event: compare each topic's set, waiting for stragglers, and refuse anything unexpected.
    let as_sets = |m: &BTreeMap<String, Vec<u64>>| -> BTreeMap<String, BTreeSet<u64>> {
        m.iter().map(|(t, s)| (t.clone(), s.iter().copied().collect())).collect()
    };
    let expected = as_sets(&expected);
    let mut sets = as_sets(&routed);
    assert_eq!(sets.values().map(BTreeSet::len).sum::<usize>(), got.len(), "no duplicates: {routed:?}");
    loop {
        for (topic, seqs) in &sets {
            let allowed = expected.get(topic).cloned().unwrap_or_default();
            assert!(seqs.is_subset(&allowed), "{topic} got {seqs:?}, but only {allowed:?} match its chain");
        }
        if sets == expected {
            break;
        }
        let (topic, value) = sub.next(WAIT).await;
        assert!(sets.entry(topic).or_default().insert(seq(&value)), "a duplicate: {value}");
    }
    server.stop().await;
}

pub(crate) async fn changing_topics_redirects_new_events_without_restarting_any_client(mode: Mode) {
    let server = Server::start(mode).await;
    let broker = Broker::plain().await;
    let mut sub = Subscriber::new(&broker, "zc/#").await;
    let a = create(&server, plain(broker.port, &[("zc/a/old", json!([]))])).await;
    let b = create(&server, plain(broker.port, &[("zc/b", json!([]))])).await;
    wait_connected(&server, &a).await;
    wait_connected(&server, &b).await;

    server.ok(Method::PUT, &format!("{CONNECTIONS}/{a}"), Some(plain(broker.port, &[("zc/a/new", json!([]))]))).await;
    // The change is announced on the bus; publish until an event shows it has been applied.
    let mut n = 0;
    loop {
        n += 1;
        position(&server, &mac(5), 1.0, n).await;
        let got = sub.until(WAIT, |t, v| t.starts_with("zc/a/") && seq(v) == n).await;
        if got.iter().any(|(t, v)| t == "zc/a/new" && seq(v) == n) {
            break;
        }
        assert!(n < 200, "the new topic was never used");
    }
    let after = n + 1;
    position(&server, &mac(5), 1.0, after).await;
    let mut seen = BTreeSet::new();
    while seen.len() < 2 {
        let (topic, value) = sub.next(WAIT).await;
        if seq(&value) == after {
            assert_ne!(topic, "zc/a/old", "after the switch nothing goes to the old topic");
            seen.insert(topic);
        }
    }
    assert_eq!(seen, BTreeSet::from(["zc/a/new".to_owned(), "zc/b".to_owned()]));
    assert_eq!((broker.connects(&client_id(&a)), broker.connects(&client_id(&b))), (1, 1), "{}", broker.log());

    // A change of client settings restarts that client only.
    let mut with_user = plain(broker.port, &[("zc/a/new", json!([]))]);
    with_user["username"] = json!("someone");
    server.ok(Method::PUT, &format!("{CONNECTIONS}/{a}"), Some(with_user)).await;
    eventually(WAIT, || async { (broker.connects(&client_id(&a)) == 2).then_some(()) }).await;
    wait_connected(&server, &a).await;
    assert_eq!(broker.connects(&client_id(&b)), 1, "{}", broker.log());

    // A deleted connection lets go of its broker; the others go on.
    server.ok(Method::DELETE, &format!("{CONNECTIONS}/{b}"), None).await;
    let gone = format!("Client {} ", client_id(&b));
    let let_go =
        |log: String| log.lines().any(|l| l.contains(&gone) && (l.contains("disconnected") || l.contains("closed")));
    eventually(WAIT, || async { let_go(broker.log()).then_some(()) }).await;
    position(&server, &mac(5), 1.0, 1000).await;
    let (topic, value) = sub.until(WAIT, |_, v| seq(v) == 1000).await.pop().unwrap();
    assert_eq!((topic.as_str(), seq(&value)), ("zc/a/new", 1000));
    server.stop().await;
}

pub(crate) async fn a_dead_or_hanging_broker_does_not_delay_another_connection(mode: Mode) {
    let server = Server::start(mode).await;
    let hanging = Broker::plain().await;
    let healthy = Broker::plain().await;
    // Accepts TCP connections (the kernel does) but never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    // A port where nothing listens and that no test's broker can be given (free ports come
    // from the ephemeral range): a released ephemeral port could become another test's
    // broker, which would then receive this connection's messages.
    let dead_port = 1;
    let mut hanging_sub = Subscriber::new(&hanging, "zc/#").await;
    let mut healthy_sub = Subscriber::new(&healthy, "zc/#").await;
    let a = create(&server, plain(hanging.port, &[("zc/a", json!([]))])).await;
    let b = create(&server, plain(healthy.port, &[("zc/b", json!([]))])).await;
    let c = create(&server, plain(silent.local_addr().unwrap().port(), &[("zc/c", json!([]))])).await;
    let d = create(&server, plain(dead_port, &[("zc/d", json!([]))])).await;
    wait_connected(&server, &a).await;
    wait_connected(&server, &b).await;

    hanging.pause();
    let count = 3000;
    for n in 1..=count {
        position(&server, &mac(6), 1.0, n).await;
    }
    let got = healthy_sub.until(WAIT, |_, v| seq(v) == count).await;
    let received: BTreeSet<u64> = got.iter().map(|(_, v)| seq(v)).collect();
    assert_eq!(received, (1..=count).collect(), "the healthy broker got everything while the other hung");
    wait_status(&server, &b, "everything forwarded", |s| s["forwarded"] == count).await;
    wait_status(&server, &a, "messages held for the hanging broker", |s| s["queued"].as_u64().unwrap() > 0).await;
    wait_status(&server, &d, "a connection error", |s| s["connected"] == false && s["lastError"].is_string()).await;
    wait_status(&server, &c, "a connection error", |s| s["connected"] == false && s["lastError"].is_string()).await;

    hanging.resume();
    let got = hanging_sub.until(WAIT, |_, v| seq(v) == count).await;
    let received: BTreeSet<u64> = got.iter().map(|(_, v)| seq(v)).collect();
    assert_eq!(received, (1..=count).collect(), "the hanging broker gets everything once it answers again");
    drop(silent);
    server.stop().await;
}

pub(crate) async fn positions_are_taken_from_the_bus_only_while_a_topic_wants_them(mode: Mode) {
    let server = Server::start(mode).await;
    let broker = Broker::plain().await;
    let mut sub = Subscriber::new(&broker, "zc/#").await;
    let zone_events = json!([{"FilterTemplate": "zone_events"}]);
    let id = create(&server, plain(broker.port, &[("zc/zones", zone_events.clone())])).await;
    wait_connected(&server, &id).await;
    let zone = Uuid::new_v4().to_string().to_uppercase();
    let enter = |n: u64| json!({"ZoneID": zone, "ZoneName": "dock", "Position": [0, 0, 1], "Sequence": n});

    // Only zone events are wanted: a position published before an event is not forwarded.
    position(&server, &mac(7), 1.0, 1).await;
    event(&server, server.subjects.zone_event(&zone, ZoneEventKind::Enter), "ZONE", "ZONE_ENTER", &mac(7), enter(2))
        .await;
    let got = sub.until(WAIT, |_, v| seq(v) == 2).await;
    assert_eq!(got.iter().map(|(t, v)| (t.as_str(), seq(v))).collect::<Vec<_>>(), vec![("zc/zones", 2)]);

    // A topic that takes everything: positions are subscribed to and forwarded again.
    let both = plain(broker.port, &[("zc/zones", zone_events), ("zc/all", json!([]))]);
    server.ok(Method::PUT, &format!("{CONNECTIONS}/{id}"), Some(both)).await;
    let mut n = 10;
    loop {
        n += 1;
        position(&server, &mac(7), 1.0, n).await;
        event(
            &server,
            server.subjects.zone_event(&zone, ZoneEventKind::Enter),
            "ZONE",
            "ZONE_ENTER",
            &mac(7),
            enter(n + 1000),
        )
        .await;
        let got = sub.until(WAIT, |_, v| seq(v) == n + 1000).await;
        if got.iter().any(|(t, v)| t == "zc/all" && seq(v) == n) {
            break;
        }
        assert!(n < 200, "positions were never forwarded after the change");
    }
    // And back: without a topic for them, positions stop.
    server
        .ok(
            Method::PUT,
            &format!("{CONNECTIONS}/{id}"),
            Some(plain(broker.port, &[("zc/zones", json!([{"FilterTemplate": "zone_events"}]))])),
        )
        .await;
    loop {
        n += 1;
        position(&server, &mac(7), 1.0, n).await;
        event(
            &server,
            server.subjects.zone_event(&zone, ZoneEventKind::Enter),
            "ZONE",
            "ZONE_ENTER",
            &mac(7),
            enter(n + 1000),
        )
        .await;
        let got = sub.until(WAIT, |_, v| seq(v) == n + 1000).await;
        if got.iter().all(|(t, _)| t == "zc/zones") {
            break;
        }
        assert!(n < 400, "positions were still forwarded after the topic was removed");
    }
    server.stop().await;
}
