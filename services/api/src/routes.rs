//! The API's route table: every path, method, operation and the authority it needs. Dispatch
//! (through the shared HTTP edge, [`zonecast_http::edge`]), auth and the OpenAPI document all
//! read this one table, so they cannot disagree.

use zonecast_http::ops::{MetricsText, Readiness};
use zonecast_http::routes::schema_of;
use zonecast_ingest::{PositionAnswer, PositionInput};
use zonecast_model::{
    AlarmNote, AlarmSelection, CertificateProfileInput, CertificateProfileSummary, ConnectionInput, ConnectionView,
    Device, DeviceInput, Macs, NewZone, RadiusMap, SettingInput, SettingView, Shelf, ShelveInput, StoredAlarm, Zone,
    ZoneInput,
};
use zonecast_runtime::Authority;

use crate::handlers::alarms::{AlarmPage, BulkChange};
use crate::handlers::cluster::ClusterStatus;
use crate::handlers::connections::ConnectionStatus;
use crate::handlers::devices::DevicePage;
use crate::handlers::devices::import::{DeviceImport, ImportAnswer};
use crate::handlers::history::EventPage;
use crate::handlers::stream::StreamedEvent;
use crate::handlers::stream::positions::StreamedPositions;
use crate::handlers::system::{OpenApiDocument, TokenAnswer, TokenRequest};
use crate::handlers::visits::{OccupancyView, VisitView};
use crate::handlers::zones::{NewZones, ZoneIds, ZoneUpdates};
use crate::reply::Ack;

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
    ListDevices,
    GetDevice,
    PutDevice,
    DeleteDevice,
    ImportDevices,
    ListAlarms,
    GetAlarm,
    AcknowledgeAlarm,
    ResolveAlarm,
    AcknowledgeAlarms,
    ResolveAlarms,
    ListShelves,
    ShelveZone,
    UnshelveZone,
    ShelveDevice,
    UnshelveDevice,
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
    EventStream,
    PositionStream,
    EventHistory,
    ZoneVisits,
    ZoneOccupancy,
    ClusterStatus,
    Token,
    OpenApi,
    Live,
    Health,
    Metrics,
}

/// One row of the table.
pub type Route = zonecast_http::routes::Route<Op>;

pub use zonecast_http::routes::{Lookup, lookup};

const R: Option<Authority> = Some(Authority::Read);
const W: Option<Authority> = Some(Authority::Write);
const A: Option<Authority> = Some(Authority::Admin);

use zonecast_http::route;

/// The routes a listener answers: [`ROUTES`], without `POST /v3/positions` unless it takes
/// positions (the all-in-one).
pub fn served(positions: bool) -> &'static [Route] {
    static WITHOUT_POSITIONS: std::sync::LazyLock<Vec<Route>> =
        std::sync::LazyLock::new(|| ROUTES.iter().filter(|r| r.op != Op::Positions).cloned().collect());
    if positions { ROUTES } else { &WITHOUT_POSITIONS }
}

