//! Named devices: the registry's record of a tracked device (a name, a group, a kind and free
//! properties under its MAC), and how a client's body becomes one. Tracking needs no record:
//! the registry only names and groups devices for the people who look at them.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::fields::{Fields, type_name};
use crate::{Invalid, Mac};

/// Longest `Name`, `Group` or `Kind`, in characters (as a zone's `Name`).
pub const MAX_DEVICE_TEXT_CHARS: usize = 256;

/// Most members of a device's `Properties`.
pub const MAX_PROPERTIES: usize = 100;

/// Most bytes a device's `Properties` take as JSON text.
pub const MAX_PROPERTIES_BYTES: usize = 16 * 1024;

/// The `Kind` values the documentation suggests; any other text is accepted too.
pub const DEVICE_KINDS: [&str; 3] = ["person", "vehicle", "asset"];

/// Largest `OfflineSeconds`: a week, as DeviceOfflineSeconds.
pub const MAX_OFFLINE_SECONDS: i64 = 604_800;

/// A named device as stored and returned. `Name` and `Properties` mean what the `name` and
/// `properties` of an omlox trackable mean.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "PascalCase")]
#[schemars(deny_unknown_fields)]
pub struct Device {
    /// The device, upper-case with `:`.
    #[serde(rename = "MAC")]
    pub mac: Mac,
    /// What people call it.
    pub name: String,
    /// The group it belongs to, if any (a team, a fleet, a site area).
    pub group: Option<String>,
    /// What it is (`person`, `vehicle`, `asset` or any other text), if said.
    pub kind: Option<String>,
    /// Free properties; `{}` when none were given.
    pub properties: Map<String, Value>,
    /// How long this device may stay silent before it is reported offline, in place of the
    /// site's DeviceOfflineSeconds; `None` to follow the site.
    pub offline_seconds: Option<u64>,
}

/// The body of `PUT /v3/devices/{MAC}`: every field of a device but its MAC, which the path
/// names. A write replaces the whole record.
#[derive(Debug, Clone, PartialEq, JsonSchema)]
#[schemars(
    rename_all = "PascalCase",
    description = "A device record; it replaces the stored one whole. Name is required; Group and Kind \
                   may be null, and an empty or blank one counts as null. Text is trimmed and may not \
                   hold control characters. Unknown fields are ignored."
)]
pub struct DeviceInput {
    /// What people call the device (1 to 256 characters once trimmed).
    #[schemars(length(min = 1, max = MAX_DEVICE_TEXT_CHARS), regex(pattern = "\\S"))]
    pub name: String,
    /// The group it belongs to (at most 256 characters); null for none.
    #[schemars(length(max = MAX_DEVICE_TEXT_CHARS))]
    pub group: Option<String>,
    /// What it is, free text (at most 256 characters); `person`, `vehicle` and `asset` are the
    /// suggested values. Null for unsaid.
    #[schemars(length(max = MAX_DEVICE_TEXT_CHARS), extend("examples" = DEVICE_KINDS))]
    pub kind: Option<String>,
    /// Free properties: at most 100 members, 16 KiB as JSON. Null for none.
    #[schemars(with = "Option<Properties>")]
    pub properties: Option<Map<String, Value>>,
    /// Seconds of silence after which this device is reported offline, in place of the site's
    /// DeviceOfflineSeconds (1 to 604800); null to follow the site.
    #[schemars(range(min = 1, max = MAX_OFFLINE_SECONDS))]
    pub offline_seconds: Option<u64>,
}

/// `Properties` as a request states them.
struct Properties;

impl JsonSchema for Properties {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Properties".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "object", "maxProperties": MAX_PROPERTIES})
    }
}

/// One element of a JSON import (`POST /v3/devices/import`): the device's MAC and its record.
#[derive(Debug, Clone, PartialEq, JsonSchema)]
#[schemars(description = "A device to import: its MAC and the fields of DeviceInput.")]
pub struct NewDevice {
    /// The device (`:` or `-`, any case).
    #[schemars(rename = "MAC")]
    pub mac: Mac,
    /// Its record.
    #[schemars(flatten)]
    pub input: DeviceInput,
}

impl DeviceInput {
    /// Reads a device body: `Name` required; `Group`, `Kind` and `Properties` optional. Unknown
    /// fields (and `MAC`, which the path or the import element names) are ignored.
    pub fn parse(value: &Value) -> Result<Self, Invalid> {
        let f = Fields::of(value, "")?;
        let name = text(f.string("Name")?, "Name")?.ok_or_else(|| Invalid::new("Name", "is required"))?;
        let group = text(f.string("Group")?, "Group")?;
        let kind = text(f.string("Kind")?, "Kind")?;
        let properties = match f.raw("Properties") {
            None => None,
            Some(Value::Object(map)) => Some(properties(map)?),
            Some(other) => {
                return Err(Invalid::new("Properties", format!("must be an object, got {}", type_name(other))));
            }
        };
        let offline_seconds = match f.raw("OfflineSeconds") {
            None => None,
            Some(v) => Some(
                crate::fields::int_in(v, 1, MAX_OFFLINE_SECONDS)
                    .map(|n| n.unsigned_abs())
                    .map_err(|m| Invalid::new("OfflineSeconds", m))?,
            ),
        };
        Ok(Self { name, group, kind, properties, offline_seconds })
    }

    /// The device record of `mac` this input makes.
    pub fn into_device(self, mac: Mac) -> Device {
        Device {
            mac,
            name: self.name,
            group: self.group,
            kind: self.kind,
            properties: self.properties.unwrap_or_default(),
            offline_seconds: self.offline_seconds,
        }
    }
}

