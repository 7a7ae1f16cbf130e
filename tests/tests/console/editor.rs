//! A zone's form: every field edited, and the refusals it shows.

use reqwest::Method;
use serde_json::json;
use zonecast_tests::browser::Browser;
use zonecast_tests::{Mode, Server, WRITE_KEY, both_modes};

use super::{WAIT, message, mode_name, signed_in, value};

/// Clicks Reload in the zone's form and waits until the form is filled again.
async fn reload_form(browser: &Browser) {
    let filled = browser.execute("return document.getElementById('edit-form').dataset.filled", json!([])).await;
    browser.click("#edit-reload").await;
    let again = format!("document.getElementById('edit-form').dataset.filled !== '{}'", filled.as_str().unwrap());
    browser.until("the form read again", WAIT, &again).await;
}

/// Clicks zone `id` in the list and waits until its form holds it.
async fn open_zone(browser: &Browser, id: &str) {
    browser.click(&format!("#zone-{id} .zone-name")).await;
    let filled = format!(
        "document.getElementById('edit-form').dataset.zoneId === '{id}' \
         && !document.querySelector('#edit-form fieldset').disabled"
    );
    browser.until("the zone's form filled", WAIT, &filled).await;
}

async fn a_zones_fields_are_edited_in_its_form_and_refusals_show_the_servers_message(mode: Mode) {
    let server = Server::start(mode).await;
    let cell = json!({"Name": "Cell", "GeometryType": "cuboid", "AlertLevel": 1,
                      "GeometryData": [[0, 0, 0], [2, 2, 2], [1, 0, 0], [0, 1, 0], [0, 0, 1]]});
    let id = server.create_zone(cell.clone()).await["ZoneID"].as_str().unwrap().to_owned();
    let path = format!("/v3/modules/zones/{id}");
    let browser = signed_in(&server, WRITE_KEY).await;
    browser.until("the zone listed", WAIT, &format!("document.getElementById('zone-{id}')")).await;
    open_zone(&browser, &id).await;
    assert_eq!(value(&browser, "edit-name").await, "Cell");
    assert_eq!(value(&browser, "edit-level").await, "1");

    browser.type_into("#edit-name", "Cell 7").await;
    browser.type_into("#edit-level", "6").await;
    browser.select("#edit-policy", "none").await;
    browser.type_into("#edit-devices", "00-aa-bb-cc-dd-01\n00:AA:BB:CC:DD:02").await;
    browser.type_into("#edit-dwell", "900").await;
    browser.type_into("#edit-max-occupancy", "4").await;
    browser.type_into("#edit-actions", r#"[{"type": "info-event", "message": "welcome"}]"#).await;
    browser.click("#edit-save").await;
    let saved = message(&browser, "edit-message", "ok", "Saved").await;
    assert_eq!(
        saved,
        "Saved Name, AlertLevel, InclusionPolicy, DeviceList, MaxDwellSeconds, MaxOccupancy, ZoneActions."
    );
    let zone = server.ok(Method::GET, &path, None).await;
    assert_eq!(zone["Name"], "Cell 7");
    assert_eq!(zone["AlertLevel"], 6);
    assert_eq!(zone["InclusionPolicy"], "none");
    assert_eq!(zone["DeviceList"], json!(["00:AA:BB:CC:DD:01", "00:AA:BB:CC:DD:02"]));
    assert_eq!(zone["MaxDwellSeconds"], json!(900.0));
    assert_eq!(zone["MaxOccupancy"], json!(4));
    assert_eq!(zone["ZoneActions"], json!([{"type": "info-event", "message": "welcome", "on": "enter"}]));
    assert_eq!(
        zone["GeometryData"],
        json!([[0.0, 0.0, 0.0], [2.0, 2.0, 2.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    );
    // The list and the form show the zone as the server keeps it.
    let listed = format!("document.querySelector('#zone-{id} .zone-name')?.textContent === 'Cell 7'");
    browser.until("the new name in the list", WAIT, &listed).await;
    let devices = "document.getElementById('edit-devices').value === '00:AA:BB:CC:DD:01\\n00:AA:BB:CC:DD:02'";
    browser.until("the DeviceList as stored", WAIT, devices).await;
    browser.screenshot(&format!("{}-edited", mode_name(mode))).await;

    // Text that is not JSON never leaves the page.
    browser.type_into("#edit-actions", "[{").await;
    browser.click("#edit-save").await;
    message(&browser, "edit-message", "error", "ZoneActions is not JSON").await;
    reload_form(&browser).await;
    assert!(value(&browser, "edit-actions").await.contains("welcome"));
    // A negative height is the server's to refuse, with the row named.
    let negative = "[[0, 0, 0], [2, 2, -1], [1, 0, 0], [0, 1, 0], [0, 0, 1]]";
    browser.type_into("#edit-data", negative).await;
    browser.click("#edit-save").await;
    let refused = message(&browser, "edit-message", "error", "GeometryData").await;
    assert_eq!(refused, "422 invalid_data: GeometryData[1]: height must be > 0");
    assert_eq!(server.ok(Method::GET, &path, None).await["GeometryData"], zone["GeometryData"]);

    // Locked from the list while the form holds a change: the form says the zone changed
    // elsewhere, and Save is refused by its version instead of overwriting.
    reload_form(&browser).await;
    browser.type_into("#edit-name", "Cell 8").await;
    browser.click(&format!("#zone-{id} .act-lock")).await;
    browser.until("the changed-elsewhere warning", WAIT, "!document.getElementById('edit-stale').hidden").await;
    browser.click("#edit-save").await;
    message(&browser, "edit-message", "error", "412 precondition_failed").await;
    // Read again, its geometry cannot change while locked: the server says so.
    reload_form(&browser).await;
    assert_eq!(
        browser.execute("return document.getElementById('edit-form').dataset.locked", json!([])).await,
        json!("true")
    );
    assert_eq!(browser.execute("return document.getElementById('edit-locked').hidden", json!([])).await, json!(false));
    browser.type_into("#edit-data", "[[0, 0, 0], [3, 2, 2], [1, 0, 0], [0, 1, 0], [0, 0, 1]]").await;
    browser.click("#edit-save").await;
    let locked = message(&browser, "edit-message", "error", "locked").await;
    assert_eq!(locked, "422 invalid_data: GeometryData: cannot change while the zone's geometry is locked");
    let zone = server.ok(Method::GET, &path, None).await;
    assert_eq!(zone["IsGeometryLocked"], true);
    assert_eq!(zone["Name"], "Cell 7");
    assert_eq!(zone["GeometryData"][1], json!([2.0, 2.0, 2.0]));
    browser.screenshot(&format!("{}-edit-refused", mode_name(mode))).await;
    // Its other fields still change.
    reload_form(&browser).await;
    browser.type_into("#edit-name", "Cell 8").await;
    browser.click("#edit-save").await;
    assert_eq!(message(&browser, "edit-message", "ok", "Saved").await, "Saved Name.");
    assert_eq!(server.ok(Method::GET, &path, None).await["Name"], "Cell 8");
    browser.close().await;
    server.stop().await;
}

both_modes!(a_zones_fields_are_edited_in_its_form_and_refusals_show_the_servers_message);
