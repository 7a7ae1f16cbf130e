//! The alarm list: an alarm raised by a zone entry appears in every signed-in console, named by
//! the registry, is acknowledged with a note in one and seen acknowledged in another, resolved
//! there and seen resolved in the first; the sound can be turned off and stays off. One entry
//! per condition, counted and cleared, filtered, grouped by zone, acknowledged and shelved a
//! zone at a time.

use reqwest::Method;
use serde_json::json;
use zonecast_tests::browser::Browser;
use zonecast_tests::{ADMIN_KEY, Mode, Server, WRITE_KEY, both_modes, sphere};

use super::{WAIT, mode_name, post_position, signed_in};

/// Waits until the console shows an alarm of `mac` in `state`; answers its AlarmID.
async fn alarm_in(browser: &Browser, mac: &str, state: &str) -> String {
    let script = format!("document.querySelector('#alarm-list li[data-state={state}][data-mac=\"{mac}\"]')?.id");
    let (id, _) = browser.until(&format!("an {state} alarm of {mac}"), WAIT, &script).await;
    id.as_str().unwrap().strip_prefix("alarm-").unwrap().to_owned()
}

/// The text of alarm `id`'s entry.
async fn entry_text(browser: &Browser, id: &str) -> String {
    let script = format!("return document.getElementById('alarm-{id}').textContent");
    browser.execute(&script, json!([])).await.as_str().unwrap().to_owned()
}

/// Waits until alarm `id` is shown in `state`.
async fn shown_as(browser: &Browser, id: &str, state: &str) {
    let script = format!("document.getElementById('alarm-{id}')?.dataset.state === '{state}'");
    browser.until(&format!("alarm {id} {state}"), WAIT, &script).await;
}

/// Waits until the console's events stream is open.
async fn following(browser: &Browser) {
    let open = "window.zonecastConsole.stats().streams.events === 'open'";
    browser.until("the event stream open", WAIT, open).await;
}

async fn an_alarm_acknowledged_in_one_console_is_seen_acknowledged_in_another(mode: Mode) {
    let server = Server::start(mode).await;
    let mut zone = sphere("Keep out", [5.0, 5.0, 1.5], 2.0);
    zone["AlertLevel"] = json!(9);
    server.create_zone(zone).await;
    let forklift = "00:C0:FF:EE:A1:07";
    server.ok(Method::PUT, &format!("/v3/devices/{forklift}"), Some(json!({"Name": "Forklift 7"}))).await;

    let first = signed_in(&server, WRITE_KEY).await;
    let second = signed_in(&server, ADMIN_KEY).await;
    for browser in [&first, &second] {
        following(browser).await;
        let empty = "!document.getElementById('alarm-empty').hidden";
        browser.until("no alarm yet", WAIT, empty).await;
        let legend = browser.text("#alarms-panel .legend").await;
        for word in ["site", "device", "dwell", "offline", "open", "acknowledged", "resolved"] {
            assert!(legend.contains(word), "{legend}");
        }
    }
    post_position(&server, forklift, [5.5, 5.0, 1.5]).await;

    // Both consoles show it open, with its kind, the device's name and the zone.
    let id = alarm_in(&first, forklift, "open").await;
    assert_eq!(alarm_in(&second, forklift, "open").await, id);
    let entry = entry_text(&first, &id).await;
    for part in ["site alarm", "Forklift 7", "Keep out", "Acknowledge", "Resolve"] {
        assert!(entry.contains(part), "{part} in {entry}");
    }
    first.screenshot(&format!("{}-alarm-open", mode_name(mode))).await;

    // Acknowledged in the first with a note; the second sees it acknowledged, with the note.
    first.type_into("#alarm-note", "Anna is on her way").await;
    first.click(&format!("#alarm-{id} .alarm-acknowledge")).await;
    shown_as(&first, &id, "acknowledged").await;
    shown_as(&second, &id, "acknowledged").await;
    let seen = entry_text(&second, &id).await;
    assert!(seen.contains("Anna is on her way") && seen.contains("acknowledged by api-key:"), "{seen}");
    let button = format!("return document.querySelector('#alarm-{id} .alarm-acknowledge') === null");
    assert_eq!(second.execute(&button, json!([])).await, json!(true), "no Acknowledge button once acknowledged");
    assert_eq!(first.execute("return document.getElementById('alarm-note').value", json!([])).await, json!(""));
    second.screenshot(&format!("{}-alarm-acknowledged", mode_name(mode))).await;

    // Resolved in the second; the first sees it resolved.
    second.click(&format!("#alarm-{id} .alarm-resolve")).await;
    shown_as(&second, &id, "resolved").await;
    shown_as(&first, &id, "resolved").await;
    let stored = server.ok(Method::GET, &format!("/v3/alarms/{id}"), None).await;
    assert_eq!((&stored["State"], &stored["AcknowledgedNote"]), (&json!("resolved"), &json!("Anna is on her way")));

    // The sound is turned off, and stays off for this browser.
    first.click("#alarm-sound").await;
    let off = "document.getElementById('alarm-sound').getAttribute('aria-pressed') === 'false' \
               && localStorage.getItem('zonecast.alarmSound') === 'off'";
    first.until("the sound off", WAIT, off).await;
    first.goto(&format!("{}/", server.base)).await;
    first.until("signed in again", WAIT, "window.zonecastConsole.stats().signedIn").await;
    first.until("the sound still off", WAIT, off).await;
    shown_as(&first, &id, "resolved").await;
    first.close().await;
    second.close().await;
    server.stop().await;
}