impl NewDevice {
    /// Reads an import element: `MAC` required, then the fields as [`DeviceInput::parse`]
    /// reads them.
    pub fn parse(value: &Value) -> Result<Self, Invalid> {
        let f = Fields::of(value, "")?;
        let mac = f.string("MAC")?.ok_or_else(|| Invalid::new("MAC", "is required"))?;
        let mac = mac.parse::<Mac>().map_err(|e| Invalid::new("MAC", e))?;
        Ok(Self { mac, input: DeviceInput::parse(value)? })
    }

    /// The device record it makes.
    pub fn into_device(self) -> Device {
        self.input.into_device(self.mac)
    }
}

/// A text field trimmed: `None` when absent, null, empty or blank; refused when longer than
/// [`MAX_DEVICE_TEXT_CHARS`] or holding control characters. A required field reads its
/// `None` as missing.
pub fn text(raw: Option<&str>, field: &str) -> Result<Option<String>, Invalid> {
    let Some(trimmed) = raw.map(str::trim).filter(|t| !t.is_empty()) else { return Ok(None) };
    if trimmed.chars().nth(MAX_DEVICE_TEXT_CHARS).is_some() {
        return Err(Invalid::new(field, format!("must be 1 to {MAX_DEVICE_TEXT_CHARS} characters")));
    }
    if trimmed.chars().any(char::is_control) {
        return Err(Invalid::new(field, "must not contain control characters"));
    }
    Ok(Some(trimmed.to_owned()))
}

/// `Properties` within [`MAX_PROPERTIES`] members and [`MAX_PROPERTIES_BYTES`] as JSON.
pub fn properties(map: &Map<String, Value>) -> Result<Map<String, Value>, Invalid> {
    if map.len() > MAX_PROPERTIES {
        return Err(Invalid::new(
            "Properties",
            format!("must have at most {MAX_PROPERTIES} members, got {}", map.len()),
        ));
    }
    // A map of JSON values always encodes; its length is what is bounded.
    let bytes = serde_json::to_vec(map).map_or(usize::MAX, |v| v.len());
    if bytes > MAX_PROPERTIES_BYTES {
        return Err(Invalid::new("Properties", format!("must take at most {MAX_PROPERTIES_BYTES} bytes as JSON")));
    }
    Ok(map.clone())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    #[test]
    fn a_device_keeps_its_trimmed_text_and_blank_optional_text_counts_as_none() {
        let input =
            DeviceInput::parse(&json!({"Name": "  Forklift 3 ", "Group": " ", "Kind": "vehicle", "MAC": 5})).unwrap();
        let device = input.into_device("aa-bb-cc-dd-ee-01".parse().unwrap());
        assert_eq!(
            serde_json::to_value(&device).unwrap(),
            json!({"MAC": "AA:BB:CC:DD:EE:01", "Name": "Forklift 3", "Group": null, "Kind": "vehicle",
                   "Properties": {}, "OfflineSeconds": null})
        );
    }

    #[test]
    fn every_rule_names_its_field() {
        let refused = |v: Value| DeviceInput::parse(&v).unwrap_err().to_string();
        assert_eq!(refused(json!({})), "Name: is required");
        assert_eq!(refused(json!({"Name": "  "})), "Name: is required");
        assert_eq!(refused(json!({"Name": 5})), "Name: must be a string, got a number");
        assert_eq!(refused(json!({"Name": "n".repeat(257)})), "Name: must be 1 to 256 characters");
        assert!(DeviceInput::parse(&json!({"Name": "n".repeat(256)})).is_ok());
        assert_eq!(
            refused(json!({"Name": "n", "OfflineSeconds": 0})),
            "OfflineSeconds: must be between 1 and 604800, got 0"
        );
        assert_eq!(
            refused(json!({"Name": "n", "OfflineSeconds": "60"})),
            "OfflineSeconds: must be an integer, got a string"
        );
        assert_eq!(
            DeviceInput::parse(&json!({"Name": "n", "OfflineSeconds": 600})).unwrap().offline_seconds,
            Some(600)
        );
        assert_eq!(refused(json!({"Name": "a\u{0}b"})), "Name: must not contain control characters");
        assert_eq!(refused(json!({"Name": "a", "Group": []})), "Group: must be a string, got an array");
        assert_eq!(refused(json!({"Name": "a", "Kind": "k".repeat(300)})), "Kind: must be 1 to 256 characters");
        assert_eq!(refused(json!({"Name": "a", "Properties": [1]})), "Properties: must be an object, got an array");
        let many: Map<String, Value> = (0..=MAX_PROPERTIES).map(|i| (format!("p{i}"), json!(i))).collect();
        assert_eq!(
            refused(json!({"Name": "a", "Properties": many})),
            "Properties: must have at most 100 members, got 101"
        );
        let big = json!({"Name": "a", "Properties": {"note": "x".repeat(MAX_PROPERTIES_BYTES)}});
        assert_eq!(refused(big), "Properties: must take at most 16384 bytes as JSON");
    }

    #[test]
    fn an_import_element_needs_a_mac() {
        let refused = |v: Value| NewDevice::parse(&v).unwrap_err().to_string();
        assert_eq!(refused(json!({"Name": "a"})), "MAC: is required");
        assert!(refused(json!({"MAC": "nope", "Name": "a"})).starts_with("MAC: 'nope' is not a MAC address"));
        let device = NewDevice::parse(&json!({"MAC": "00-aa-bb-cc-dd-ee", "Name": "a"})).unwrap().into_device();
        assert_eq!(device.mac.as_str(), "00:AA:BB:CC:DD:EE");
    }
}
