//! The detail pane's device inspector, MQTT connections and visit report.

use reqwest::Method;
use serde_json::json;
use zonecast_tests::mosquitto::Broker;
use zonecast_tests::{Mode, READ_KEY, Server, both_modes, sphere};

use super::{WAIT, message, mode_name, post_position, signed_in};

async fn the_device_inspector_follows_a_devices_position_zones_and_events(mode: Mode) {
    let server = Server::start(mode).await;
    let id = server.create_zone(sphere("Dock", [5.0, 5.0, 1.5], 2.0)).await["ZoneID"].as_str().unwrap().to_owned();
    let browser = signed_in(&server, READ_KEY).await;
    let ready = "(() => { const s = window.zonecastConsole.stats(); return s.zonesDrawn === 1 \
                 && s.streams.events === 'open' && s.streams.positions === 'open'; })()";
    browser.until("the zone drawn and both streams open", WAIT, ready).await;
    let mac = "00:C0:FF:EE:00:03";
    post_position(&server, mac, [5.5, 5.0, 1.5]).await;

    // Clicked in the view, the device is inspected: where it is, its zone, its entry.
    let (at, _) =
        browser.until("the device on screen", WAIT, &format!("window.zonecastConsole.devicePixel('{mac}')")).await;
    browser.click_at(at["x"].as_f64().unwrap(), at["y"].as_f64().unwrap(), 1).await;
    let info = "document.getElementById('device-info')";
    browser.until("the device inspected", WAIT, &format!("!{info}.hidden && {info}.dataset.mac === '{mac}'")).await;
    let position = "document.getElementById('device-position').dataset.position";
    browser.until("its position", WAIT, &format!("{position} === '[5.5,5,1.5]'")).await;
    browser
        .until("its zone", WAIT, &format!("document.querySelector('#device-zones li[data-zone-id=\"{id}\"]')"))
        .await;
    let event =
        |kind: &str| format!("document.querySelector('#device-events li[data-type={kind}][data-zone-id=\"{id}\"]')");
    browser.until("its ZONE_ENTER", WAIT, &event("ZONE_ENTER")).await;
    browser.screenshot(&format!("{}-inspector", mode_name(mode))).await;

    // It walks out: the inspector follows live.
    post_position(&server, mac, [20.0, 5.0, 1.5]).await;
    browser.until("its new position", WAIT, &format!("{position} === '[20,5,1.5]'")).await;
    browser.until("in no zone", WAIT, &format!("{info}.dataset.zones === '0'")).await;
    browser.until("its ZONE_EXIT", WAIT, &event("ZONE_EXIT")).await;

    // Found by MAC, in any case and with '-': its events come from the history.
    browser.click("#open-device").await;
    browser.type_into("#device-mac", "00:AA").await;
    browser.click("#device-inspect").await;
    let refused = message(&browser, "device-message", "error", "mac").await;
    assert_eq!(refused, "422 invalid_data: mac: '00:AA' is not a MAC address (six hex octets separated by ':' or '-')");
    assert_eq!(browser.execute(&format!("return {info}.hidden"), json!([])).await, json!(true));
    browser.type_into("#device-mac", &mac.to_lowercase().replace(':', "-")).await;
    browser.click("#device-inspect").await;
    browser.until("the device found", WAIT, &format!("!{info}.hidden && {info}.dataset.mac === '{mac}'")).await;
    browser.until("its ZONE_ENTER from the history", WAIT, &event("ZONE_ENTER")).await;
    browser.until("its ZONE_EXIT from the history", WAIT, &event("ZONE_EXIT")).await;
    browser.close().await;
    server.stop().await;
}

