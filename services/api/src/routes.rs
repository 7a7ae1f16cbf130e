//! The API's route table: every path, method, operation and the authority it needs. Dispatch
//! (through the shared HTTP edge, [`zonecast_runtime::edge`]), auth and the OpenAPI document all
//! read this one table, so they cannot disagree.

use zonecast_runtime::Authority;

/// Every operation the API answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum Op {
    ListZones,
    CreateZone,
    GetZone,
    DeleteZone,
    UpdateZone,
    CreateZones,
    UpdateZones,
    DeleteZones,
    ActivateZones,
    DeactivateZones,
    AddDevices,
    RemoveDevices,
    ListSettings,
    PutSetting,
    SetRadii,
    ResetZone,
    LockZone,
    UnlockZone,
    ListConnections,
    CreateConnection,
    GetConnection,
    UpdateConnection,
    DeleteConnection,
    ConnectionStatus,
    ListCertificates,
    CreateCertificate,
    UpdateCertificate,
    DeleteCertificate,
    Positions,
    Token,
    OpenApi,
    Live,
    Health,
    Metrics,
}

/// One row of the table.
pub type Route = zonecast_runtime::routes::Route<Op>;

pub use zonecast_runtime::routes::{Lookup, lookup};

const R: Option<Authority> = Some(Authority::Read);
const W: Option<Authority> = Some(Authority::Write);
const A: Option<Authority> = Some(Authority::Admin);

use zonecast_runtime::route;

/// The whole API.
pub static ROUTES: &[Route] = &[
    route!(GET "/v3/modules/zones" ListZones R, "listZones", "List zones", None, "ZoneList"),
    route!(POST "/v3/modules/zones" CreateZone W, "createZone", "Create a zone", Some("ZoneInput"), "Zone"),
    route!(DELETE "/v3/modules/zones" DeleteZones W, "deleteZones", "Delete zones (all or nothing)", Some("ZoneIDList"), "Ack"),
    route!(POST "/v3/modules/zones/batch" CreateZones W, "createZones", "Create zones (all or nothing)", Some("ZoneInputList"), "ZoneList"),
    route!(PUT "/v3/modules/zones/batch" UpdateZones W, "updateZones", "Update zones matched by ZoneID or Name (all or nothing)", Some("ZoneUpdateList"), "Ack"),
    route!(POST "/v3/modules/zones/activate" ActivateZones W, "activateZones", "Activate zones (all or nothing)", Some("ZoneIDList"), "Ack"),
    route!(POST "/v3/modules/zones/deactivate" DeactivateZones W, "deactivateZones", "Deactivate zones (all or nothing)", Some("ZoneIDList"), "Ack"),
    route!(GET "/v3/modules/zones/settings" ListSettings R, "listZoneSettings", "List zone settings with their current values", None, "SettingList"),
    route!(PUT "/v3/modules/zones/settings" PutSetting W, "writeZoneSetting", "Write one zone setting", Some("Setting"), "Ack"),
    route!(PUT "/v3/modules/zones/devices/radius" SetRadii W, "setDeviceRadii", "Merge device radii; a null value removes", Some("RadiusMap"), "Ack"),
    route!(GET "/v3/modules/zones/{ZoneID}" GetZone R, "getZone", "Retrieve a zone", None, "Zone"),
    route!(PUT "/v3/modules/zones/{ZoneID}" UpdateZone W, "updateZone", "Update a zone; only supplied fields change", Some("ZoneInput"), "Ack"),
    route!(DELETE "/v3/modules/zones/{ZoneID}" DeleteZone W, "deleteZone", "Delete a zone", None, "Ack"),
    route!(POST "/v3/modules/zones/{ZoneID}/devices" AddDevices W, "addZoneDevices", "Add devices to a zone's DeviceList", Some("MACList"), "Ack"),
    route!(DELETE "/v3/modules/zones/{ZoneID}/devices" RemoveDevices W, "removeZoneDevices", "Remove devices from a zone's DeviceList", Some("MACList"), "Ack"),
    route!(POST "/v3/modules/zones/{ZoneID}/reset" ResetZone W, "resetZone", "Reset a zone's collisions", None, "Ack"),
    route!(POST "/v3/modules/zones/{ZoneID}/lock" LockZone W, "lockZone", "Lock a zone's geometry", None, "Ack"),
    route!(POST "/v3/modules/zones/{ZoneID}/unlock" UnlockZone W, "unlockZone", "Unlock a zone's geometry", None, "Ack"),
    route!(GET "/v3/modules/mqtt/connections" ListConnections R, "listConnections", "List MQTT connections", None, "ConnectionList"),
    route!(POST "/v3/modules/mqtt/connections" CreateConnection A, "createConnection", "Create an MQTT connection", Some("ConnectionInput"), "Connection"),
    route!(GET "/v3/modules/mqtt/connections/{ConnectionID}" GetConnection R, "getConnection", "Retrieve one connection, as a list", None, "ConnectionList"),
    route!(PUT "/v3/modules/mqtt/connections/{ConnectionID}" UpdateConnection A, "updateConnection", "Update an MQTT connection", Some("ConnectionInput"), "Connection"),
    route!(DELETE "/v3/modules/mqtt/connections/{ConnectionID}" DeleteConnection A, "deleteConnection", "Delete an MQTT connection", None, "Ack"),
    route!(GET "/v3/modules/mqtt/connections/{ConnectionID}/status" ConnectionStatus R, "getConnectionStatus", "Forwarding status of a connection", None, "ConnectionStatus"),
    route!(GET "/v3/modules/mqtt/certificates" ListCertificates R, "listCertificateProfiles", "List certificate profiles (ID and name)", None, "CertificateProfileList"),
    route!(POST "/v3/modules/mqtt/certificates" CreateCertificate A, "createCertificateProfile", "Create a certificate profile", Some("CertificateProfileInput"), "CertificateProfile"),
    route!(PUT "/v3/modules/mqtt/certificates/{ID}" UpdateCertificate A, "updateCertificateProfile", "Update a certificate profile", Some("CertificateProfileInput"), "CertificateProfile"),
    route!(DELETE "/v3/modules/mqtt/certificates/{ID}" DeleteCertificate A, "deleteCertificateProfile", "Delete an unused certificate profile", None, "Ack"),
    route!(POST "/v3/positions" Positions W, "postPositions", "Position input (all-in-one): an event, an array, a batch or compact objects", Some("PositionInput"), "PositionAnswer"),
    route!(POST "/v3/auth/token" Token None, "getToken", "Exchange client credentials for a bearer token", Some("TokenRequest"), "Token"),
    route!(GET "/v3/openapi.json" OpenApi R, "getOpenApi", "This document", None, "OpenApi"),
    route!(GET "/livez" Live None, "liveness", "Liveness: 200 whenever the process serves HTTP", None, "Health"),
    route!(GET "/readyz" Health None, "readiness", "Readiness: 200 when the store and the bus answer, else 503", None, "Health"),
    route!(GET "/healthz" Health None, "health", "Readiness under its former name", None, "Health"),
    route!(GET "/metrics" Metrics R, "metrics", "Prometheus metrics (text exposition format)", None, "Metrics"),
];

