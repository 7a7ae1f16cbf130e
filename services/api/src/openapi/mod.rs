//! The OpenAPI 3.1 document of this API. Paths, methods, authorities and statuses come from the
//! route table ([`crate::routes`]), so the document lists exactly the routes the server
//! answers; request and response schemas come from the Rust types the handlers read and write.
//! Requests are described as they are read (the `Deserialize` side of schemars), responses as
//! they are written (the `Serialize` side); the limits in force ([`Limits`]) go into both.

mod limits;

use schemars::generate::{Contract, SchemaSettings};
use schemars::transform::Transform;
use schemars::{Schema, SchemaGenerator};
use serde_json::{Map, Value, json};
use zonecast_http::http::ErrorBody;
use zonecast_http::ops::Readiness;
use zonecast_model::Limits;
use zonecast_runtime::Authority;

use limits::StatedLimits;

use crate::routes::{Op, Route};

/// The document served at `/v3/openapi.json`: `routes`, with the `limits` the server enforces.
pub fn document(routes: &[Route], limits: &Limits) -> Value {
    let limits = StatedLimits(*limits);
    let mut requests = generator(Contract::Deserialize, limits);
    let mut responses = generator(Contract::Serialize, limits);
    let mut paths: Map<String, Value> = Map::new();
    for route in routes {
        let operation = operation(route, &mut requests, &mut responses, limits);
        let item = paths.entry(route.path.to_owned()).or_insert_with(|| json!({}));
        item[route.method.as_str().to_ascii_lowercase()] = operation;
    }
    json!({
        "openapi": "3.1.0",
        "info": {"title": "zonecast config API", "version": env!("CARGO_PKG_VERSION"),
                 "description": "Zones, settings, device radii, named devices, MQTT connections and certificate profiles of zonecast."},
        "paths": paths,
        "components": {
            "securitySchemes": {
                "apiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
                "bearer": {"type": "http", "scheme": "bearer", "description": "token from POST /v3/auth/token"}
            },
            "schemas": components(requests, responses),
        }
    })
}

/// A generator whose references point into `#/components/schemas`.
fn generator(contract: Contract, limits: StatedLimits) -> SchemaGenerator {
    SchemaSettings::draft2020_12()
        .with(|settings| {
            settings.definitions_path = "/components/schemas".into();
            settings.meta_schema = None;
            settings.contract = contract;
        })
        .with_transform(limits)
        .into_generator()
}

/// The named schemas of both sides. A type both sides use has one schema (tested); the request
/// side's is kept.
fn components(mut requests: SchemaGenerator, mut responses: SchemaGenerator) -> Map<String, Value> {
    let mut schemas = requests.take_definitions(true);
    for (name, schema) in responses.take_definitions(true) {
        schemas.entry(name).or_insert(schema);
    }
    schemas
}

/// The schema `of` makes with `generator`, with the limits in force where it is inline.
fn body_schema(
    of: fn(&mut SchemaGenerator) -> Schema,
    generator: &mut SchemaGenerator,
    mut limits: StatedLimits,
) -> Value {
    let mut schema = of(generator);
    limits.transform(&mut schema);
    schema.to_value()
}

fn json_content(schema: Value) -> Value {
    json!({"application/json": {"schema": schema}})
}

/// Operations that change one zone: they honour `If-Match` (412) and answer with its `ETag`.
fn versioned(op: Op) -> bool {
    matches!(op, Op::UpdateZone | Op::DeleteZone | Op::AddDevices | Op::RemoveDevices | Op::LockZone | Op::UnlockZone)
}

/// Operations answering with a zone's `ETag`.
fn with_etag(op: Op) -> bool {
    matches!(
        op,
        Op::GetZone
            | Op::CreateZone
            | Op::UpdateZone
            | Op::AddDevices
            | Op::RemoveDevices
            | Op::LockZone
            | Op::UnlockZone
    )
}

