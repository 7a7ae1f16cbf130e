//! A new site: the console opened on a server without zones works from the first frame, and a
//! zone drawn there and deleted again leaves it as it was.

use serde_json::json;
use zonecast_tests::browser::Browser;
use zonecast_tests::{Mode, Server, WRITE_KEY};

use super::WAIT;
use super::drawing::{created, drawn, floor_pixel, look_down};

const HINT: &str = "No zones yet — draw one with the Draw tools or type one in the form.";

/// The hint over the view of a site without zones, when it is shown.
const HINT_SHOWN: &str =
    "!document.getElementById('view-empty').hidden && document.getElementById('view-empty').textContent";

/// Reads the zone list again (the view is drawn again after each reading, its labels chosen
/// anew) and waits until the view has drawn a frame since; answers its counters.
async fn drawn_again(browser: &Browser, what: &str) -> serde_json::Value {
    let before = browser
        .execute_async(
            "const before = window.zonecastConsole.stats().rendered; \
             await window.zonecastConsole.refresh(); return before;",
            json!([]),
        )
        .await;
    let script =
        format!("(() => {{ const s = window.zonecastConsole.stats(); return s.rendered > {before} && s; }})()");
    browser.until(what, WAIT, &script).await.0
}

/// Opened right after the first start (no zone yet), the page has no error before sign-in, and
/// draws its floor grid; signed in, the empty view invites to draw or type the first zone. A box
/// drawn with the mouse is created, listed and drawn; deleted, the site is empty again, still
/// without an error, and the invitation is back. The page's requests of its own files (its
/// icon too) all succeed: the browser closing checks that, with the page's errors.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_works_from_an_empty_site_and_after_its_last_zone_is_deleted() {
    let server = Server::start(Mode::AllInOne).await;
    let browser = Browser::start(1280, 800).await;
    browser.goto(&format!("{}/", server.base)).await;
    browser.until("the sign-in form", WAIT, "!document.getElementById('signin').hidden").await;
    browser.until("a few animation frames", WAIT, "window.zonecastConsole.stats().frames > 5").await;
    browser.assert_no_page_errors("on load, before sign-in").await;
    // The floor grid is drawn under the sign-in form.
    let drawn_once = "(() => { const s = window.zonecastConsole.stats(); return s.rendered > 0 && s; })()";
    let (before, _) = browser.until("the view drawn", WAIT, drawn_once).await;
    assert_eq!(before["zonesDrawn"], json!(0), "{before}");
    assert!(before["drawn"]["lines"].as_u64().unwrap() > 0, "no floor grid drawn: {before}");
    assert_eq!(browser.execute("return document.getElementById('view-empty').hidden", json!([])).await, json!(true));

    browser.type_into("#api-key", WRITE_KEY).await;
    browser.click("#signin-submit").await;
    browser.until("signed in, the zones read", WAIT, "window.zonecastConsole.stats().zonesLoaded > 0").await;
    let registry = "(() => { const s = window.zonecastConsole.stats(); return s.registryLoads > 0 && s; })()";
    let (read, _) = browser.until("the device registry read", WAIT, registry).await;
    assert_eq!(read["named"], json!(0), "an empty registry names no device: {read}");
    assert_eq!(browser.until("the empty view's hint", WAIT, HINT_SHOWN).await.0, json!(HINT));
    let empty = drawn_again(&browser, "the empty site drawn").await;
    assert!(empty["drawn"]["lines"].as_u64().unwrap() > 0, "no floor grid drawn: {empty}");
    assert_eq!(empty["zones"], json!(0), "{empty}");
    browser.assert_no_page_errors("signed in, with no zones").await;
    browser.screenshot("empty-site").await;

    // The first zone, drawn with the mouse where the hint points.
    look_down(&browser).await;
    browser.click("[data-draw=box]").await;
    browser.drag(floor_pixel(&browser, -2.0, -1.0).await, floor_pixel(&browser, 3.0, 2.0).await).await;
    drawn(&browser, "cuboid").await;
    browser.type_into("#create-name", "First zone").await;
    browser.click("#create-submit").await;
    let id = created(&browser, "").await;
    let shown = format!(
        "window.zonecastConsole.stats().zonesDrawn === 1 && document.getElementById('zone-{id}') \
         && document.getElementById('view-empty').hidden"
    );
    browser.until("the zone listed and drawn, the hint gone", WAIT, &shown).await;
    let one = drawn_again(&browser, "the zone drawn").await;
    assert!(one["drawn"]["triangles"].as_u64().unwrap() > 0, "{one}");
    browser.screenshot("empty-site-first-zone").await;

    // Deleted: the site is empty again, and still drawn.
    browser.click(&format!("#zone-{id}")).await;
    browser.click(&format!("#zone-{id} .act-delete")).await;
    browser.accept_dialog(WAIT).await;
    browser.until("the zone gone", WAIT, "window.zonecastConsole.stats().zonesDrawn === 0").await;
    assert_eq!(browser.until("the hint back", WAIT, HINT_SHOWN).await.0, json!(HINT));
    let again = drawn_again(&browser, "the emptied site drawn").await;
    assert!(again["drawn"]["lines"].as_u64().unwrap() > 0, "no floor grid drawn: {again}");
    browser.assert_no_page_errors("after the last zone was deleted").await;
    let list = "document.querySelector('#zone-list li.empty')?.textContent";
    assert_eq!(browser.until("the empty list", WAIT, list).await.0, json!("No zones yet."));
    browser.close().await;
    server.stop().await;
}
