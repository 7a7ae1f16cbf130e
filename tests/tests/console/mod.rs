//! The console at `/`: its files are served without credentials with their content types, and in
//! a headless Chromium a user signs in, sees every zone drawn, watches a device enter a zone
//! within a second, starts from an empty site, sees a busy one (the demo) drawn, creates a zone
//! by typing its geometry or drawing it with the mouse, edits a zone's fields, inspects a device,
//! reads a zone's visits and the MQTT connections' status, finds devices by their names in the
//! device registry, and acknowledges an alarm that another console then shows acknowledged.
//! Every browser fails its test on closing when the page had an error (an uncaught exception, a
//! failed load: see `zonecast_tests::browser`). Screenshots of each step go to
//! `target/console-screenshots/`.
//!
//! Each module holds the tests of one part of the console.
#![allow(clippy::unwrap_used)]

mod alarms;
mod busy_site;
mod detail;
mod devices;
mod drawing;
mod editor;
mod empty_site;
mod served;
mod signin;
mod view;
mod zones;

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use zonecast_tests::browser::Browser;
use zonecast_tests::{Mode, Server, WRITE_KEY, sphere};

/// How long a console may take to show what the service did: the bound of a wait, not a timing.
/// It is generous because on a slow two-core host the whole suite runs beside these pages (the
/// distributed alarm went past 20 s once while the API fuzzing ran, and took 10 s alone).
const WAIT: Duration = Duration::from_secs(45);

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