/// The whole API.
pub static ROUTES: &[Route] = &[
    route!(GET "/v3/modules/zones" ListZones R, "listZones", "List zones", None, schema_of::<Vec<Zone>>),
    route!(POST "/v3/modules/zones" CreateZone W, "createZone", "Create a zone", Some(schema_of::<NewZone>), schema_of::<Zone>),
    route!(DELETE "/v3/modules/zones" DeleteZones W, "deleteZones", "Delete zones (all or nothing)", Some(schema_of::<ZoneIds>), schema_of::<Ack>),
    route!(POST "/v3/modules/zones/batch" CreateZones W, "createZones", "Create zones (all or nothing)", Some(schema_of::<NewZones>), schema_of::<Vec<Zone>>),
    route!(PUT "/v3/modules/zones/batch" UpdateZones W, "updateZones", "Update zones matched by ZoneID or Name (all or nothing)", Some(schema_of::<ZoneUpdates>), schema_of::<Ack>),
    route!(POST "/v3/modules/zones/activate" ActivateZones W, "activateZones", "Activate zones (all or nothing)", Some(schema_of::<ZoneIds>), schema_of::<Ack>),
    route!(POST "/v3/modules/zones/deactivate" DeactivateZones W, "deactivateZones", "Deactivate zones (all or nothing)", Some(schema_of::<ZoneIds>), schema_of::<Ack>),
    route!(GET "/v3/modules/zones/settings" ListSettings R, "listZoneSettings", "List zone settings with their current values", None, schema_of::<Vec<SettingView>>),
    route!(PUT "/v3/modules/zones/settings" PutSetting W, "writeZoneSetting", "Write one zone setting", Some(schema_of::<SettingInput>), schema_of::<Ack>),
    route!(PUT "/v3/modules/zones/devices/radius" SetRadii W, "setDeviceRadii", "Merge device radii; a null value removes", Some(schema_of::<RadiusMap>), schema_of::<Ack>),
    route!(GET "/v3/modules/zones/{ZoneID}" GetZone R, "getZone", "Retrieve a zone", None, schema_of::<Zone>),
    route!(PUT "/v3/modules/zones/{ZoneID}" UpdateZone W, "updateZone", "Update a zone; only supplied fields change", Some(schema_of::<ZoneInput>), schema_of::<Ack>),
    route!(DELETE "/v3/modules/zones/{ZoneID}" DeleteZone W, "deleteZone", "Delete a zone", None, schema_of::<Ack>),
    route!(POST "/v3/modules/zones/{ZoneID}/devices" AddDevices W, "addZoneDevices", "Add devices to a zone's DeviceList", Some(schema_of::<Macs>), schema_of::<Ack>),
    route!(DELETE "/v3/modules/zones/{ZoneID}/devices" RemoveDevices W, "removeZoneDevices", "Remove devices from a zone's DeviceList", Some(schema_of::<Macs>), schema_of::<Ack>),
    route!(POST "/v3/modules/zones/{ZoneID}/reset" ResetZone W, "resetZone", "Reset a zone's collisions", None, schema_of::<Ack>),
    route!(GET "/v3/modules/zones/{ZoneID}/visits" ZoneVisits R, "listZoneVisits", "Visits of devices to a zone overlapping [from, to), from the event history (JSON, or CSV with Accept: text/csv)", None, schema_of::<Vec<VisitView>>),
    route!(GET "/v3/modules/zones/{ZoneID}/occupancy" ZoneOccupancy R, "getZoneOccupancy", "Occupancy of a zone per step of [from, to), from the event history (JSON, or CSV with Accept: text/csv)", None, schema_of::<Vec<OccupancyView>>),
    route!(POST "/v3/modules/zones/{ZoneID}/shelve" ShelveZone W, "shelveZone", "Shelve a zone for some seconds: its conditions raise no alarm meanwhile", Some(schema_of::<ShelveInput>), schema_of::<Shelf>),
    route!(DELETE "/v3/modules/zones/{ZoneID}/shelve" UnshelveZone W, "unshelveZone", "Take a zone's shelving back", None, schema_of::<Ack>),
    route!(POST "/v3/modules/zones/{ZoneID}/lock" LockZone W, "lockZone", "Lock a zone's geometry", None, schema_of::<Ack>),
    route!(POST "/v3/modules/zones/{ZoneID}/unlock" UnlockZone W, "unlockZone", "Unlock a zone's geometry", None, schema_of::<Ack>),
    route!(GET "/v3/devices" ListDevices R, "listDevices", "List named devices in MAC order, a page at a time; by group, and by text in the name or MAC", None, schema_of::<DevicePage>),
    route!(POST "/v3/devices/import" ImportDevices W, "importDevices", "Create or replace devices from a JSON array or CSV (Content-Type: text/csv), all or nothing", Some(schema_of::<DeviceImport>), schema_of::<ImportAnswer>),
    route!(GET "/v3/devices/{MAC}" GetDevice R, "getDevice", "Retrieve a named device", None, schema_of::<Device>),
    route!(PUT "/v3/devices/{MAC}" PutDevice W, "putDevice", "Create a named device or replace its record", Some(schema_of::<DeviceInput>), schema_of::<Device>),
    route!(POST "/v3/devices/{MAC}/shelve" ShelveDevice W, "shelveDevice", "Shelve a device for some seconds: its conditions raise no alarm meanwhile", Some(schema_of::<ShelveInput>), schema_of::<Shelf>),
    route!(DELETE "/v3/devices/{MAC}/shelve" UnshelveDevice W, "unshelveDevice", "Take a device's shelving back", None, schema_of::<Ack>),
    route!(DELETE "/v3/devices/{MAC}" DeleteDevice W, "deleteDevice", "Delete a named device", None, schema_of::<Ack>),
    route!(GET "/v3/alarms" ListAlarms R, "listAlarms", "List alarms newest first, a page at a time; by state, device, zone, type and whether their condition holds", None, schema_of::<AlarmPage>),
    route!(GET "/v3/alarms/shelves" ListShelves R, "listShelves", "The zones and devices shelved now, the soonest to expire first", None, schema_of::<Vec<Shelf>>),
    route!(POST "/v3/alarms/acknowledge" AcknowledgeAlarms W, "acknowledgeAlarms", "Acknowledge the open alarms a list of AlarmIDs or a filter names, with an optional note", Some(schema_of::<AlarmSelection>), schema_of::<BulkChange>),
    route!(POST "/v3/alarms/resolve" ResolveAlarms W, "resolveAlarms", "Resolve the open or acknowledged alarms a list of AlarmIDs or a filter names, with an optional note", Some(schema_of::<AlarmSelection>), schema_of::<BulkChange>),
    route!(GET "/v3/alarms/{AlarmID}" GetAlarm R, "getAlarm", "Retrieve an alarm", None, schema_of::<StoredAlarm>),
    route!(POST "/v3/alarms/{AlarmID}/acknowledge" AcknowledgeAlarm W, "acknowledgeAlarm", "Acknowledge an open alarm, with an optional note", Some(schema_of::<AlarmNote>), schema_of::<StoredAlarm>),
    route!(POST "/v3/alarms/{AlarmID}/resolve" ResolveAlarm W, "resolveAlarm", "Resolve an open or acknowledged alarm, with an optional note", Some(schema_of::<AlarmNote>), schema_of::<StoredAlarm>),
    route!(GET "/v3/modules/mqtt/connections" ListConnections R, "listConnections", "List MQTT connections", None, schema_of::<Vec<ConnectionView>>),
    route!(POST "/v3/modules/mqtt/connections" CreateConnection A, "createConnection", "Create an MQTT connection", Some(schema_of::<ConnectionInput>), schema_of::<ConnectionView>),
    route!(GET "/v3/modules/mqtt/connections/{ConnectionID}" GetConnection R, "getConnection", "Retrieve one connection, as a list", None, schema_of::<Vec<ConnectionView>>),
    route!(PUT "/v3/modules/mqtt/connections/{ConnectionID}" UpdateConnection A, "updateConnection", "Update an MQTT connection", Some(schema_of::<ConnectionInput>), schema_of::<ConnectionView>),
    route!(DELETE "/v3/modules/mqtt/connections/{ConnectionID}" DeleteConnection A, "deleteConnection", "Delete an MQTT connection", None, schema_of::<Ack>),
    route!(GET "/v3/modules/mqtt/connections/{ConnectionID}/status" ConnectionStatus R, "getConnectionStatus", "Forwarding status of a connection", None, schema_of::<ConnectionStatus>),
    route!(GET "/v3/modules/mqtt/certificates" ListCertificates R, "listCertificateProfiles", "List certificate profiles (ID and name)", None, schema_of::<Vec<CertificateProfileSummary>>),
    route!(POST "/v3/modules/mqtt/certificates" CreateCertificate A, "createCertificateProfile", "Create a certificate profile", Some(schema_of::<CertificateProfileInput>), schema_of::<CertificateProfileSummary>),
    route!(PUT "/v3/modules/mqtt/certificates/{ID}" UpdateCertificate A, "updateCertificateProfile", "Update a certificate profile", Some(schema_of::<CertificateProfileInput>), schema_of::<CertificateProfileSummary>),
    route!(DELETE "/v3/modules/mqtt/certificates/{ID}" DeleteCertificate A, "deleteCertificateProfile", "Delete an unused certificate profile", None, schema_of::<Ack>),
    route!(POST "/v3/positions" Positions W, "postPositions", "Position input (all-in-one): an event, an array, a batch or compact objects", Some(schema_of::<PositionInput>), schema_of::<PositionAnswer>),
    route!(GET "/v3/events" EventHistory R, "listEvents", "Stored zone events and alarms in the order they were stored, a page at a time", None, schema_of::<EventPage>),
    route!(GET "/v3/events/stream" EventStream R, "streamEvents", "Live zone events and alarms as Server-Sent Events (text/event-stream), resumable with Last-Event-ID", None, schema_of::<StreamedEvent>),
    route!(GET "/v3/positions/stream" PositionStream R, "streamPositions", "Live device positions as Server-Sent Events (text/event-stream), at most ZONECAST_STREAM_POSITION_HZ per device", None, schema_of::<StreamedPositions>),
    route!(GET "/v3/system/cluster" ClusterStatus R, "getClusterStatus", "Every service's replicas with their lag; the evaluators, whether each is alive and which position partitions it owns; the partitions no live evaluator owns", None, schema_of::<ClusterStatus>),
    route!(POST "/v3/auth/token" Token None, "getToken", "Exchange client credentials for a bearer token", Some(schema_of::<TokenRequest>), schema_of::<TokenAnswer>),
    route!(GET "/v3/openapi.json" OpenApi R, "getOpenApi", "This document", None, schema_of::<OpenApiDocument>),
    route!(GET "/livez" Live None, "liveness", "Liveness: 200 whenever the process serves HTTP", None, schema_of::<Readiness>),
    route!(GET "/readyz" Health None, "readiness", "Readiness: 200 when the store and the bus answer, else 503", None, schema_of::<Readiness>),
    route!(GET "/healthz" Health None, "health", "Readiness under its former name", None, schema_of::<Readiness>),
    route!(GET "/metrics" Metrics R, "metrics", "Prometheus metrics (text exposition format)", None, schema_of::<MetricsText>),
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
