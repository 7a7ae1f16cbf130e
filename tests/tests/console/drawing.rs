//! Zones drawn on the floor with the mouse, and the helpers that aim it.

use reqwest::Method;
use serde_json::{Value, json};
use zonecast_tests::browser::{Browser, ENTER, ESCAPE};
use zonecast_tests::{Mode, Server, WRITE_KEY};

use super::{WAIT, message, signed_in, value};

/// Looks straight down on the site and waits until the view has settled.
pub(super) async fn look_down(browser: &Browser) {
    browser.execute("window.zonecastConsole.topView()", json!([])).await;
    // Settled: the same pixel for the origin in two readings a few frames apart.
    let settled = "(() => { const c = window.zonecastConsole; const now = { at: JSON.stringify(c.floorPixel(0, 0)), \
                   frames: c.stats().frames }; const last = window.lastReading; \
                   const settled = last && last.at === now.at && now.frames - last.frames >= 3; \
                   if (!last || now.at !== last.at) window.lastReading = now; return settled; })()";
    browser.until("the view settled", WAIT, settled).await;
}

/// Where the floor point (`x`, `y`, 0) is on screen.
pub(super) async fn floor_pixel(browser: &Browser, x: f64, y: f64) -> (f64, f64) {
    let script = format!("window.zonecastConsole.floorPixel({x}, {y})");
    let (at, _) = browser.until(&format!("the floor point ({x}, {y}) in view"), WAIT, &script).await;
    (at["x"].as_f64().unwrap(), at["y"].as_f64().unwrap())
}

/// The create form's GeometryType and GeometryData once a `kind` was drawn into it.
pub(super) async fn drawn(browser: &Browser, kind: &str) -> Value {
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
pub(super) async fn created(browser: &Browser, before: &str) -> String {
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