async fn the_mqtt_panel_lists_each_connection_with_its_forwarding_status(mode: Mode) {
    let server = Server::start(mode).await;
    let broker = Broker::plain().await;
    let connection = |port: u16, topic: &str| {
        json!({"host": "127.0.0.1", "port": port, "TLS": false,
               "topics": [{"topic": topic, "FilterChain": [{"FilterTemplate": "zone_events"}]}]})
    };
    let path = "/v3/modules/mqtt/connections";
    let up = server.ok(Method::POST, path, Some(connection(broker.port, "console/zones"))).await;
    let up = up["ConnectionID"].as_str().unwrap().to_owned();
    // Nothing listens on this port: the broker refuses the forwarder.
    let closed = zonecast_tests::process::free_port();
    let down = server.ok(Method::POST, path, Some(connection(closed, "console/nowhere"))).await;
    let down = down["ConnectionID"].as_str().unwrap().to_owned();
    server.create_zone(sphere("Dock", [5.0, 5.0, 1.5], 2.0)).await;

    let browser = signed_in(&server, READ_KEY).await;
    browser.click("#open-mqtt").await;
    let item = |id: &str| format!("document.getElementById('connection-{id}')");
    browser.until("the connection connected", WAIT, &format!("{}?.dataset.state === 'connected'", item(&up))).await;
    let text = browser.text(&format!("#connection-{up}")).await;
    for part in [format!("127.0.0.1:{}", broker.port).as_str(), "plain", "topics: console/zones", "connected"] {
        assert!(text.contains(part), "{part} is not in {text}");
    }
    browser.until("the refused one", WAIT, &format!("{}?.dataset.state === 'disconnected'", item(&down))).await;
    let text = browser.text(&format!("#connection-{down}")).await;
    assert!(text.contains(&format!("127.0.0.1:{closed}")) && text.contains("disconnected"), "{text}");
    assert!(text.to_lowercase().contains("last error:") && text.to_lowercase().contains("refused"), "{text}");

    // An event forwarded shows in the counts when the status is read again.
    post_position(&server, "00:C0:FF:EE:00:04", [5.0, 5.0, 1.5]).await;
    browser.until("the event counted", WAIT, &format!("{}.dataset.forwarded !== '0'", item(&up))).await;
    assert_eq!(browser.execute(&format!("return {}.dataset.forwarded", item(&down)), json!([])).await, json!("0"));
    browser.screenshot(&format!("{}-mqtt", mode_name(mode))).await;
    browser.close().await;
    server.stop().await;
}

async fn the_visit_report_shows_each_stay_and_downloads_it_as_csv(mode: Mode) {
    let server = Server::start(mode).await;
    let id = server.create_zone(sphere("Dock", [5.0, 5.0, 1.5], 2.0)).await["ZoneID"].as_str().unwrap().to_owned();
    let browser = signed_in(&server, READ_KEY).await;
    browser.until("the event stream open", WAIT, "window.zonecastConsole.stats().streams.events === 'open'").await;
    let mac = "00:C0:FF:EE:00:05";
    let timeline =
        |kind: &str| format!("document.querySelector('#timeline li.event[data-type={kind}][data-mac=\"{mac}\"]')");
    post_position(&server, mac, [5.5, 5.0, 1.5]).await;
    browser.until("the entry", WAIT, &timeline("ZONE_ENTER")).await;
    post_position(&server, mac, [20.0, 5.0, 1.5]).await;
    browser.until("the exit", WAIT, &timeline("ZONE_EXIT")).await;

    browser.click(&format!("#zone-{id} .zone-name")).await;
    let row = format!("document.querySelector('#visits-rows tr[data-mac=\"{mac}\"][data-inside=false]')");
    let (reason, _) = browser.until("the visit", WAIT, &format!("{row}?.dataset.reason")).await;
    assert_eq!(reason, json!("position"));
    let text = browser.text(&format!("#visits-rows tr[data-mac=\"{mac}\"]")).await;
    assert!(text.starts_with(mac) && text.ends_with("position") && text.contains(" s"), "{text}");

    // It comes back: the open-ended report follows the stay under way.
    post_position(&server, mac, [5.0, 5.5, 1.5]).await;
    let inside = "document.querySelector('#visits-rows tr[data-inside=true]')?.textContent";
    let (text, _) = browser.until("the stay under way", WAIT, inside).await;
    assert!(text.as_str().unwrap().contains("inside"), "{text}");
    message(&browser, "visits-message", "ok", "2 visits, 1 still inside.").await;
    browser.screenshot(&format!("{}-visits", mode_name(mode))).await;

    // The CSV is fetched with the credential in its header.
    browser.click("#visits-csv").await;
    let saved = message(&browser, "visits-message", "ok", "as CSV").await;
    assert_eq!(saved, "Saved visits-Dock.csv: 2 visits as CSV.");

    // A range the server refuses: its message.
    let backwards = "document.getElementById('visits-from').value = '2030-01-01T10:00:00'; \
                     document.getElementById('visits-to').value = '2030-01-01T09:00:00';";
    browser.execute(backwards, json!([])).await;
    browser.click("#visits-show").await;
    let refused = message(&browser, "visits-message", "error", "from").await;
    assert_eq!(refused, "422 invalid_data: from: must be before to");
    browser.close().await;
    server.stop().await;
}

both_modes!(
    the_device_inspector_follows_a_devices_position_zones_and_events,
    the_mqtt_panel_lists_each_connection_with_its_forwarding_status,
    the_visit_report_shows_each_stay_and_downloads_it_as_csv,
);
