//! A zone created through the API reads back, in both deployment modes.
#![allow(clippy::unwrap_used)]

use reqwest::Method;
use zonecast_tests::{Mode, Server, both_modes, sphere};

async fn a_created_zone_reads_back(mode: Mode) {
    let server = Server::start(mode).await;
    let zone = server.create_zone(sphere("dock", [1.0, 2.0, 3.0], 2.5)).await;
    let id = zone["ZoneID"].as_str().unwrap();
    let read = server.ok(Method::GET, &format!("/v3/modules/zones/{}", id.to_lowercase()), None).await;
    assert_eq!(read, zone);
    assert_eq!(read["SiteID"], 501);
    server.stop().await;
}

both_modes!(a_created_zone_reads_back);