/// Waits until `script` (an expression over the entry `a` of alarm `id`) holds.
async fn entry_until(browser: &Browser, id: &str, what: &str, script: &str) {
    let check =
        format!("(() => {{ const a = document.getElementById('alarm-{id}'); return Boolean(a && ({script})); }})()");
    browser.until(&format!("alarm {id}: {what}"), WAIT, &check).await;
}

/// One condition, one entry: an entry into a zone shows one alarm, its exit shows it cleared,
/// the next entry counts on it (×2, active again). The filters keep active or cleared ones; the
/// grouping by zone acknowledges all of a zone's open alarms at once and shelves the zone (and
/// takes it back); the list can take the whole side of the page; the new alarms of the last ten
/// minutes are counted.
async fn one_alarm_per_condition_is_counted_cleared_grouped_acknowledged_by_zone_and_shelved(mode: Mode) {
    let server = Server::start(mode).await;
    let mut zone = sphere("Bay 3", [5.0, 5.0, 1.5], 2.0);
    zone["AlertLevel"] = json!(9);
    let zone_id = server.create_zone(zone).await["ZoneID"].as_str().unwrap().to_owned();
    let walker = "00:C0:FF:EE:A1:08";
    let browser = signed_in(&server, WRITE_KEY).await;
    following(&browser).await;

    post_position(&server, walker, [5.5, 5.0, 1.5]).await;
    let id = alarm_in(&browser, walker, "open").await;
    entry_until(&browser, &id, "active, raised once", "a.dataset.active === 'true' && a.dataset.count === '1'").await;
    post_position(&server, walker, [20.0, 5.0, 1.5]).await;
    entry_until(&browser, &id, "cleared", "a.dataset.active === 'false' && a.textContent.includes('cleared')").await;
    post_position(&server, walker, [5.5, 5.0, 1.5]).await;
    entry_until(
        &browser,
        &id,
        "raised twice, active again",
        "a.dataset.active === 'true' && a.textContent.includes('×2')",
    )
    .await;
    let entries = "document.querySelectorAll('#alarm-list li.alarm').length";
    assert_eq!(browser.execute(&format!("return {entries}"), json!([])).await, json!(1), "one entry for the condition");
    let stored = server.ok(Method::GET, &format!("/v3/alarms/{id}"), None).await;
    assert_eq!((&stored["Count"], &stored["Active"]), (&json!(2), &json!(true)));
    browser
        .until("one new alarm in 10 minutes", WAIT, "document.getElementById('alarm-flood').dataset.count === '1'")
        .await;

    // The filters.
    browser.select("#alarm-filter", "cleared").await;
    browser.until("no cleared alarm", WAIT, &format!("!document.getElementById('alarm-{id}')")).await;
    browser.select("#alarm-filter", "active").await;
    alarm_in(&browser, walker, "open").await;

    // Grouped by zone: all of the zone's open alarms acknowledged at once, with the note.
    browser.click("#alarm-group").await;
    let group = format!("#alarm-group-{zone_id}");
    browser
        .until("the zone's group", WAIT, &format!("document.querySelector('{group}')?.textContent.includes('Bay 3')"))
        .await;
    browser.type_into("#alarm-note", "night shift").await;
    browser.click(&format!("{group} .alarm-acknowledge-zone")).await;
    shown_as(&browser, &id, "acknowledged").await;
    let stored = server.ok(Method::GET, &format!("/v3/alarms/{id}"), None).await;
    assert_eq!((&stored["State"], &stored["AcknowledgedNote"]), (&json!("acknowledged"), &json!("night shift")));
    browser.screenshot(&format!("{}-alarms-grouped", mode_name(mode))).await;

    // Shelved for an hour from its group, listed, and taken back.
    browser.click(&format!("{group} .alarm-shelve")).await;
    browser
        .until(
            "the zone shelved",
            WAIT,
            "document.querySelector('#alarm-shelves .shelf')?.textContent.startsWith('Bay 3 until')",
        )
        .await;
    let shelves = server.ok(Method::GET, "/v3/alarms/shelves", None).await;
    assert_eq!(shelves[0]["ZoneID"], json!(zone_id));
    browser.click("#alarm-shelves .shelf button").await;
    browser.until("the shelf taken back", WAIT, "document.getElementById('alarm-shelves').hidden").await;
    assert!(server.ok(Method::GET, "/v3/alarms/shelves", None).await.as_array().unwrap().is_empty());

    // The whole side of the page for the list.
    browser.click("#alarm-enlarge").await;
    let large = "document.body.classList.contains('alarms-large') && getComputedStyle(document.getElementById('zones-panel')).display === 'none'";
    browser.until("the list enlarged", WAIT, large).await;
    browser.screenshot(&format!("{}-alarms-enlarged", mode_name(mode))).await;
    browser.close().await;
    server.stop().await;
}

both_modes!(
    an_alarm_acknowledged_in_one_console_is_seen_acknowledged_in_another,
    one_alarm_per_condition_is_counted_cleared_grouped_acknowledged_by_zone_and_shelved,
);
