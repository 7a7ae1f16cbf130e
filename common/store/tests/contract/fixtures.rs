//! The values the contract writes: zones, collisions, connections, profiles and their statuses.

use chrono::{DateTime, TimeZone, Utc};
use serde_json::json;
use uuid::Uuid;
use zonecast_model::{ConfigChanged, ConfigKind, Connection, Mac, Topic, ZoneInput, ZoneSpec};
use zonecast_store::{Collision, ConnectionStatus, StoreError, StoredCertificate, StoredConnection};

pub(crate) fn change(kind: ConfigKind, id: &str) -> ConfigChanged {
    ConfigChanged { kind, ids: vec![id.into()], operation: None, revision: 0 }
}

pub(crate) fn mac(s: &str) -> Mac {
    s.parse().unwrap()
}

/// Schema steps each dialect has (`migrations/<dialect>/V<n>__*.sql`).
pub(crate) const MIGRATIONS: usize = 8;

pub(crate) fn at(ms: i64) -> DateTime<Utc> {
    Utc.timestamp_millis_opt(1_795_000_000_000 + ms).unwrap()
}

/// A zone with every field set away from its default.
pub(crate) fn full_zone(name: &str) -> ZoneSpec {
    let input = json!({
        "Name": name,
        "GeometryType": "cuboid",
        "GeometryData": [[1.5, -2.25, 0.1], [4, 3, 2.5], [1, 1, 0], [-1, 1, 0], [0, 0, 1]],
        "AlertLevel": 7,
        "Active": false,
        "InclusionPolicy": "none",
        "DeviceList": ["00:aa:bb:cc:dd:01", "00-AA-BB-CC-DD-02"],
        "ZoneActions": [
            {"type": "info-event", "message": "hello ünïcode", "on": "both"},
            {"type": "device-alarm", "on": "exit"},
            {"type": "info-event", "on": "dwell"},
            {"type": "http-request", "uri": "https://example.com/hook?a=1", "method": "put",
             "headers": {"X-Token": "t"}, "on": "enter"}
        ],
        "IsTimed": true,
        "StartTime": "2026-11-21T10:00:00.123Z",
        "StopTime": "2026-11-22T10:00:00.000Z",
        "MobileOriginSource": "00:AA:BB:CC:DD:FF",
        "MaxDwellSeconds": 900.5
    });
    let spec = ZoneInput::parse(&input, &zonecast_model::Limits::DEFAULT).unwrap().create(Uuid::new_v4()).unwrap();
    ZoneSpec { is_geometry_locked: true, ..spec }
}

/// A minimal zone.
pub(crate) fn zone(name: &str) -> ZoneSpec {
    let input = json!({"Name": name, "GeometryType": "sphere", "GeometryData": [[0, 0, 0], [1, 0, 0]]});
    ZoneInput::parse(&input, &zonecast_model::Limits::DEFAULT).unwrap().create(Uuid::new_v4()).unwrap()
}

pub(crate) fn collision(zone: Uuid, device: &str, ms: i64) -> Collision {
    Collision {
        zone_id: zone,
        mac: mac(device),
        collision_id: Uuid::new_v4(),
        entry_time: at(ms),
        dwell_reported: false,
    }
}

pub(crate) fn certificate(name: &str) -> StoredCertificate {
    StoredCertificate { id: Uuid::new_v4(), name: name.to_owned(), sealed: vec![0, 1, 2, 255, 0] }
}

pub(crate) fn connection(profile: Option<Uuid>, host: &str) -> StoredConnection {
    StoredConnection {
        connection: Connection {
            id: Uuid::new_v4(),
            host: host.to_owned(),
            port: 8883,
            tls: profile.is_some(),
            certificate_profile_id: profile,
            username: Some("forwarder".to_owned()),
            has_password: true,
            topics: vec![Topic {
                topic: "site/1/zones".to_owned(),
                filter_chain: json!([{"field": "EventType", "equals": "ZONE_ENTER"}]),
            }],
        },
        password_sealed: Some(vec![9, 8, 7, 0, 6]),
    }
}

pub(crate) fn status(connection_id: Uuid, replica: &str, forwarded: u64, ms: i64) -> ConnectionStatus {
    ConnectionStatus {
        connection_id,
        replica: replica.to_owned(),
        connected: true,
        last_error: None,
        forwarded,
        dropped: 1,
        queued: 2,
        updated_at: at(ms),
    }
}

pub(crate) fn names(zones: &[ZoneSpec]) -> Vec<&str> {
    zones.iter().map(|z| z.name.as_str()).collect()
}

#[track_caller]
pub(crate) fn assert_not_found(result: Result<impl std::fmt::Debug, StoreError>, what: &str, id: &str) {
    match result {
        Err(StoreError::NotFound { what: w, id: i }) => {
            assert_eq!((w, i.as_str()), (what, id));
        }
        other => panic!("expected NotFound {{ {what}, {id} }}, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// The contract