/// Every failure status `route` can answer besides those of its readiness, each with what it
/// means there: the statuses of the HTTP edge (credentials, body limits), of its body, of the
/// items it names and of the store and bus it uses.
fn error_statuses(route: &Route) -> Vec<(u16, String)> {
    let mut out: Vec<(u16, String)> = Vec::new();
    let has_params = route.path.contains('{');
    if route.op == Op::ImportDevices {
        out.push((400, "malformed: the body is not JSON, or not an array; or, as text/csv, not UTF-8".into()));
    } else if route.body.is_some() {
        out.push((400, "malformed: the body is not JSON, or not the JSON type the operation takes".into()));
    }
    if route.op == Op::EventStream {
        out.push((400, "malformed: filter is not JSON, or Last-Event-ID is not an event's id".into()));
    }
    if matches!(route.op, Op::ListDevices | Op::ListAlarms) {
        out.push((400, "malformed: cursor is not a NextCursor of this route".into()));
    }
    if route.op == Op::EventHistory {
        out.push((400, "malformed: filter is not JSON, or cursor is not a NextCursor of this route".into()));
    }
    match route.authority {
        Some(authority) => {
            out.push((401, "missing or bad credentials".into()));
            if authority != Authority::Read {
                out.push((403, format!("too little authority ({} needed)", authority.as_str())));
            }
        }
        None if route.op == Op::Token => out.push((401, "unknown client or wrong secret".into())),
        None => {}
    }
    let not_found = match route.op {
        Op::DeleteZones | Op::ActivateZones | Op::DeactivateZones => {
            Some("a listed zone does not exist; nothing changed")
        }
        Op::UpdateZones => Some("a listed zone (by ZoneID or Name) does not exist; nothing changed"),
        Op::PutSetting => Some("no setting has this SettingName"),
        Op::PutDevice => None,
        Op::GetDevice | Op::DeleteDevice => Some("no device has this MAC"),
        Op::GetAlarm | Op::AcknowledgeAlarm | Op::ResolveAlarm => Some("no alarm has this AlarmID"),
        _ if has_params => Some("no item has this ID"),
        _ => None,
    };
    if let Some(message) = not_found {
        out.push((404, message.into()));
    }
    // The edge reads every request's body within the limits, whether the route takes one or not.
    out.push((408, "the body did not arrive within the body timeout".into()));
    if matches!(route.op, Op::AcknowledgeAlarm | Op::ResolveAlarm) {
        out.push((409, "the alarm is in a state this change cannot start from; nothing changed".into()));
    }
    if versioned(route.op) {
        out.push((412, "If-Match names another version than the zone is at; nothing changed".into()));
    }
    out.push((
        413,
        "the body is larger than the configured limit, or holds longer lists than any operation takes".into(),
    ));
    if route.body.is_some()
        || matches!(
            route.op,
            Op::EventStream
                | Op::PositionStream
                | Op::EventHistory
                | Op::ZoneVisits
                | Op::ZoneOccupancy
                | Op::ListDevices
                | Op::ListAlarms
                | Op::GetAlarm
        )
        || matches!(route.authority, Some(Authority::Write | Authority::Admin))
    {
        out.push((422, "invalid data: types, ranges, references, geometry".into()));
    }
    if !matches!(route.op, Op::Live | Op::Health | Op::OpenApi | Op::Metrics | Op::Token) {
        out.push((503, "the store or the bus cannot be reached".into()));
    }
    out
}

/// The query and header parameters of the live event stream.
fn stream_parameters() -> Vec<Value> {
    let list = |name: &str, description: &str| json!({"name": name, "in": "query", "required": false, "schema": {"type": "string"}, "description": description});
    vec![
        list(
            "type",
            "event types, comma-separated (ZONE_ENTER, ZONE_EXIT, ZONE_INFO, ZONE_DWELL_EXCEEDED, ZONE_OCCUPANCY_EXCEEDED, ZONE_OCCUPANCY_BELOW, ZONE_OCCUPANCY_RESTORED, SITE_ALARM, DEVICE_ALARM, DEVICE_OFFLINE, DEVICE_ONLINE, ALARM_ACKNOWLEDGED, ALARM_RESOLVED)",
        ),
        list("zone", "ZoneIDs, comma-separated"),
        list("mac", "MACs, comma-separated, `:` or `-` in any case"),
        list("filter", "a FilterChain as JSON (as in MQTT connection topics), URL-encoded"),
        list("access_token", "a token from POST /v3/auth/token, for clients that cannot send headers (EventSource)"),
        json!({"name": "Last-Event-ID", "in": "header", "required": false, "schema": {"type": "string", "pattern": "^[0-9]+$"},
               "description": "the id of the last event received: the stream resumes after it"}),
    ]
}

/// The query parameters of the live position stream.
fn position_stream_parameters() -> Vec<Value> {
    vec![
        json!({"name": "mac", "in": "query", "required": false, "schema": {"type": "string"},
               "description": "MACs, comma-separated, `:` or `-` in any case: only these devices"}),
        json!({"name": "access_token", "in": "query", "required": false, "schema": {"type": "string"},
               "description": "a token from POST /v3/auth/token, for clients that cannot send headers (EventSource)"}),
    ]
}

