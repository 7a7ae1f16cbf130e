#![allow(clippy::unwrap_used)]

use super::*;

fn schemas(doc: &Value) -> &Map<String, Value> {
    doc["components"]["schemas"].as_object().unwrap()
}

#[test]
fn every_schema_reference_resolves() {
    let doc = document(crate::routes::ROUTES, &Limits::DEFAULT);
    let text = doc.to_string();
    for part in text.split("#/components/schemas/").skip(1) {
        let name: String = part.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        assert!(schemas(&doc).contains_key(&name), "unresolved schema {name}");
    }
}

#[test]
fn the_limits_in_force_replace_every_mark() {
    let doc = document(crate::routes::ROUTES, &Limits::DEFAULT);
    assert!(!doc.to_string().contains(zonecast_model::schema::LIMIT_MARK), "a limit mark was left");
    let s = schemas(&doc);
    let l = Limits::DEFAULT;
    assert_eq!(s["ZoneInput"]["properties"]["DeviceList"]["maxItems"], json!(l.device_list));
    assert_eq!(s["ZoneInput"]["properties"]["ZoneActions"]["maxItems"], json!(l.zone_actions));
    assert_eq!(s["ZoneInput"]["properties"]["GeometryData"]["maxItems"], json!(l.polygon_vertices + 3));
    assert_eq!(s["RadiusMap"]["maxProperties"], json!(l.radii_per_write));
    assert_eq!(s["ConnectionInput"]["properties"]["topics"]["maxItems"], json!(l.topics_per_connection));
    assert_eq!(s["NewZones"]["maxItems"], json!(l.batch_zones));
    assert_eq!(s["DeviceImport"]["maxItems"], json!(l.devices_per_import));
    let message = doc.to_string().contains(&format!("\"maxLength\":{}", l.info_message_chars));
    assert!(message, "the info-event message limit is stated");
}

#[test]
fn configured_limits_are_the_ones_stated() {
    let limits = Limits {
        device_list: 7,
        zone_actions: 8,
        polygon_vertices: 11,
        batch_zones: 17,
        radii_per_write: 13,
        devices_per_import: 19,
        info_message_chars: 5,
        topics_per_connection: 3,
        ..Limits::DEFAULT
    };
    let doc = document(crate::routes::ROUTES, &limits);
    let s = schemas(&doc);
    assert_eq!(s["ZoneInput"]["properties"]["DeviceList"]["maxItems"], json!(7));
    assert_eq!(s["Macs"]["maxItems"], json!(7));
    assert_eq!(s["ZoneInput"]["properties"]["ZoneActions"]["maxItems"], json!(8));
    assert_eq!(s["ZoneInput"]["properties"]["GeometryData"]["maxItems"], json!(14));
    assert_eq!(s["ConnectionInput"]["properties"]["topics"]["maxItems"], json!(3));
    assert_eq!(s["RadiusMap"]["maxProperties"], json!(13));
    assert_eq!(s["ZoneUpdates"]["maxItems"], json!(17));
    assert_eq!(s["DeviceImport"]["maxItems"], json!(19));
    assert!(doc.to_string().contains("\"maxLength\":5"));
}

#[test]
fn requests_and_responses_agree_on_the_types_they_share() {
    let limits = StatedLimits(Limits::DEFAULT);
    let mut requests = generator(Contract::Deserialize, limits);
    let mut responses = generator(Contract::Serialize, limits);
    for route in crate::routes::ROUTES {
        if let Some(body) = route.body {
            body(&mut requests);
        }
        (route.response)(&mut responses);
    }
    responses.subschema_for::<ErrorBody>();
    let requests = requests.take_definitions(true);
    let responses = responses.take_definitions(true);
    for (name, schema) in &requests {
        if let Some(other) = responses.get(name) {
            assert_eq!(schema, other, "{name} differs between requests and responses");
        }
    }
}

#[test]
fn each_geometry_type_states_its_row_count() {
    let doc = document(crate::routes::ROUTES, &Limits::DEFAULT);
    let rules = schemas(&doc)["ZoneInput"]["allOf"].as_array().unwrap().clone();
    for kind in zonecast_model::GeometryType::ALL {
        let rule = rules.iter().find(|r| r["if"]["properties"]["GeometryType"]["const"] == kind.as_str()).unwrap();
        let rows = &rule["then"]["properties"]["GeometryData"];
        match kind.fixed_rows() {
            Some(n) => assert_eq!((&rows["minItems"], &rows["maxItems"]), (&json!(n), &json!(n)), "{kind}"),
            None => assert_eq!(rows["minItems"], json!(zonecast_model::GeometryType::MIN_POLYGON_ROWS)),
        }
    }
}

#[test]
fn read_routes_cannot_be_forbidden_and_write_routes_can() {
    let doc = document(crate::routes::ROUTES, &Limits::DEFAULT);
    let zones = &doc["paths"]["/v3/modules/zones"];
    assert!(zones["get"]["responses"]["403"].is_null());
    assert!(zones["post"]["responses"]["403"].is_object());
    assert!(zones["post"]["responses"]["400"].is_object());
    assert!(
        doc["paths"]["/readyz"]["get"]["responses"]["503"]["content"]["application/json"]["schema"]["$ref"]
            .as_str()
            .unwrap()
            .ends_with("/Health")
    );
}

#[test]
fn device_routes_name_their_mac_and_the_import_takes_csv_too() {
    let doc = document(crate::routes::ROUTES, &Limits::DEFAULT);
    let device = &doc["paths"]["/v3/devices/{MAC}"];
    let parameter = &device["get"]["parameters"][0];
    assert_eq!(
        (&parameter["name"], &parameter["schema"]["pattern"]),
        (&json!("MAC"), &json!(zonecast_model::MAC_PATTERN))
    );
    assert!(device["put"]["responses"]["404"].is_null(), "a PUT creates");
    assert!(device["delete"]["responses"]["404"].is_object());
    let import = &doc["paths"]["/v3/devices/import"]["post"]["requestBody"]["content"];
    assert!(import["application/json"]["schema"]["$ref"].as_str().unwrap().ends_with("/DeviceImport"));
    assert_eq!(import["text/csv"]["schema"]["type"], "string");
    let listing = doc["paths"]["/v3/devices"]["get"]["parameters"].as_array().unwrap();
    let names: Vec<&str> = listing.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["group", "q", "limit", "cursor"]);
}
