//! The console at `/`: its files are served without credentials with their content types, and in
//! a headless Chromium a user signs in, sees every zone drawn, watches a device enter a zone
//! within a second, creates a zone by typing its geometry or drawing it with the mouse, edits a
//! zone's fields, inspects a device, reads a zone's visits and the MQTT connections' status.
//! Screenshots of each step go to `target/console-screenshots/`.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use zonecast_tests::browser::{Browser, ENTER, ESCAPE};
use zonecast_tests::mosquitto::Broker;
use zonecast_tests::{CLIENT_ID, CLIENT_SECRET, Mode, READ_KEY, Server, WRITE_KEY, assert_error, both_modes, sphere};

const WAIT: Duration = Duration::from_secs(20);

/// One zone of every shape, the cuboid with oblique axes and the polygon's ring closed.
fn every_shape() -> Vec<Value> {
    vec![
        sphere("Dock", [5.0, 5.0, 1.5], 2.0),
        json!({"Name": "Gate", "GeometryType": "circle", "GeometryData": [[0, 8, 0], [1.5, 0, 0]], "AlertLevel": 5}),
        json!({"Name": "Oblique cage", "GeometryType": "cuboid", "AlertLevel": 9,
               "GeometryData": [[-8, -4, 0], [4, 3, 2.5], [1, 0.3, 0], [-0.3, 1, 0.2], [0, 0, 1]]}),
        json!({"Name": "Yard", "GeometryType": "square", "GeometryData": [[8, -6, 0], [5, 3, 0], [1, 0, 0], [0, 1, 0]], "Active": false}),
        json!({"Name": "Tank", "GeometryType": "cylinder", "GeometryData": [[-4, 6, 0], [0.3, 0, 1], [3, 1.2, 0]]}),
        json!({"Name": "Bay", "GeometryType": "polygon",
               "GeometryData": [[0, -8, 0], [4, -8, 0], [5, -4, 0], [1, -3, 0], [0, -8, 0], [2.5, 0, 0], [0, 0, 1]]}),
    ]
}

fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::AllInOne => "all-in-one",
        Mode::Distributed => "distributed",
    }
}

/// Opens the console and signs in with `key` through the sign-in form.
async fn signed_in(server: &Server, key: &str) -> Browser {
    let browser = Browser::start(1280, 800).await;
    browser.goto(&format!("{}/", server.base)).await;
    browser.until("the sign-in form", WAIT, "!document.getElementById('signin').hidden").await;
    browser.type_into("#api-key", key).await;
    browser.click("#signin-submit").await;
    browser.until("signed in", WAIT, "window.zonecastConsole.stats().signedIn").await;
    browser
}

