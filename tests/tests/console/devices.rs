//! Device names from the registry: on the device's label in the view, in the timeline, in the
//! inspector, and the search that finds a device by name, MAC or group and selects it.

use reqwest::Method;
use serde_json::json;
use zonecast_tests::browser::{Browser, ENTER};
use zonecast_tests::{Mode, READ_KEY, Server, both_modes, sphere};

use super::{WAIT, mode_name, post_position, signed_in};

/// The path of device `mac` in the registry.
fn device(mac: &str) -> String {
    format!("/v3/devices/{mac}")
}

/// Waits until device `mac`'s label in the view shows `text`.
async fn label(browser: &Browser, mac: &str, text: &str) {
    let script = format!("window.zonecastConsole.deviceLabel('{mac}') === {text:?}");
    browser.until(&format!("the label of {mac} showing {text:?}"), WAIT, &script).await;
}

/// Waits until the timeline's entry of `mac`'s ZONE_ENTER names it `text`; answers the
/// entry's device button's tooltip.
async fn timeline_name(browser: &Browser, mac: &str, text: &str) -> String {
    let button = format!("document.querySelector('#timeline li[data-type=ZONE_ENTER][data-mac=\"{mac}\"] .event-mac')");
    let script = format!("{button}?.textContent === {text:?} && {button}.title");
    let what = format!("the ZONE_ENTER of {mac} in the timeline named {text:?}");
    browser.until(&what, WAIT, &script).await.0.as_str().unwrap().to_owned()
}

/// Types `text` into the search and waits until `mac` is among its results; answers the
/// result's text.
async fn search(browser: &Browser, text: &str, mac: &str) -> String {
    browser.type_into("#device-search", text).await;
    let result =
        format!("document.querySelector('#search-panel:not([hidden]) #search-results li[data-mac=\"{mac}\"]')");
    let what = format!("{mac} found by {text:?}");
    browser.until(&what, WAIT, &format!("{result}?.textContent")).await.0.as_str().unwrap().to_owned()
}

/// Waits until the inspector shows device `mac` named `name`.
async fn inspected(browser: &Browser, mac: &str, name: &str) {
    let info = "document.getElementById('device-info')";
    let script = format!("!{info}.hidden && {info}.dataset.mac === '{mac}' && {info}.dataset.name === {name:?}");
    browser.until(&format!("{mac} inspected as {name:?}"), WAIT, &script).await;
}

