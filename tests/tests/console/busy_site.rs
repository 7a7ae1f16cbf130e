//! A busy site: the console on the demo warehouse (36 zones of every shape, 290 people and a
//! forklift reporting every second, each named in the device registry) draws every zone and
//! device as they move, with the devices' names, without an error.

use zonecast_tests::{Mode, Server, WRITE_KEY};

use super::{WAIT, signed_in};

/// Signed in on the all-in-one running its demo site, the view draws all 36 zones and the
/// walking devices, the registry's 291 names are read and labels drawn (no zone label over
/// another), zones light up as people enter them, and frames keep coming while positions and events stream in; the browser closing
/// checks that the page had no error all along.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_draws_a_busy_site_without_an_error() {
    let server = Server::start_configured(Mode::AllInOne, |config| config.demo = true).await;
    let browser = signed_in(&server, WRITE_KEY).await;
    let busy = "(() => { const s = window.zonecastConsole.stats(); \
                return s.zonesDrawn === 36 && s.devices >= 200 && s.litZones > 0 && s.named === 291 \
                && s.deviceLabels > 0 && s; })()";
    let (stats, _) = browser.until("the demo's zones, devices and names drawn, some zones lit", WAIT, busy).await;
    // Zone labels, none covering another.
    let apart = "(() => { const r = window.zonecastConsole.stats().labelRects; \
                 const overlap = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom; \
                 return r.length > 3 && r.every((a, i) => r.every((b, j) => i === j || !overlap(a, b))) && r.length; })()";
    browser.until("zone labels drawn, none over another", WAIT, apart).await;
    // A few more seconds of live positions and events, drawn frame after frame.
    let later = format!("window.zonecastConsole.stats().rendered > {} + 20", stats["rendered"]);
    browser.until("frames drawn while the site moves", WAIT, &later).await;
    browser.assert_no_page_errors("on a busy site").await;
    browser.screenshot("busy-site").await;
    browser.close().await;
    server.stop().await;
}