/// Posts one position of `mac` to the position input (the ingestor's listener in distributed
/// mode), as an RTLS would.
async fn post_position(server: &Server, mac: &str, position: [f64; 3]) {
    let response = server
        .http
        .post(format!("{}/v3/positions", server.ingest_base))
        .header("X-API-Key", WRITE_KEY)
        .json(&json!({"MAC": mac, "Position": position}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let answer: Value = response.json().await.unwrap();
    assert_eq!(answer["accepted"], 1, "{answer}");
}

async fn the_console_is_served_without_credentials_with_its_content_types(mode: Mode) {
    let server = Server::start(mode).await;
    let get = |path: &str| server.http.get(format!("{}{path}", server.base)).send();
    let page = get("/").await.unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    assert_eq!(page.headers()["content-type"], "text/html; charset=utf-8");
    assert!(page.headers()["content-security-policy"].to_str().unwrap().contains("default-src 'self'"));
    let html = page.text().await.unwrap();
    assert!(html.contains("<script type=\"importmap\">"), "{html}");
    for (path, kind) in [
        ("/console/js/main.js", "text/javascript; charset=utf-8"),
        ("/console/js/scene.js", "text/javascript; charset=utf-8"),
        ("/console/console.css", "text/css; charset=utf-8"),
        ("/console/vendor/three/build/three.module.js", "text/javascript; charset=utf-8"),
        ("/console/vendor/three/examples/jsm/controls/OrbitControls.js", "text/javascript; charset=utf-8"),
        ("/console/vendor/three/LICENSE", "text/plain; charset=utf-8"),
    ] {
        let response = get(path).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        assert_eq!(response.headers()["content-type"], kind, "{path}");
        // Revalidation with the ETag answers 304 without the body.
        let etag = response.headers()["etag"].clone();
        let again =
            server.http.get(format!("{}{path}", server.base)).header("If-None-Match", etag).send().await.unwrap();
        assert_eq!(again.status(), StatusCode::NOT_MODIFIED, "{path}");
    }
    let license = get("/console/vendor/three/LICENSE").await.unwrap().text().await.unwrap();
    assert!(license.contains("three.js authors"), "three.js keeps its licence: {license}");
    for path in ["/console/nope.js", "/console/", "/console/js/", "/console/js", "/console/index.htm"] {
        let response = get(path).await.unwrap();
        let answer = (response.status(), response.json::<Value>().await.unwrap());
        let message = assert_error(&answer, 404, "not_found");
        assert!(message.starts_with("no route"), "{path}: {message}");
    }
    let post = server.http.post(format!("{}/", server.base)).send().await.unwrap();
    assert_eq!(post.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(post.headers()["allow"], "GET, HEAD");
    // The page is open to all; the data it shows is not.
    server.refused(Method::GET, "/v3/modules/zones", None, None, 401, "unauthorized").await;
    // Its answers are counted with the API's (the recorder is process-wide: look for ours).
    let metrics = server.http.get(format!("{}/metrics", server.base)).header("X-API-Key", READ_KEY).send().await;
    let text = metrics.unwrap().text().await.unwrap();
    for status in ["200", "304", "404", "405"] {
        let counted = text.lines().any(|l| {
            l.starts_with("zonecast_api_requests_total{")
                && l.contains("operation=\"console\"")
                && l.contains(&format!("status=\"{status}\""))
        });
        assert!(counted, "no console answer with status {status} counted in:\n{text}");
    }
    server.stop().await;
}

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

    // A device walks into the sphere: its entry is in the timeline within a second.
    let mac = "00:C0:FF:EE:00:01";
    post_position(&server, mac, [5.5, 5.0, 1.5]).await;
    let posted = std::time::Instant::now();
    let entry = format!(
        "document.querySelector('#timeline li.event[data-type=ZONE_ENTER][data-mac=\"{mac}\"]')?.dataset.zoneId"
    );
    let (zone, _) = browser.until("the device's ZONE_ENTER in the timeline", WAIT, &entry).await;
    let took = posted.elapsed();
    assert_eq!(zone, json!(ids[0]));
    assert!(took < Duration::from_secs(1), "the ZONE_ENTER showed after {took:?}");
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

/// The value of the form field `#id`.
async fn value(browser: &Browser, id: &str) -> String {
    let value = browser.execute("return document.getElementById(arguments[0]).value", json!([id])).await;
    value.as_str().unwrap_or_else(|| panic!("#{id} has no value: {value}")).to_owned()
}

/// The text of the message `#id` once it is of `kind` (`ok`, `error` or empty) and holds
/// `containing`.
async fn message(browser: &Browser, id: &str, kind: &str, containing: &str) -> String {
    let script = format!(
        "(() => {{ const m = document.getElementById('{id}'); \
         return (m.dataset.kind || '') === '{kind}' && m.textContent.includes({containing:?}) && m.textContent; }})()"
    );
    let what = format!("#{id} saying {containing:?}");
    browser.until(&what, WAIT, &script).await.0.as_str().unwrap().to_owned()
}

/// Looks straight down on the site and waits until the view has settled.
async fn look_down(browser: &Browser) {
    browser.execute("window.zonecastConsole.topView()", json!([])).await;
    // Settled: the same pixel for the origin in two readings a few frames apart.
    let settled = "(() => { const c = window.zonecastConsole; const now = { at: JSON.stringify(c.floorPixel(0, 0)), \
                   frames: c.stats().frames }; const last = window.lastReading; \
                   const settled = last && last.at === now.at && now.frames - last.frames >= 3; \
                   if (!last || now.at !== last.at) window.lastReading = now; return settled; })()";
    browser.until("the view settled", WAIT, settled).await;
}

/// Where the floor point (`x`, `y`, 0) is on screen.
async fn floor_pixel(browser: &Browser, x: f64, y: f64) -> (f64, f64) {
    let script = format!("window.zonecastConsole.floorPixel({x}, {y})");
    let (at, _) = browser.until(&format!("the floor point ({x}, {y}) in view"), WAIT, &script).await;
    (at["x"].as_f64().unwrap(), at["y"].as_f64().unwrap())
}

/// The create form's GeometryType and GeometryData once a `kind` was drawn into it.
async fn drawn(browser: &Browser, kind: &str) -> Value {
    let script = format!(
        "document.getElementById('create-type').value === '{kind}' \
         && document.getElementById('draw-hint').dataset.kind === 'ok' \
         && document.getElementById('create-data').value"
    );
    let (data, _) = browser.until(&format!("a {kind} drawn into the form"), WAIT, &script).await;
    serde_json::from_str(data.as_str().unwrap()).unwrap()
}

/// Asserts that `got` holds the numbers of `want`, each within one step of the drawing grid
/// (a pointer lands on a whole pixel).
#[track_caller]
fn assert_near(got: &Value, want: &Value) {
    let numbers = |v: &Value| -> Vec<f64> {
        v.as_array()
            .unwrap_or_else(|| panic!("not rows: {v}"))
            .iter()
            .flat_map(|row| row.as_array().unwrap().iter().map(|n| n.as_f64().unwrap()))
            .collect()
    };
    let (g, w) = (numbers(got), numbers(want));
    assert!(g.len() == w.len() && g.iter().zip(&w).all(|(a, b)| (a - b).abs() <= 0.1 + 1e-9), "{got} is not {want}");
}

/// The ZoneID of the zone the create form made, once it differs from `before`.
async fn created(browser: &Browser, before: &str) -> String {
    let script = format!(
        "document.getElementById('create-form').dataset.created !== '{before}' \
         && document.getElementById('create-form').dataset.created"
    );
    browser.until("the zone created", WAIT, &script).await.0.as_str().unwrap().to_owned()
}

/// A box, a cylinder, a sphere and a polygon drawn on the floor with the mouse fill the create
/// form; the box and the polygon are created as drawn. A click without a drag, a polygon closed
/// too soon and Esc leave the form as it was, and a drawn shape the server refuses (a negative
/// height) shows its message. Drawing is the page's alone (Create is the route the typed form
/// uses, tested in both modes), so this runs in one mode.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zones_drawn_on_the_floor_with_the_mouse_fill_the_form_and_are_created() {
    let server = Server::start(Mode::AllInOne).await;
    let browser = signed_in(&server, WRITE_KEY).await;
    browser.until("the empty zone list", WAIT, "window.zonecastConsole.stats().zonesLoaded > 0").await;
    look_down(&browser).await;

    // A box: a rectangle dragged on the floor, as high as the height field says.
    browser.type_into("#draw-height", "3").await;
    browser.click("[data-draw=box]").await;
    browser.drag(floor_pixel(&browser, 2.0, 2.0).await, floor_pixel(&browser, 6.0, 5.0).await).await;
    let data = drawn(&browser, "cuboid").await;
    assert_near(&data, &json!([[2, 2, 0], [4, 3, 3], [1, 0, 0], [0, 1, 0], [0, 0, 1]]));
    // A new height redraws it.
    browser.type_into("#draw-height", "3.5").await;
    let taller = "JSON.parse(document.getElementById('create-data').value)[1][2] === 3.5";
    browser.until("the box 3.5 m high", WAIT, taller).await;
    browser.screenshot("drawn-box").await;
    browser.type_into("#create-name", "Drawn box").await;
    browser.click("#create-submit").await;
    let id = created(&browser, "").await;
    let zone = server.ok(Method::GET, &format!("/v3/modules/zones/{id}"), None).await;
    assert_eq!(zone["Name"], "Drawn box");
    assert_eq!(zone["GeometryType"], "cuboid");
    assert_near(&zone["GeometryData"], &json!([[2, 2, 0], [4, 3, 3.5], [1, 0, 0], [0, 1, 0], [0, 0, 1]]));
    browser.until("the box drawn as a zone", WAIT, "window.zonecastConsole.stats().zonesDrawn === 1").await;

    // A click is not a drag: the box has no size, and the form keeps what it held.
    let before = value(&browser, "create-data").await;
    browser.click("[data-draw=box]").await;
    let at = floor_pixel(&browser, -3.0, -3.0).await;
    browser.click_at(at.0, at.1, 1).await;
    message(&browser, "draw-hint", "error", "The box has no size").await;
    browser.press(ESCAPE).await;
    message(&browser, "draw-hint", "", "Drawing cancelled.").await;
    assert_eq!(value(&browser, "create-data").await, before);

    // A cylinder and a sphere: pressed at the centre, dragged out to the radius.
    browser.click("[data-draw=cylinder]").await;
    browser.drag(floor_pixel(&browser, 0.0, -5.0).await, floor_pixel(&browser, 1.5, -5.0).await).await;
    assert_near(&drawn(&browser, "cylinder").await, &json!([[0, -5, 0], [0, 0, 1], [3.5, 1.5, 0]]));
    browser.click("[data-draw=sphere]").await;
    browser.drag(floor_pixel(&browser, -5.0, 0.0).await, floor_pixel(&browser, -5.0, 2.0).await).await;
    // It rests on the floor.
    assert_near(&drawn(&browser, "sphere").await, &json!([[-5, 0, 2], [2, 0, 0]]));

    // A polygon: a click per vertex; closing it with two is refused; a double-click closes it.
    browser.click("[data-draw=polygon]").await;
    for (x, y) in [(-2.0, -3.0), (2.0, -3.0)] {
        let at = floor_pixel(&browser, x, y).await;
        browser.click_at(at.0, at.1, 1).await;
    }
    browser.press(ENTER).await;
    message(&browser, "draw-hint", "error", "A polygon needs at least 3 vertices; it has 2.").await;
    let at = floor_pixel(&browser, 2.0, 0.0).await;
    browser.click_at(at.0, at.1, 1).await;
    let at = floor_pixel(&browser, -1.0, 1.0).await;
    browser.click_at(at.0, at.1, 2).await;
    let polygon = json!([[-2, -3, 0], [2, -3, 0], [2, 0, 0], [-1, 1, 0], [3.5, 0, 0], [0, 0, 1]]);
    assert_near(&drawn(&browser, "polygon").await, &polygon);
    browser.screenshot("drawn-polygon").await;
    // Esc cancels a drawing under way and leaves the form as it was.
    browser.click("[data-draw=cylinder]").await;
    browser.press(ESCAPE).await;
    message(&browser, "draw-hint", "", "Drawing cancelled.").await;
    assert_eq!(value(&browser, "create-type").await, "polygon");
    browser.type_into("#create-name", "Drawn bay").await;
    browser.click("#create-submit").await;
    let bay = created(&browser, &id).await;
    let zone = server.ok(Method::GET, &format!("/v3/modules/zones/{bay}"), None).await;
    assert_eq!(zone["GeometryType"], "polygon");
    assert_near(&zone["GeometryData"], &polygon);

    // A drawn shape the server refuses: its message, and nothing created.
    browser.type_into("#draw-height", "-1").await;
    browser.click("[data-draw=box]").await;
    browser.drag(floor_pixel(&browser, -6.0, 4.0).await, floor_pixel(&browser, -4.0, 6.0).await).await;
    drawn(&browser, "cuboid").await;
    browser.click("#create-submit").await;
    let refused = message(&browser, "create-message", "error", "GeometryData").await;
    assert_eq!(refused, "422 invalid_data: GeometryData[1]: height must be > 0");
    assert_eq!(server.ok(Method::GET, "/v3/modules/zones", None).await.as_array().unwrap().len(), 2);
    browser.close().await;
    server.stop().await;
}

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
    browser.type_into("#edit-actions", r#"[{"type": "info-event", "message": "welcome"}]"#).await;
    browser.click("#edit-save").await;
    let saved = message(&browser, "edit-message", "ok", "Saved").await;
    assert_eq!(saved, "Saved Name, AlertLevel, InclusionPolicy, DeviceList, ZoneActions.");
    let zone = server.ok(Method::GET, &path, None).await;
    assert_eq!(zone["Name"], "Cell 7");
    assert_eq!(zone["AlertLevel"], 6);
    assert_eq!(zone["InclusionPolicy"], "none");
    assert_eq!(zone["DeviceList"], json!(["00:AA:BB:CC:DD:01", "00:AA:BB:CC:DD:02"]));
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

/// While the camera turns, the view draws a coarse site (fewer facets, no edges, labels or
/// trails); once it rests, the exact view is back within a few frames.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn while_the_camera_turns_a_coarse_view_is_drawn_and_the_full_one_returns_at_rest() {
    let server = Server::start(Mode::AllInOne).await;
    for zone in every_shape() {
        server.create_zone(zone).await;
    }
    let browser = signed_in(&server, READ_KEY).await;
    let open = "window.zonecastConsole.stats().streams.positions === 'open'";
    browser.until("the position stream open", WAIT, open).await;
    post_position(&server, "00:C0:FF:EE:00:02", [20.0, 5.0, 1.5]).await;
    let at_rest = "(() => { const s = window.zonecastConsole.stats(); \
                   return s.zonesDrawn === 6 && s.devices === 1 && s.detail === 'full' && s.labels === 6 \
                   && s.drawn.points === 1 && s; })()";
    let (rest, _) = browser.until("every zone and the device drawn in full", WAIT, at_rest).await;
    let full = rest["drawn"].clone();
    assert!(full["triangles"].as_u64().unwrap() > 0 && full["points"] == json!(1), "{rest}");

    browser.execute("window.zonecastConsole.orbit(true)", json!([])).await;
    let coarse = "(() => { const s = window.zonecastConsole.stats(); \
                  return s.detail === 'coarse' && s.drawn.points === 1 && s; })()";
    let (turning, _) = browser.until("the coarse view while the camera turns", WAIT, coarse).await;
    assert_eq!(turning["labels"], json!(0), "{turning}");
    assert_eq!(turning["trails"], json!(0), "{turning}");
    let (triangles, lines) = (&turning["drawn"]["triangles"], &turning["drawn"]["lines"]);
    assert!(triangles.as_u64().unwrap() < full["triangles"].as_u64().unwrap() / 2, "{turning} against {full}");
    assert!(lines.as_u64().unwrap() < full["lines"].as_u64().unwrap(), "{turning} against {full}");
    browser.screenshot("turning").await;

    browser.execute("window.zonecastConsole.orbit(false)", json!([])).await;
    let (rest, _) = browser.until("the full view once the camera rests", WAIT, at_rest).await;
    // The camera rests where the turn left it: a label sprite (two triangles) at the edge of the
    // view may be in it from one angle and not from the other; the edges and the device are
    // drawn as before.
    assert_eq!((&rest["drawn"]["lines"], &rest["drawn"]["points"]), (&full["lines"], &full["points"]), "{rest}");
    let (now, before) = (rest["drawn"]["triangles"].as_u64().unwrap(), full["triangles"].as_u64().unwrap());
    assert!(now.abs_diff(before) <= 4, "{now} triangles at rest after the turn, {before} before it: {rest}");
    assert_eq!(rest["trails"], json!(1), "{rest}");
    // The view is held coarse 100 ms after the last move, then drawn in full at the next frame.
    let settled = rest["settledMs"].as_f64().unwrap();
    assert!((100.0..600.0).contains(&settled), "the full view was drawn {settled} ms after the camera's last move");
    browser.close().await;
    server.stop().await;
}

/// The page's own modules, checked in the browser that runs them: the event-stream parser
/// against the format's rules, the stream's resumption with Last-Event-ID, and the zone
/// shapes against their GeometryData.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pages_modules_parse_streams_resume_them_and_draw_exact_shapes() {
    let server = Server::start(Mode::AllInOne).await;
    let browser = Browser::start(800, 600).await;
    browser.goto(&format!("{}/", server.base)).await;
    let parsed = browser
        .execute_async(
            r#"const { SseParser } = await import("/console/js/sse.js");
            const p = new SseParser();
            const frames = [];
            // Split anywhere, CRLF and CR line ends, comments, ids, named events, multi-line data.
            const text = ": keep-alive\r\n\r\nid: 7\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\nevent: lagged\nid: 9\ndata:{\"skipped\": 2}\n\ndata: x\r\rdata";
            for (let i = 0; i < text.length; i += 3) frames.push(...p.push(text.slice(i, i + 3)));
            return { frames, lastEventId: p.lastEventId, pending: p.buffer };"#,
            json!([]),
        )
        .await;
    assert_eq!(
        parsed,
        json!({
            "frames": [
                {"event": "message", "data": "{\"a\":\n1}", "id": "7"},
                {"event": "lagged", "data": "{\"skipped\": 2}", "id": "9"},
                {"event": "message", "data": "x", "id": "9"},
            ],
            "lastEventId": "9",
            "pending": "data",
        })
    );
    // A stream that ends is opened again with the last id it saw; a refusal is not retried.
    let resumed = browser
        .execute_async(
            r#"const { openStream } = await import("/console/js/sse.js");
            const real = window.fetch;
            const sent = [];
            window.fetch = async (url, init) => {
              sent.push([init.headers["X-API-Key"], init.headers["Last-Event-ID"] || null]);
              if (sent.length === 4) return new Response('{"message": "X-API-Key is not valid"}', { status: 401 });
              const text = `id: ${sent.length * 10}
data: {"n": ${sent.length}}

`;
              return new Response(new Blob([text]).stream(), { status: 200, headers: { "Content-Type": "text/event-stream" } });
            };
            const frames = [];
            const states = [];
            await new Promise((resolve) => openStream({
              url: "/v3/events/stream", headers: () => ({ "X-API-Key": "k" }), resume: true,
              signal: new AbortController().signal,
              onFrame: (f) => frames.push([f.id, f.data]),
              onState: (s, detail) => { states.push(detail ? `${s}: ${detail}` : s); if (s === "refused") resolve(); },
            }));
            window.fetch = real;
            return { sent, frames, last: states[states.length - 1] };"#,
            json!([]),
        )
        .await;
    assert_eq!(
        resumed,
        json!({
            "sent": [["k", null], ["k", "10"], ["k", "20"], ["k", "30"]],
            "frames": [["10", "{\"n\": 1}"], ["20", "{\"n\": 2}"], ["30", "{\"n\": 3}"]],
            "last": "refused: X-API-Key is not valid",
        })
    );
    let boxes = browser
        .execute_async(
            r#"const { zoneGeometry } = await import("/console/js/shapes.js");
            const box = (type, data) => {
              const g = zoneGeometry({ GeometryType: type, GeometryData: data }, [0, 4]);
              g.computeBoundingBox();
              return [g.boundingBox.min.toArray(), g.boundingBox.max.toArray()];
            };
            return {
              sphere: box("sphere", [[1, 2, 3], [2, 0, 0]]),
              circle: box("circle", [[1, 2, 99], [1, 0, 0]]),
              oblique: box("cuboid", [[0, 0, 0], [2, 1, 1], [1, 1, 0], [0, 1, 0], [0, 0, 3]]),
              square: box("square", [[1, 1, 7], [2, 3, 0], [0, 5, 0], [-1, 0, 0]]),
              cylinder: box("cylinder", [[0, 0, 1], [1, 0, 0], [4, 0.5, 0]]),
              polygon: box("POLYGON", [[0, 0, 0], [3, 0, 0], [0, 2, 0], [0, 0, 0], [1, 0, 0], [0, 0, -2]]),
            };"#,
            json!([]),
        )
        .await;
    let root2 = std::f64::consts::SQRT_2;
    let expected: [(&str, [[f64; 3]; 2]); 6] = [
        ("sphere", [[-1.0, 0.0, 1.0], [3.0, 4.0, 5.0]]),
        // 2D shapes ignore z and span the site's height.
        ("circle", [[0.0, 1.0, 0.0], [2.0, 3.0, 4.0]]),
        // Oblique axes: l runs along (1, 1, 0) normalised, w along y.
        ("oblique", [[0.0, 0.0, 0.0], [root2, root2 + 1.0, 1.0]]),
        ("square", [[-2.0, 1.0, 0.0], [1.0, 3.0, 4.0]]),
        ("cylinder", [[0.0, -0.5, 0.5], [4.0, 0.5, 1.5]]),
        // The closing vertex is dropped; swept 1 m along -z.
        ("polygon", [[0.0, 0.0, -1.0], [3.0, 2.0, 0.0]]),
    ];
    for (shape, corners) in expected {
        let got: Vec<f64> = boxes[shape]
            .as_array()
            .unwrap_or_else(|| panic!("{shape}: {boxes}"))
            .iter()
            .flat_map(|corner| corner.as_array().unwrap().iter().map(|c| c.as_f64().unwrap()))
            .collect();
        let want: Vec<f64> = corners.iter().flatten().copied().collect();
        assert!(
            got.iter().zip(&want).all(|(g, w)| (g - w).abs() < 2e-3),
            "{shape}: bounding box {got:?}, expected {want:?}"
        );
    }
    browser.close().await;
    server.stop().await;
}

both_modes!(
    the_console_is_served_without_credentials_with_its_content_types,
    a_user_signs_in_sees_every_zone_and_watches_a_device_enter_one,
    a_zone_typed_into_the_form_is_created_and_refusals_show_the_servers_message,
    the_zone_buttons_deactivate_lock_and_delete_the_zone,
    client_credentials_sign_in_with_a_token_kept_for_the_tab_only,
    a_zones_fields_are_edited_in_its_form_and_refusals_show_the_servers_message,
    the_device_inspector_follows_a_devices_position_zones_and_events,
    the_mqtt_panel_lists_each_connection_with_its_forwarding_status,
    the_visit_report_shows_each_stay_and_downloads_it_as_csv,
);