#[cfg(test)]
mod tests {
    use warp::http::Method;

    use super::*;

    #[test]
    fn literal_segments_win_over_parameters() {
        let Lookup::Found(r, p) = lookup(ROUTES, &Method::GET, "/v3/modules/zones/settings") else { panic!() };
        assert_eq!((r.op, p.len()), (Op::ListSettings, 0));
        let Lookup::Found(r, p) = lookup(ROUTES, &Method::GET, "/v3/modules/zones/abc") else { panic!() };
        assert_eq!((r.op, p), (Op::GetZone, vec!["abc".to_owned()]));
        let Lookup::Found(r, _) = lookup(ROUTES, &Method::PUT, "/v3/modules/zones/batch") else { panic!() };
        assert_eq!(r.op, Op::UpdateZones);
    }

    #[test]
    fn unknown_paths_and_methods_are_told_apart() {
        assert!(matches!(lookup(ROUTES, &Method::GET, "/v3/nothing"), Lookup::Missing));
        assert!(matches!(lookup(ROUTES, &Method::PATCH, "/v3/modules/zones"), Lookup::WrongMethod(m) if m.len() == 3));
    }

    #[test]
    fn every_route_is_unique() {
        for (i, a) in ROUTES.iter().enumerate() {
            for b in &ROUTES[i + 1..] {
                assert!(!(a.method == b.method && a.path == b.path), "{} {}", a.method, a.path);
                assert_ne!(a.id, b.id);
            }
        }
    }
}