/// The query parameters of the event history.
fn history_parameters() -> Vec<Value> {
    let text = |name: &str, description: &str| json!({"name": name, "in": "query", "required": false, "schema": {"type": "string"}, "description": description});
    vec![
        time_parameter(
            "from",
            false,
            "RFC 3339: events stored at or after it (default: the oldest kept); not used with cursor",
        ),
        time_parameter("to", false, "RFC 3339: events stored before it (default: now)"),
        text(
            "type",
            "event types, comma-separated (ZONE_ENTER, ZONE_EXIT, ZONE_INFO, ZONE_DWELL_EXCEEDED, ZONE_OCCUPANCY_EXCEEDED, ZONE_OCCUPANCY_BELOW, ZONE_OCCUPANCY_RESTORED, SITE_ALARM, DEVICE_ALARM, DEVICE_OFFLINE, DEVICE_ONLINE, ALARM_ACKNOWLEDGED, ALARM_RESOLVED)",
        ),
        text("zone", "ZoneIDs, comma-separated"),
        text("mac", "MACs, comma-separated, `:` or `-` in any case"),
        json!({"name": "filter", "in": "query", "required": false,
               "content": {"application/json": {"schema": {"type": "array", "items": {"type": "object"}}}},
               "description": "a FilterChain as JSON (as in MQTT connection topics), URL-encoded"}),
        json!({"name": "limit", "in": "query", "required": false,
               "schema": {"type": "integer", "minimum": 1, "maximum": crate::handlers::history::MAX_LIMIT, "default": crate::handlers::history::DEFAULT_LIMIT},
               "description": "most events in the page"}),
        json!({"name": "cursor", "in": "query", "required": false, "schema": {"type": "string", "pattern": "^[0-9a-fA-F]{16}$"},
               "description": "the NextCursor of the previous page"}),
    ]
}

/// The query parameters of the device listing.
fn device_list_parameters() -> Vec<Value> {
    use crate::handlers::devices::{DEFAULT_LIMIT, MAX_LIMIT};
    vec![
        json!({"name": "group", "in": "query", "required": false, "schema": {"type": "string"},
               "description": "only the devices of this group (exactly); empty: only those without a group"}),
        json!({"name": "q", "in": "query", "required": false, "schema": {"type": "string"},
               "description": "only the devices whose name or MAC contains this text, in any case (`-` matches the `:` of a MAC)"}),
        json!({"name": "limit", "in": "query", "required": false,
               "schema": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT},
               "description": "most devices in the page"}),
        json!({"name": "cursor", "in": "query", "required": false, "schema": {"type": "string", "pattern": "^[0-9a-fA-F]{16}$"},
               "description": "the NextCursor of the previous page"}),
    ]
}

/// The query parameters of the alarm listing.
fn alarm_list_parameters() -> Vec<Value> {
    use crate::handlers::alarms::{DEFAULT_LIMIT, MAX_LIMIT};
    vec![
        json!({"name": "state", "in": "query", "required": false, "schema": {"type": "string"},
               "description": "states, comma-separated: open, acknowledged, resolved (default: every state)"}),
        json!({"name": "mac", "in": "query", "required": false, "schema": {"type": "string", "pattern": zonecast_model::MAC_PATTERN},
               "description": "only the alarms of this device (`:` or `-`, any case)"}),
        json!({"name": "zone", "in": "query", "required": false, "schema": {"type": "string", "format": "uuid"},
               "description": "only the alarms of this zone"}),
        json!({"name": "type", "in": "query", "required": false,
               "schema": {"type": "string", "enum": zonecast_model::EventType::ALARMS.iter().map(|t| t.as_str()).collect::<Vec<_>>()},
               "description": "only the alarms of this type"}),
        json!({"name": "active", "in": "query", "required": false, "schema": {"type": "string", "enum": ["true", "false"]},
               "description": "only the alarms whose condition holds (true) or has cleared (false)"}),
        json!({"name": "limit", "in": "query", "required": false,
               "schema": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT},
               "description": "most alarms in the page"}),
        json!({"name": "cursor", "in": "query", "required": false, "schema": {"type": "string", "pattern": "^[0-9a-fA-F]{48}$"},
               "description": "the NextCursor of the previous page"}),
    ]
}

/// A path parameter of `path`: a MAC, or else a UUID.
fn path_parameter(name: &str) -> Value {
    if name == "AlarmID" {
        json!({"name": name, "in": "path", "required": true, "schema": {"type": "string", "format": "uuid"},
               "description": "the EventID of the event that raised the alarm, any case; text that is not a UUID is 422"})
    } else if name == "MAC" {
        json!({"name": name, "in": "path", "required": true, "schema": {"type": "string", "pattern": zonecast_model::MAC_PATTERN},
               "description": "six hex octets separated by `:` or `-`, any case (`:` may be sent as `%3A`); text that is not a MAC names no device (404; 422 for PUT)"})
    } else {
        json!({"name": name, "in": "path", "required": true, "schema": {"type": "string", "format": "uuid"},
               "description": "case-insensitive; text that is not a UUID names no item (404)"})
    }
}

