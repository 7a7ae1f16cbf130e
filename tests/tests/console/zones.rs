//! Zones typed into the create form, and the zone list's buttons.

use reqwest::Method;
use serde_json::{Value, json};
use zonecast_tests::{Mode, READ_KEY, Server, WRITE_KEY, both_modes, sphere};

use super::{WAIT, mode_name, post_position, signed_in};

async fn a_zone_typed_into_the_form_is_created_and_refusals_show_the_servers_message(mode: Mode) {
    let server = Server::start(mode).await;
    let browser = signed_in(&server, WRITE_KEY).await;
    browser.until("the empty zone list", WAIT, "window.zonecastConsole.stats().zonesLoaded > 0").await;

    browser.type_into("#create-name", "Typed tank").await;
    browser.select("#create-type", "cylinder").await;
    browser.type_into("#create-data", "[[2, -3, 0], [0, 0.2, 1], [2.5, 1.5, 0]]").await;
    browser.type_into("#create-level", "7").await;
    browser.click("#create-submit").await;
    let created = "document.getElementById('create-form').dataset.created";
    let (id, _) = browser.until("the zone created", WAIT, created).await;
    let id = id.as_str().unwrap();
    let zone = server.ok(Method::GET, &format!("/v3/modules/zones/{id}"), None).await;
    assert_eq!(zone["Name"], "Typed tank");
    assert_eq!(zone["GeometryType"], "cylinder");
    assert_eq!(zone["GeometryData"], json!([[2.0, -3.0, 0.0], [0.0, 0.2, 1.0], [2.5, 1.5, 0.0]]));
    assert_eq!(zone["AlertLevel"], 7);
    browser.until("the new zone drawn", WAIT, "window.zonecastConsole.stats().zonesDrawn === 1").await;
    browser.until("the new zone listed", WAIT, &format!("document.getElementById('zone-{id}')")).await;
    browser.screenshot(&format!("{}-created", mode_name(mode))).await;

    // Geometry the server refuses: its status and message are shown, and nothing is created.
    browser.type_into("#create-data", "[[0, 0, 0], [0, 0, 1], [0, 1, 0]]").await;
    browser.click("#create-submit").await;
    let error = "document.getElementById('create-message').dataset.kind === 'error' \
                 && document.getElementById('create-message').textContent";
    let (message, _) = browser.until("the server's refusal", WAIT, error).await;
    assert_eq!(message, json!("422 invalid_data: GeometryData[2]: height must be > 0"));
    // A negative AlertLevel is the server's to refuse, with the field named.
    browser.type_into("#create-data", "[[0, 0, 0], [0, 0, 1], [1, 1, 0]]").await;
    browser.type_into("#create-level", "-1").await;
    browser.click("#create-submit").await;
    let refused = "document.getElementById('create-message').textContent.includes('AlertLevel') \
                   && document.getElementById('create-message').textContent";
    let (message, _) = browser.until("the AlertLevel refusal", WAIT, refused).await;
    assert_eq!(message, json!("422 invalid_data: AlertLevel: must be 0 or more, got -1"));
    // Text that is not JSON never leaves the page.
    browser.type_into("#create-data", "[[0, 0, 0], [1, 0").await;
    browser.click("#create-submit").await;
    let local = "document.getElementById('create-message').textContent.startsWith('GeometryData is not JSON')";
    browser.until("the JSON complaint", WAIT, local).await;
    assert_eq!(server.ok(Method::GET, "/v3/modules/zones", None).await.as_array().unwrap().len(), 1);
    browser.screenshot(&format!("{}-refused", mode_name(mode))).await;
    browser.close().await;

    // A read key may look but not write: the form shows the 403.
    let reader = signed_in(&server, READ_KEY).await;
    reader.type_into("#create-data", "[[0, 0, 0], [1, 0, 0]]").await;
    reader.click("#create-submit").await;
    let forbidden = "document.getElementById('create-message').textContent.startsWith('403 forbidden')";
    reader.until("the 403", WAIT, forbidden).await;
    reader.close().await;
    server.stop().await;
}

