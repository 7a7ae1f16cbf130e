//! Signing in with a key or client credentials, the zones shown, a device walking into one.

use serde_json::json;
use zonecast_tests::browser::Browser;
use zonecast_tests::{CLIENT_ID, CLIENT_SECRET, Mode, READ_KEY, Server, both_modes};

use super::{WAIT, every_shape, mode_name, post_position};

async fn a_user_signs_in_sees_every_zone_and_watches_a_device_enter_one(mode: Mode) {
    let server = Server::start(mode).await;
    let mut ids = Vec::new();
    for zone in every_shape() {
        ids.push(server.create_zone(zone).await["ZoneID"].as_str().unwrap().to_owned());
    }
    let browser = Browser::start(1280, 800).await;
    browser.goto(&format!("{}/", server.base)).await;
    // A key the server refuses is not kept, and its message is shown.
    browser.type_into("#api-key", "not-a-key").await;
    browser.click("#signin-submit").await;
    let (message, _) =
        browser.until("the refusal", WAIT, "document.getElementById('signin-message').textContent").await;
    assert_eq!(message, json!("X-API-Key is not valid"));
    assert_eq!(browser.execute("return sessionStorage.length", json!([])).await, json!(0));
    browser.type_into("#api-key", READ_KEY).await;
    browser.click("#signin-submit").await;

    let ready = "(() => { const s = window.zonecastConsole.stats(); return s.zonesDrawn === 6 && s.frames > 2 \
                 && s.streams.events === 'open' && s.streams.positions === 'open' && s; })()";
    let (seen, _) = browser.until("six zones drawn and both streams open", WAIT, ready).await;
    assert_eq!(seen["zones"], json!(6), "{seen}");
    assert_eq!(seen["webgl"], json!(true), "{seen}");
    assert_eq!(seen["devices"], json!(0), "{seen}");
    for id in &ids {
        let item = format!("document.getElementById('zone-{id}')");
        let (active, _) = browser.until("the zone's list item", WAIT, &format!("{item}?.dataset.active")).await;
        assert_eq!(active, json!(if id == &ids[3] { "false" } else { "true" }));
    }
    // The search narrows the list and says how many of all it shows; cleared, the list is whole
    // again, in the same order.
    let listed = "return [document.getElementById('zone-count').textContent, \
                  [...document.querySelectorAll('#zone-list li')].map((li) => li.dataset.zoneId || li.textContent)]";
    let whole = browser.execute(listed, json!([])).await;
    assert_eq!(whole[0], json!("6"), "{whole}");
    assert_eq!(whole[1].as_array().map(Vec::len), Some(6), "{whole}");
    browser.type_into("#zone-search", &ids[2].to_lowercase()).await;
    assert_eq!(browser.execute(listed, json!([])).await, json!(["1 of 6", [ids[2]]]));
    browser.type_into("#zone-search", "no such zone").await;
    assert_eq!(browser.execute(listed, json!([])).await, json!(["0 of 6", ["No zone matches."]]));
    let cleared = "const s = document.getElementById('zone-search'); s.value = ''; \
                   s.dispatchEvent(new Event('input', {bubbles: true}));";
    browser.execute(cleared, json!([])).await;
    assert_eq!(browser.execute(listed, json!([])).await, whole, "the whole list again, in its order");
    let credential =
        browser.execute("return JSON.parse(sessionStorage.getItem('zonecast.credential'))", json!([])).await;
    assert_eq!(credential, json!({"kind": "key", "value": READ_KEY}), "the key is kept in sessionStorage");
    assert_eq!(browser.execute("return localStorage.length + document.cookie.length", json!([])).await, json!(0));
    browser.screenshot(&format!("{}-zones", mode_name(mode))).await;

    // A device walks into the sphere: its entry comes to the timeline by itself, over the live
    // stream (how soon depends on how busy the machine is; the test does not time it).
    let mac = "00:C0:FF:EE:00:01";
    post_position(&server, mac, [5.5, 5.0, 1.5]).await;
    let entry = format!(
        "document.querySelector('#timeline li.event[data-type=ZONE_ENTER][data-mac=\"{mac}\"]')?.dataset.zoneId"
    );
    let (zone, _) = browser.until("the device's ZONE_ENTER in the timeline", WAIT, &entry).await;
    assert_eq!(zone, json!(ids[0]));
    let text = browser.text("#timeline li.event[data-type=ZONE_ENTER]").await;
    assert!(text.contains("entered Dock"), "{text}");
    let lit =
        "(() => { const s = window.zonecastConsole.stats(); return s.devices === 1 && s.litZones === 1 && s; })()";
    browser.until("the device drawn and the sphere lit", WAIT, lit).await;
    let occupants = browser.execute("return window.zonecastConsole.occupants(arguments[0])", json!([ids[0]])).await;
    assert_eq!(occupants, json!([mac]));
    let count = format!("document.getElementById('zone-{}').dataset.occupants", ids[0]);
    assert_eq!(browser.until("the occupancy in the list", WAIT, &count).await.0, json!("1"));
    // Pointing at the device shows its MAC and the zone it is in.
    let (at, _) =
        browser.until("the device on screen", WAIT, &format!("window.zonecastConsole.devicePixel('{mac}')")).await;
    browser.point_at(at["x"].as_f64().unwrap(), at["y"].as_f64().unwrap()).await;
    let tooltip = "!document.getElementById('tooltip').hidden && document.getElementById('tooltip').textContent";
    let (shown, _) = browser.until("the device's tooltip", WAIT, tooltip).await;
    let shown = shown.as_str().unwrap();
    assert!(shown.starts_with(mac) && shown.ends_with("in Dock"), "{shown}");
    browser.screenshot(&format!("{}-entered", mode_name(mode))).await;

    // It walks out: the exit and its reason follow.
    post_position(&server, mac, [20.0, 5.0, 1.5]).await;
    let exit = format!(
        "document.querySelector('#timeline li.event[data-type=ZONE_EXIT][data-mac=\"{mac}\"]')?.dataset.reason"
    );
    assert_eq!(browser.until("the device's ZONE_EXIT", WAIT, &exit).await.0, json!("position"));
    browser.until("the sphere unlit", WAIT, "window.zonecastConsole.stats().litZones === 0").await;
    browser.execute("window.zonecastConsole.topView()", json!([])).await;
    browser.screenshot(&format!("{}-top-view", mode_name(mode))).await;
    browser.close().await;
    server.stop().await;
}