/// The body of an import: a JSON array of devices, or CSV.
fn import_content(json_schema: Value) -> Value {
    json!({
        "application/json": {"schema": json_schema},
        "text/csv": {"schema": {"type": "string",
            "description": "RFC 4180 CSV, UTF-8: a header row naming MAC and Name (any case), optionally Group, Kind and further columns, which become Properties (text); then one row per device"}},
    })
}

/// A query parameter holding an RFC 3339 time.
fn time_parameter(name: &str, required: bool, description: &str) -> Value {
    json!({"name": name, "in": "query", "required": required, "schema": {"type": "string", "format": "date-time"}, "description": description})
}

/// The query parameters of a zone's visits, and with `step` of its occupancy.
fn report_parameters(step: bool) -> Vec<Value> {
    let mut out = vec![
        time_parameter(
            "from",
            step,
            if step {
                "RFC 3339: the first step's start"
            } else {
                "RFC 3339: the window's start (default: the oldest event kept)"
            },
        ),
        time_parameter("to", false, "RFC 3339: the window's end, excluded (default: now)"),
    ];
    if step {
        let (min, max) = crate::handlers::visits::STEP_SECONDS;
        out.push(json!({"name": "step", "in": "query", "required": true, "schema": {"type": "integer", "minimum": min, "maximum": max},
            "description": format!("seconds per step; at most {} steps per answer", crate::handlers::visits::MAX_STEPS)}));
    }
    out
}

/// The OpenAPI operation of `route`.
fn operation(
    route: &Route,
    requests: &mut SchemaGenerator,
    responses: &mut SchemaGenerator,
    limits: StatedLimits,
) -> Value {
    let answer = body_schema(route.response, responses, limits);
    let mut ok = match route.op {
        Op::Metrics => json!({"description": "OK", "content": {"text/plain": {"schema": answer}}}),
        Op::EventStream | Op::PositionStream => {
            json!({"description": "OK: the stream, open until the client or the server ends it",
            "content": {"text/event-stream": {"schema": answer}}})
        }
        Op::ZoneVisits | Op::ZoneOccupancy => {
            json!({"description": "OK: JSON, or CSV (header row, RFC 4180) with Accept: text/csv",
            "content": {"application/json": {"schema": answer}, "text/csv": {"schema": {"type": "string"}}}})
        }
        _ => json!({"description": "OK", "content": json_content(answer)}),
    };
    if with_etag(route.op) {
        ok["headers"] = json!({"ETag": {"schema": {"type": "string"},
            "description": "the zone's version, quoted; send it back in If-Match"}});
    }
    let mut statuses = Map::new();
    statuses.insert("200".into(), ok);
    let error = body_schema(zonecast_http::routes::schema_of::<ErrorBody>, responses, limits);
    for (status, description) in error_statuses(route) {
        statuses
            .insert(status.to_string(), json!({"description": description, "content": json_content(error.clone())}));
    }
    if route.op == Op::Health {
        let health = body_schema(zonecast_http::routes::schema_of::<Readiness>, responses, limits);
        statuses.insert(
            "503".into(),
            json!({"description": "the store or the bus is not ready", "content": json_content(health)}),
        );
    }
    let mut op = json!({"operationId": route.id, "summary": route.summary, "responses": statuses});
    match route.authority {
        Some(authority) => {
            op["security"] = json!([{"apiKey": []}, {"bearer": []}]);
            op["x-authority"] = json!(authority.as_str());
        }
        None => op["security"] = json!([]),
    }
    let mut parameters: Vec<Value> = route
        .path
        .split('/')
        .filter_map(|seg| seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
        .map(path_parameter)
        .collect();
    if versioned(route.op) {
        parameters.push(json!({"name": "If-Match", "in": "header", "required": false, "schema": {"type": "string"},
            "description": "the zone's ETag as read (or *); a zone at another version is 412 and nothing changes"}));
    }
    match route.op {
        Op::EventStream => parameters.extend(stream_parameters()),
        Op::EventHistory => parameters.extend(history_parameters()),
        Op::ZoneVisits => parameters.extend(report_parameters(false)),
        Op::ZoneOccupancy => parameters.extend(report_parameters(true)),
        Op::ListDevices => parameters.extend(device_list_parameters()),
        Op::ListAlarms => parameters.extend(alarm_list_parameters()),
        _ => {}
    }
    if route.op == Op::PositionStream {
        parameters.extend(position_stream_parameters());
    }
    if !parameters.is_empty() {
        op["parameters"] = Value::Array(parameters);
    }
    if let Some(body) = route.body {
        let schema = body_schema(body, requests, limits);
        let content = if route.op == Op::ImportDevices { import_content(schema) } else { json_content(schema) };
        // A change of an alarm's state takes its note optionally, and with it the whole body.
        let required = !matches!(route.op, Op::AcknowledgeAlarm | Op::ResolveAlarm);
        op["requestBody"] = json!({"required": required, "content": content});
    }
    op
}

#[cfg(test)]
mod tests;