async fn devices_are_shown_by_name_and_found_by_name_mac_or_group(mode: Mode) {
    let server = Server::start(mode).await;
    let zone = server.create_zone(sphere("Dock", [5.0, 5.0, 1.5], 2.0)).await;
    let zone = zone["ZoneID"].as_str().unwrap();
    let forklift = "00:C0:FF:EE:00:07";
    let record = json!({"Name": "Forklift 7", "Group": "fleet", "Kind": "vehicle",
                        "Properties": {"capacity_kg": 2500, "fuel": "electric"}});
    server.ok(Method::PUT, &device(forklift), Some(record)).await;

    // Reading the registry needs read authority only.
    let browser = signed_in(&server, READ_KEY).await;
    let ready = "(() => { const s = window.zonecastConsole.stats(); return s.zonesDrawn === 1 \
                 && s.streams.events === 'open' && s.streams.positions === 'open'; })()";
    browser.until("the zone drawn and both streams open", WAIT, ready).await;
    post_position(&server, forklift, [5.5, 5.0, 1.5]).await;

    // Its label in the view, and its entry in the timeline, show its name; the MAC is the
    // entry's tooltip.
    label(&browser, forklift, "Forklift 7").await;
    let tooltip = timeline_name(&browser, forklift, "Forklift 7").await;
    assert!(tooltip.contains(forklift), "{tooltip}");
    let entry = format!("#timeline li[data-type=ZONE_ENTER][data-mac=\"{forklift}\"]");
    assert_eq!(
        browser.execute(&format!("return document.querySelector('{entry}').dataset.zoneId"), json!([])).await,
        json!(zone)
    );

    // Found by its group, by part of its MAC in any spelling, and by its name; chosen, it is
    // inspected with its record.
    let found = search(&browser, "fleet", forklift).await;
    assert!(found.contains("Forklift 7") && found.contains(forklift) && found.contains("fleet"), "{found}");
    search(&browser, "ee-00-07", forklift).await;
    search(&browser, "forklift", forklift).await;
    browser.screenshot(&format!("{}-device-search", mode_name(mode))).await;
    browser.click(&format!("#search-results li[data-mac=\"{forklift}\"]")).await;
    inspected(&browser, forklift, "Forklift 7").await;
    let text = |id: &str| format!("return document.getElementById('{id}').textContent");
    assert_eq!(browser.execute(&text("device-title"), json!([])).await, json!("Forklift 7"));
    assert_eq!(browser.execute(&text("device-mac-line"), json!([])).await, json!(forklift));
    assert_eq!(browser.execute(&text("device-group"), json!([])).await, json!("fleet"));
    assert_eq!(browser.execute(&text("device-kind"), json!([])).await, json!("vehicle"));
    let properties = browser.text("#device-properties").await;
    assert!(
        properties.contains("capacity_kg") && properties.contains("2500") && properties.contains("electric"),
        "{properties}"
    );
    browser
        .until("its zone", WAIT, &format!("document.querySelector('#device-zones li[data-zone-id=\"{zone}\"]')"))
        .await;
    browser.screenshot(&format!("{}-device-named", mode_name(mode))).await;

    // Its zone's visit report names it above its MAC.
    browser.click(&format!("#zone-{zone} .zone-name")).await;
    let row = format!("document.querySelector('#visits-rows tr[data-mac=\"{forklift}\"]')?.textContent");
    let (visit, _) = browser.until("its visit", WAIT, &row).await;
    let visit = visit.as_str().unwrap();
    assert!(visit.starts_with(&format!("Forklift 7{forklift}")) && visit.contains("inside"), "{visit}");

    // Registered after the console read the registry, and already moving: a search finds it
    // on the server; chosen with Enter, it is named everywhere.
    let cart = "00:C0:FF:EE:00:08";
    server.ok(Method::PUT, &device(cart), Some(json!({"Name": "Cart 8"}))).await;
    post_position(&server, cart, [6.0, 4.5, 1.5]).await;
    let entered = format!("document.querySelector('#timeline li[data-type=ZONE_ENTER][data-mac=\"{cart}\"]')");
    browser.until("the cart's ZONE_ENTER in the timeline", WAIT, &entered).await;
    browser.execute("window.zonecastConsole.fit()", json!([])).await;
    let found = search(&browser, "cart", cart).await;
    assert!(found.contains("Cart 8"), "{found}");
    browser.press(ENTER).await;
    inspected(&browser, cart, "Cart 8").await;
    label(&browser, cart, "Cart 8").await;
    timeline_name(&browser, cart, "Cart 8").await;

    // An unregistered device is shown by its MAC, and the inspector says it has no record.
    let stranger = "00:C0:FF:EE:00:09";
    post_position(&server, stranger, [4.5, 5.5, 1.5]).await;
    timeline_name(&browser, stranger, stranger).await;
    search(&browser, "ee:00:09", stranger).await;
    browser.press(ENTER).await;
    let info = "document.getElementById('device-info')";
    let unregistered = format!(
        "{info}.dataset.mac === '{stranger}' && {info}.dataset.registered === 'false' \
         && !document.getElementById('device-unregistered').hidden"
    );
    browser.until("the unregistered device inspected", WAIT, &unregistered).await;
    assert_eq!(browser.execute(&text("device-title"), json!([])).await, json!(stranger));
    label(&browser, stranger, stranger).await;
    browser.close().await;
    server.stop().await;
}

both_modes!(devices_are_shown_by_name_and_found_by_name_mac_or_group);
