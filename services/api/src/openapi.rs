//! The OpenAPI 3 document of this API, generated from the route table so that it lists exactly
//! the routes the server answers; schemas are written out here once.

use serde_json::{Map, Value, json};
use zonecast_runtime::Authority;

use crate::routes::{Op, Route};

fn schema_ref(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

fn error_response(description: &str) -> Value {
    json!({"description": description, "content": {"application/json": {"schema": schema_ref("Error")}}})
}

fn schemas() -> Value {
    let row = json!({"type": "array", "items": {"type": "number"}, "minItems": 3, "maxItems": 3});
    let mac = json!({"type": "string", "pattern": "^([0-9A-Fa-f]{2}:){5}[0-9A-Fa-f]{2}$|^([0-9A-Fa-f]{2}-){5}[0-9A-Fa-f]{2}$",
               "description": "six hex octets separated by ':' or '-', one separator throughout", "example": "00:AA:BB:CC:DD:EE"});
    let zone_fields = json!({
        "Name": {"type": "string", "maxLength": 256},
        "GeometryType": {"type": "string", "enum": ["sphere", "circle", "cuboid", "square", "cylinder", "polygon"]},
        "GeometryData": {"type": "array", "items": row},
        "AlertLevel": {"type": "integer", "minimum": 0, "description": "0 is the lowest priority; no upper bound (levels past 18446744073709551615 rank as that one)"},
        "Active": {"type": "boolean"},
        "InclusionPolicy": {"type": "string", "enum": ["all", "none"]},
        "DeviceList": {"type": "array", "items": mac},
        "ZoneActions": {"type": "array", "items": schema_ref("ZoneAction")},
        "IsTimed": {"type": "boolean"},
        "StartTime": {"type": ["string", "null"], "format": "date-time"},
        "StopTime": {"type": ["string", "null"], "format": "date-time"},
        "MobileOriginSource": {"anyOf": [mac, {"type": "null"}]},
    });
    let mut zone = zone_fields.as_object().cloned().unwrap_or_default();
    zone.insert("SiteID".into(), json!({"type": "integer"}));
    zone.insert("ZoneID".into(), json!({"type": "string", "format": "uuid"}));
    zone.insert("CollidingDevices".into(), json!({"type": "array", "items": {
        "type": "object",
        "required": ["CollisionID", "MAC", "EntryTime"],
        "properties": {
            "CollisionID": {"type": "string", "format": "uuid", "description": "the CollisionID of the ZONE_ENTER event"},
            "MAC": mac,
            "EntryTime": {"type": "string", "format": "date-time", "description": "the EntryTime of the ZONE_ENTER event"}}}}));
    zone.insert("IsGeometryLocked".into(), json!({"type": "boolean"}));
    let mut update = zone_fields.as_object().cloned().unwrap_or_default();
    update.insert("ZoneID".into(), json!({"type": "string", "format": "uuid", "description": "selects the zone; without it, Name must match exactly one zone"}));
    let filter = json!({
        "type": "object",
        "properties": {
            "FilterTemplate": {"type": "string", "enum": ["dashboard", "position_events", "zone_events", "alarm_events", "all"]},
            "Selector": {"type": "string", "example": "Content.Position.2"},
            "Type": {"type": "string", "enum": ["regex", "equals", "exists", "lt", "lte", "gt", "gte"]},
            "Match": {"type": ["string", "number", "boolean"]},
            "Invert": {"type": "boolean"},
            "Children": {"type": "object", "properties": {
                "all": {"type": "array", "items": schema_ref("Filter")},
                "any": {"type": "array", "items": schema_ref("Filter")}}}
        }
    });
    let connection_fields = json!({
        "host": {"type": "string"},
        "port": {"type": "integer", "minimum": 1, "maximum": 65535, "default": 8883},
        "TLS": {"type": "boolean", "default": true},
        "CertificateProfileID": {"type": ["string", "null"], "format": "uuid"},
        "username": {"type": ["string", "null"]},
        "topics": {"type": "array", "items": {"type": "object", "required": ["topic"], "properties": {
            "topic": {"type": "string"},
            "FilterChain": {"type": "array", "items": schema_ref("Filter")}}}},
    });
    let mut connection = connection_fields.as_object().cloned().unwrap_or_default();
    connection.insert("ConnectionID".into(), json!({"type": "string", "format": "uuid"}));
    let mut connection_input = connection_fields.as_object().cloned().unwrap_or_default();
    connection_input.insert("password".into(), json!({"type": ["string", "null"], "writeOnly": true, "description": "never returned; omitted on update keeps the stored one"}));
    let setting = json!({"type": "object", "required": ["SettingName"], "properties": {
        "SettingName": {"type": "string", "enum": ["SiteAlarmMinLevel", "DeviceAlarmMinLevel", "ExitToleranceMeters", "ExitDelayMs", "EntryDelayMs", "DeviceTimeoutSeconds", "DefaultDeviceRadiusMeters"]},
        "SettingValue": {"type": ["string", "number"]},
        "Description": {"type": "string", "readOnly": true, "description": "what the setting does; ignored on input"},
        "DisplayName": {"type": "string", "readOnly": true, "description": "a label for dashboards; ignored on input"},
        "IsActive": {"type": "boolean", "default": true},
        "DefaultValue": {"type": "string", "readOnly": true}}});
    json!({
        "Zone": {"type": "object", "properties": zone},
        "ZoneList": {"type": "array", "items": schema_ref("Zone")},
        "ZoneInput": {"type": "object", "properties": zone_fields, "description": "create requires GeometryType and GeometryData; update changes only supplied fields"},
        "ZoneInputList": {"type": "array", "items": schema_ref("ZoneInput")},
        "ZoneUpdateList": {"type": "array", "items": {"type": "object", "properties": update}},
        "ZoneIDList": {"type": "array", "items": {"type": "string", "format": "uuid"}},
        "MACList": {"type": "array", "items": mac},
        "ZoneAction": {"type": "object", "required": ["type"], "properties": {
            "type": {"type": "string", "enum": ["info-event", "device-alarm", "http-request"]},
            "message": {"type": "string"},
            "uri": {"type": "string", "format": "uri"},
            "method": {"type": "string", "enum": ["GET", "POST", "PUT", "PATCH", "DELETE"], "default": "POST"},
            "headers": {"type": "object", "additionalProperties": {"type": "string"}},
            "on": {"type": "string", "enum": ["enter", "exit", "both"], "default": "enter"}}},
        "Setting": setting,
        "SettingList": {"type": "array", "items": schema_ref("Setting")},
        "RadiusMap": {"type": "object", "additionalProperties": {"type": ["number", "null"], "minimum": 0, "maximum": 100}},
        "Filter": filter,
        "Connection": {"type": "object", "properties": connection},
        "ConnectionList": {"type": "array", "items": schema_ref("Connection")},
        "ConnectionInput": {"type": "object", "required": ["host"], "properties": connection_input},
        "ConnectionStatus": {"type": "object", "properties": {
            "ConnectionID": {"type": "string", "format": "uuid"},
            "connected": {"type": "boolean"}, "lastError": {"type": ["string", "null"]},
            "forwarded": {"type": "integer"}, "dropped": {"type": "integer"}, "queued": {"type": "integer"},
            "replicas": {"type": "array", "items": {"type": "object"}}}},
        "CertificateProfileInput": {"type": "object", "required": ["name", "ca", "client"], "properties": {
            "name": {"type": "string"},
            "ca": {"type": "string", "format": "byte", "description": "base64 of a PEM or DER CA certificate"},
            "client": {"type": "string", "format": "byte", "description": "base64 of a PKCS#12 bundle", "writeOnly": true},
            "password": {"type": "string", "writeOnly": true}}},
        "CertificateProfile": {"type": "object", "properties": {"ID": {"type": "string", "format": "uuid"}, "name": {"type": "string"}}},
        "CertificateProfileList": {"type": "array", "items": schema_ref("CertificateProfile")},
        "TokenRequest": {"type": "object", "required": ["grant_type", "auth_id", "auth_secret"], "properties": {
            "grant_type": {"type": "string", "enum": ["client_credentials"]},
            "auth_id": {"type": "string"}, "auth_secret": {"type": "string"}}},
        "Token": {"type": "object", "properties": {
            "access_token": {"type": "string"}, "token_type": {"type": "string", "enum": ["Bearer"]},
            "expires_in": {"type": "integer"}}},
        "Ack": {"type": "object", "properties": {"status": {"type": "integer", "enum": [200]}, "success": {"type": "boolean", "enum": [true]}}},
        "Error": {"type": "object", "required": ["status", "success", "error", "message"], "properties": {
            "status": {"type": "integer"}, "success": {"type": "boolean", "enum": [false]},
            "error": {"type": "string", "enum": ["malformed", "unauthorized", "forbidden", "not_found", "precondition_failed", "invalid_data", "unavailable", "internal"]},
            "message": {"type": "string"}}},
        "PositionInput": {"description": "a LOCATION_RAW_UPDATE event, a LOCATION_BATCH_UPDATE, a compact {MAC, Position, Timestamp?} object, or an array of these",
            "oneOf": [{"type": "object"}, {"type": "array", "items": {"type": "object"}}]},
        "PositionAnswer": {"type": "object", "properties": {
            "accepted": {"type": "integer"},
            "rejected": {"type": "array", "items": {"type": "object", "properties": {"index": {"type": "integer"}, "message": {"type": "string"}}}}}},
        "Health": {"type": "object"},
        "OpenApi": {"type": "object"},
        "Metrics": {"type": "string"},
    })
}

/// The document served at `/v3/openapi.json`, listing `routes`.
pub fn document(routes: &[Route]) -> Value {
    let mut paths: Map<String, Value> = Map::new();
    for route in routes {
        let mut op = json!({
            "operationId": route.id,
            "summary": route.summary,
            "responses": {
                "200": if route.response == "Metrics" {
                    json!({"description": "OK", "content": {"text/plain": {"schema": schema_ref("Metrics")}}})
                } else {
                    json!({"description": "OK", "content": {"application/json": {"schema": schema_ref(route.response)}}})
                },
            }
        });
        if route.body.is_some() {
            op["responses"]["400"] =
                error_response("malformed: body is not JSON or not the JSON type the operation takes");
            op["responses"]["408"] = error_response("the body did not arrive within the body timeout");
            op["responses"]["413"] =
                error_response("body larger than the configured limit, or with longer lists than any operation takes");
        }
        if route.body.is_some() || matches!(route.authority, Some(Authority::Write | Authority::Admin)) {
            op["responses"]["422"] = error_response("invalid data: types, ranges, references, geometry");
        }
        if !matches!(route.op, Op::Live | Op::OpenApi | Op::Metrics | Op::Token) {
            op["responses"]["503"] = error_response("the store or the bus cannot be reached");
        }
        if matches!(route.op, Op::DeleteZones | Op::UpdateZones | Op::ActivateZones | Op::DeactivateZones) {
            op["responses"]["404"] = error_response("a listed zone does not exist; nothing changed");
        }
        if route.op == Op::Token {
            op["responses"]["401"] = error_response("unknown client or wrong secret");
        }
        if let Some(authority) = route.authority {
            op["security"] = json!([{"apiKey": []}, {"bearer": []}]);
            op["x-authority"] = json!(authority.as_str());
            op["responses"]["401"] = error_response("missing or bad credentials");
            op["responses"]["403"] = error_response(match authority {
                Authority::Read => "too little authority (read needed)",
                Authority::Write => "too little authority (write needed)",
                Authority::Admin => "too little authority (admin needed)",
            });
        } else {
            op["security"] = json!([]);
        }
        let params: Vec<Value> = route
            .path
            .split('/')
            .filter_map(|seg| seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
            .map(|name| json!({"name": name, "in": "path", "required": true, "schema": {"type": "string", "format": "uuid"}, "description": "case-insensitive"}))
            .collect();
        if !params.is_empty() {
            op["parameters"] = Value::Array(params.clone());
            op["responses"]["404"] = error_response("unknown ID");
        }
        if matches!(
            route.op,
            Op::UpdateZone | Op::DeleteZone | Op::AddDevices | Op::RemoveDevices | Op::LockZone | Op::UnlockZone
        ) {
            let if_match = json!({"name": "If-Match", "in": "header", "required": false, "schema": {"type": "string"},
                "description": "the zone's ETag as read (or *); a zone at another version is 412 and nothing changes"});
            if let Some(params) = op["parameters"].as_array_mut() {
                params.push(if_match);
            }
            op["responses"]["412"] = error_response("If-Match names another version than the zone is at");
        }
        if matches!(
            route.op,
            Op::GetZone
                | Op::CreateZone
                | Op::UpdateZone
                | Op::AddDevices
                | Op::RemoveDevices
                | Op::LockZone
                | Op::UnlockZone
        ) {
            op["responses"]["200"]["headers"] = json!({"ETag": {"schema": {"type": "string"},
                "description": "the zone's version, quoted; send it back in If-Match"}});
        }
        if let Some(body) = route.body {
            op["requestBody"] =
                json!({"required": true, "content": {"application/json": {"schema": schema_ref(body)}}});
        }
        let entry = paths.entry(route.path.to_owned()).or_insert_with(|| json!({}));
        entry[route.method.as_str().to_ascii_lowercase()] = op;
    }
    json!({
        "openapi": "3.1.0",
        "info": {"title": "zonecast config API", "version": env!("CARGO_PKG_VERSION"),
                 "description": "Zones, settings, device radii, MQTT connections and certificate profiles of zonecast."},
        "paths": paths,
        "components": {
            "securitySchemes": {
                "apiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
                "bearer": {"type": "http", "scheme": "bearer", "description": "token from POST /v3/auth/token"}
            },
            "schemas": schemas(),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_schema_reference_resolves() {
        let doc = document(crate::routes::ROUTES);
        let text = doc.to_string();
        let schemas = doc["components"]["schemas"].as_object().unwrap();
        for part in text.split("#/components/schemas/").skip(1) {
            let name: String = part.chars().take_while(|c| c.is_ascii_alphanumeric()).collect();
            assert!(schemas.contains_key(&name), "unresolved schema {name}");
        }
    }
}