async fn client_credentials_sign_in_with_a_token_kept_for_the_tab_only(mode: Mode) {
    let server = Server::start(mode).await;
    let browser = Browser::start(1280, 800).await;
    browser.goto(&format!("{}/", server.base)).await;
    browser.click("[data-signin-tab=client]").await;
    browser.type_into("#auth-id", CLIENT_ID).await;
    browser.type_into("#auth-secret", "wrong").await;
    browser.click("#signin-submit").await;
    let (message, _) =
        browser.until("the refusal", WAIT, "document.getElementById('signin-message').textContent").await;
    assert_eq!(message, json!("auth_id or auth_secret is not valid"));
    browser.type_into("#auth-secret", CLIENT_SECRET).await;
    browser.click("#signin-submit").await;
    let open = "window.zonecastConsole.stats().streams.events === 'open'";
    browser.until("the event stream open with the token", WAIT, open).await;
    let credential =
        browser.execute("return JSON.parse(sessionStorage.getItem('zonecast.credential'))", json!([])).await;
    assert_eq!(credential["kind"], "token");
    assert!(credential["value"].as_str().unwrap().len() > 20, "{credential}");
    assert_eq!(browser.execute("return localStorage.length + document.cookie.length", json!([])).await, json!(0));
    // A reload keeps the tab signed in; signing out forgets the token.
    browser.goto(&format!("{}/", server.base)).await;
    browser.until("signed in after a reload", WAIT, "window.zonecastConsole.stats().signedIn").await;
    browser.click("#sign-out").await;
    assert_eq!(browser.execute("return sessionStorage.length", json!([])).await, json!(0));
    assert_eq!(browser.execute("return window.zonecastConsole.stats().signedIn", json!([])).await, json!(false));
    browser.close().await;
    server.stop().await;
}

both_modes!(
    a_user_signs_in_sees_every_zone_and_watches_a_device_enter_one,
    client_credentials_sign_in_with_a_token_kept_for_the_tab_only,
);