async fn the_zone_buttons_deactivate_lock_and_delete_the_zone(mode: Mode) {
    let server = Server::start(mode).await;
    let id = server.create_zone(sphere("Cell", [0.0, 0.0, 1.0], 2.0)).await["ZoneID"].as_str().unwrap().to_owned();
    let browser = signed_in(&server, WRITE_KEY).await;
    let ready =
        "window.zonecastConsole.stats().zonesDrawn === 1 && window.zonecastConsole.stats().streams.events === 'open'";
    browser.until("the zone drawn", WAIT, ready).await;
    let mac = "00:C0:FF:EE:00:02";
    post_position(&server, mac, [0.5, 0.0, 1.0]).await;
    browser.until("the zone lit", WAIT, "window.zonecastConsole.stats().litZones === 1").await;
    let item = format!("#zone-{id}");
    let data = |field: &str| format!("document.getElementById('zone-{id}')?.dataset.{field}");

    // Deactivating empties the zone: the exit says why, and the zone is greyed.
    browser.click(&item).await;
    browser.click(&format!("{item} .act-active")).await;
    let exit = format!(
        "document.querySelector('#timeline li.event[data-type=ZONE_EXIT][data-mac=\"{mac}\"]')?.dataset.reason"
    );
    assert_eq!(browser.until("the exit", WAIT, &exit).await.0, json!("deactivated"));
    assert_eq!(
        browser.until("inactive in the list", WAIT, &format!("{} === 'false'", data("active"))).await.0,
        json!(true)
    );
    browser.until("the zone unlit", WAIT, "window.zonecastConsole.stats().litZones === 0").await;
    let zone = server.ok(Method::GET, &format!("/v3/modules/zones/{id}"), None).await;
    assert_eq!(zone["Active"], false);

    browser.click(&format!("{item} .act-lock")).await;
    browser.until("locked in the list", WAIT, &format!("{} === 'true'", data("locked"))).await;
    let zone = server.ok(Method::GET, &format!("/v3/modules/zones/{id}"), None).await;
    assert_eq!(zone["IsGeometryLocked"], true);
    browser.screenshot(&format!("{}-locked", mode_name(mode))).await;

    // The list is read again every few seconds and on events: an entry that shows the same keeps
    // its node, so that a click pressed on its buttons while the list is read lands; an entry
    // that changed is drawn anew.
    let kept = browser
        .execute_async(
            &format!(
                "const before = document.getElementById('zone-{id}'); \
                 await window.zonecastConsole.refresh(); \
                 return document.getElementById('zone-{id}') === before;"
            ),
            json!([]),
        )
        .await;
    assert_eq!(kept, json!(true), "an unchanged entry is drawn anew by a refresh");
    browser.execute(&format!("window.entryBefore = document.getElementById('zone-{id}');"), json!([])).await;
    server.ok(Method::PUT, &format!("/v3/modules/zones/{id}"), Some(json!({"Name": "Cell 2"}))).await;
    let renamed = browser
        .execute_async(
            &format!(
                "await window.zonecastConsole.refresh(); \
                 const after = document.getElementById('zone-{id}'); \
                 return [after === window.entryBefore, after.querySelector('.zone-name').textContent];"
            ),
            json!([]),
        )
        .await;
    assert_eq!(renamed, json!([false, "Cell 2"]), "a renamed zone is drawn anew with its new name");

    // Readings of the list overlap; one answered after a later one is not shown over it. The
    // next reading's answer is held back in the page while the zone is renamed and read again.
    browser
        .execute(
            "const fetched = window.fetch; \
             window.fetch = (path, init) => { \
               const answer = fetched(path, init); \
               if (path !== '/v3/modules/zones') return answer; \
               window.fetch = fetched; \
               return new Promise((resolve) => { window.releaseStale = () => resolve(answer); }); \
             }; \
             window.staleRead = window.zonecastConsole.refresh();",
            json!([]),
        )
        .await;
    browser.until("the stale reading held back", WAIT, "typeof window.releaseStale === 'function'").await;
    server.ok(Method::PUT, &format!("/v3/modules/zones/{id}"), Some(json!({"Name": "Cell 3"}))).await;
    let shown = browser
        .execute_async(
            &format!(
                "await window.zonecastConsole.refresh(); \
                 window.releaseStale(); \
                 await window.staleRead; \
                 return document.querySelector('#zone-{id} .zone-name').textContent;"
            ),
            json!([]),
        )
        .await;
    assert_eq!(shown, json!("Cell 3"), "an older reading answered last is not shown over a newer one");

    browser.click(&format!("{item} .act-delete")).await;
    browser.accept_dialog(WAIT).await;
    browser.until("the zone gone", WAIT, "window.zonecastConsole.stats().zonesDrawn === 0").await;
    let empty = "document.querySelector('#zone-list li.empty')?.textContent";
    assert_eq!(browser.until("the empty list", WAIT, empty).await.0, json!("No zones yet."));
    assert_eq!(browser.execute("return document.querySelectorAll('#zone-list li').length", json!([])).await, json!(1));
    assert_eq!(browser.execute(&format!("return {}", data("active")), json!([])).await, Value::Null);
    server.refused(Method::GET, &format!("/v3/modules/zones/{id}"), Some(READ_KEY), None, 404, "not_found").await;
    browser.close().await;
    server.stop().await;
}

both_modes!(
    a_zone_typed_into_the_form_is_created_and_refusals_show_the_servers_message,
    the_zone_buttons_deactivate_lock_and_delete_the_zone,
);
