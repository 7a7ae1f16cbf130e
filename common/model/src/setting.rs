//! Zone settings: names, words for a dashboard, defaults, ranges, and the effective values.

use std::fmt;
use std::str::FromStr;

use schemars::{JsonSchema, Schema};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::Invalid;
use crate::fields::Fields;

/// The zone settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
pub enum SettingName {
    /// AlertLevel from which an entry raises a site-wide alarm.
    SiteAlarmMinLevel,
    /// AlertLevel from which an entry raises a device-level alarm.
    DeviceAlarmMinLevel,
    /// Distance outside a zone before a device counts as out.
    ExitToleranceMeters,
    /// Time a device must stay out before the exit fires.
    ExitDelayMs,
    /// Time a device must stay in before the entry fires.
    EntryDelayMs,
    /// Silence after which a device exits all zones; 0 = never.
    DeviceTimeoutSeconds,
    /// Radius of devices without their own.
    DefaultDeviceRadiusMeters,
    /// Silence after which a device is reported offline; 0 = never.
    DeviceOfflineSeconds,
}

/// A setting's value: integer settings hold whole numbers, the metre settings any number.
pub type SettingValue = f64;

impl SettingName {
    /// Every setting, in the order the API lists them.
    pub const ALL: [SettingName; 8] = [
        Self::SiteAlarmMinLevel,
        Self::DeviceAlarmMinLevel,
        Self::ExitToleranceMeters,
        Self::ExitDelayMs,
        Self::EntryDelayMs,
        Self::DeviceTimeoutSeconds,
        Self::DefaultDeviceRadiusMeters,
        Self::DeviceOfflineSeconds,
    ];

    /// The name as it appears in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::SiteAlarmMinLevel => "SiteAlarmMinLevel",
            Self::DeviceAlarmMinLevel => "DeviceAlarmMinLevel",
            Self::ExitToleranceMeters => "ExitToleranceMeters",
            Self::ExitDelayMs => "ExitDelayMs",
            Self::EntryDelayMs => "EntryDelayMs",
            Self::DeviceTimeoutSeconds => "DeviceTimeoutSeconds",
            Self::DefaultDeviceRadiusMeters => "DefaultDeviceRadiusMeters",
            Self::DeviceOfflineSeconds => "DeviceOfflineSeconds",
        }
    }

    /// A short label a dashboard can show.
    pub fn display_name(self) -> &'static str {
        match self {
            Self::SiteAlarmMinLevel => "Site alarm from alert level",
            Self::DeviceAlarmMinLevel => "Device alarm from alert level",
            Self::ExitToleranceMeters => "Exit tolerance (m)",
            Self::ExitDelayMs => "Exit delay (ms)",
            Self::EntryDelayMs => "Entry delay (ms)",
            Self::DeviceTimeoutSeconds => "Device timeout (s)",
            Self::DefaultDeviceRadiusMeters => "Default device radius (m)",
            Self::DeviceOfflineSeconds => "Device offline after (s)",
        }
    }

    /// What the setting does, in plain words.
    pub fn description(self) -> &'static str {
        match self {
            Self::SiteAlarmMinLevel => {
                "An entry into a zone whose AlertLevel is at least this raises a site-wide alarm (SITE_ALARM)."
            }
            Self::DeviceAlarmMinLevel => {
                "An entry into a zone whose AlertLevel is at least this, and below the site alarm level, \
                 raises a device-level alarm (DEVICE_ALARM and an alarm command to the device)."
            }
            Self::ExitToleranceMeters => "How far outside a zone a device must be before it counts as out.",
            Self::ExitDelayMs => "How long a device must stay out of a zone before its exit fires.",
            Self::EntryDelayMs => "How long a device must stay inside a zone before its entry fires.",
            Self::DeviceTimeoutSeconds => {
                "Silence after which a device leaves every zone it is in (Reason timeout); 0 means never."
            }
            Self::DefaultDeviceRadiusMeters => {
                "Radius of the ball around a device that has no radius of its own; it collides with a zone \
                 when that ball touches the zone."
            }
            Self::DeviceOfflineSeconds => {
                "Silence after which a device is reported offline (DEVICE_OFFLINE), and online again \
                 (DEVICE_ONLINE) with its next position; 0 means never."
            }
        }
    }

    /// The value that applies while the setting is not active.
    pub fn default_value(self) -> SettingValue {
        match self {
            Self::SiteAlarmMinLevel => 8.0,
            Self::DeviceAlarmMinLevel => 4.0,
            _ => 0.0,
        }
    }

    /// Accepted range and whether only whole numbers are accepted. Alarm levels have no upper
    /// bound, like AlertLevel itself.
    fn range(self) -> (f64, f64, bool) {
        match self {
            Self::SiteAlarmMinLevel | Self::DeviceAlarmMinLevel => (0.0, f64::INFINITY, true),
            Self::ExitToleranceMeters => (0.0, 1000.0, false),
            Self::ExitDelayMs | Self::EntryDelayMs => (0.0, 3_600_000.0, true),
            Self::DeviceTimeoutSeconds | Self::DeviceOfflineSeconds => (0.0, 604_800.0, true),
            Self::DefaultDeviceRadiusMeters => (0.0, crate::radius::MAX_RADIUS, false),
        }
    }

    /// Checks `v` against this setting's range; the error is the rule broken.
    pub fn check(self, v: f64) -> Result<SettingValue, String> {
        let (min, max, whole) = self.range();
        if !v.is_finite() || v < min || v > max {
            return Err(if max.is_finite() {
                format!("must be between {min} and {max}, got {v}")
            } else {
                format!("must be {min} or more, got {v}")
            });
        }
        if whole && v.fract() != 0.0 {
            return Err(format!("must be a whole number, got {v}"));
        }
        Ok(v)
    }
}

impl FromStr for SettingName {
    type Err = ();

    fn from_str(s: &str) -> Result<Self, ()> {
        Self::ALL.into_iter().find(|n| n.as_str().eq_ignore_ascii_case(s)).ok_or(())
    }
}

impl fmt::Display for SettingName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One written setting, as stored: its value and whether it is in force.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Setting {
    /// Which setting.
    pub name: SettingName,
    /// The written value (kept while inactive).
    pub value: SettingValue,
    /// Whether `value` applies; false means the default applies.
    pub active: bool,
}

fn format_value(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 { format!("{}", v as i64) } else { v.to_string() }
}

impl Setting {
    /// Reads the body of a setting write (`PUT /v3/modules/zones/settings`) as
    /// [`SettingInput::read`] does, then checks `SettingValue` against the setting's range.
    /// `Err(None)` means the SettingName is unknown (404); `Err(Some(_))` invalid data.
    /// `SettingValue` may be left out only when `IsActive` is false (the default is kept).
    pub fn parse(value: &Value) -> Result<Self, Option<Invalid>> {
        let SettingInput { name, value, active } = SettingInput::read(value)?;
        let active = active.unwrap_or(true);
        let raw = match value {
            Some(NumberOrNumericText(v)) => v,
            None if !active => name.default_value(),
            None => return Err(Some(Invalid::new("SettingValue", "is required"))),
        };
        let value = name.check(raw).map_err(|m| Some(Invalid::new("SettingValue", m)))?;
        Ok(Self { name, value, active })
    }

    /// JSON of the settings listing: `SettingValue` as text, the words a dashboard shows, and the
    /// default for reference.
    pub fn to_json(&self) -> SettingView {
        SettingView {
            name: self.name,
            value: format_value(self.value),
            description: self.name.description(),
            display_name: self.name.display_name(),
            active: self.active,
            default_value: format_value(self.name.default_value()),
        }
    }

    /// The settings listing (`GET /v3/modules/zones/settings`): every setting, the written ones
    /// with their values.
    pub fn listing(written: &[Setting]) -> Vec<Setting> {
        SettingName::ALL
            .into_iter()
            .map(|name| {
                written.iter().find(|s| s.name == name).copied().unwrap_or(Setting {
                    name,
                    value: name.default_value(),
                    active: false,
                })
            })
            .collect()
    }
}

/// A setting as the settings listing shows it.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "PascalCase")]
#[schemars(rename = "Setting", deny_unknown_fields)]
pub struct SettingView {
    /// Which setting.
    #[serde(rename = "SettingName")]
    pub name: SettingName,
    /// The written value as text (the default while none was written).
    #[serde(rename = "SettingValue")]
    pub value: String,
    /// What the setting does.
    pub description: &'static str,
    /// A label for dashboards.
    pub display_name: &'static str,
    /// Whether `SettingValue` is in force; false means the default applies.
    #[serde(rename = "IsActive")]
    pub active: bool,
    /// The value that applies while the setting is not active, as text.
    pub default_value: String,
}

/// The body of a setting write as [`Setting::parse`] reads it. An unknown `SettingName` is 404;
/// `SettingValue` (a number, or a string holding one) must lie in the setting's range and may
/// be left out only with `IsActive` false. `Description`, `DisplayName` and unknown fields are
/// ignored.
#[derive(JsonSchema)]
#[schemars(
    transform = setting_rules,
    description = "One setting to write. An unknown SettingName is 404. SettingValue (a number, or a string holding one) must lie in the setting's range, and may be left out only with IsActive false. Description, DisplayName and unknown fields are ignored."
)]
pub struct SettingInput {
    /// Which setting (read in any case).
    #[schemars(rename = "SettingName")]
    name: SettingName,
    /// The value.
    #[schemars(rename = "SettingValue")]
    value: Option<NumberOrNumericText>,
    /// Whether the value is in force (default true).
    #[schemars(rename = "IsActive")]
    active: Option<bool>,
}

/// A number, or a string holding one (surrounding white space allowed).
struct NumberOrNumericText(f64);

impl JsonSchema for NumberOrNumericText {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        "NumberOrNumericText".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> Schema {
        schemars::json_schema!({"anyOf": [
            {"type": "number"},
            {"type": "string", "pattern": "^\\s*[+-]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][+-]?[0-9]+)?\\s*$"},
        ]})
    }
}

impl SettingInput {
    /// Reads the fields of a setting write, each failure naming its field: `Err(None)` when the
    /// `SettingName` is unknown (404), `Err(Some(_))` for invalid data.
    fn read(value: &Value) -> Result<Self, Option<Invalid>> {
        let f = Fields::of(value, "").map_err(Some)?;
        let name =
            f.string("SettingName").map_err(Some)?.ok_or_else(|| Some(Invalid::new("SettingName", "is required")))?;
        let name: SettingName = name.parse().map_err(|()| None)?;
        let active = f.bool("IsActive").map_err(Some)?;
        let value = match f.raw("SettingValue") {
            None => None,
            Some(Value::Number(n)) => Some(NumberOrNumericText(n.as_f64().unwrap_or(f64::NAN))),
            Some(Value::String(s)) => Some(NumberOrNumericText(
                s.trim()
                    .parse::<f64>()
                    .map_err(|_| Some(Invalid::new("SettingValue", format!("'{s}' is not a number"))))?,
            )),
            Some(other) => {
                return Err(Some(Invalid::new(
                    "SettingValue",
                    format!("must be a number, got {}", crate::fields::type_name(other)),
                )));
            }
        };
        Ok(Self { name, value, active })
    }
}

/// Adds each setting's range (for numeric values) and when `SettingValue` is required.
fn setting_rules(schema: &mut Schema) {
    let mut rules: Vec<Value> = SettingName::ALL
        .iter()
        .map(|name| {
            let (min, max, whole) = name.range();
            let mut number = json!({"minimum": min});
            if max.is_finite() {
                number["maximum"] = json!(max);
            }
            if whole {
                number["multipleOf"] = json!(1);
            }
            json!({
                "if": {"properties": {"SettingName": {"const": name.as_str()}}, "required": ["SettingName"]},
                "then": {"properties": {"SettingValue": {"if": {"type": "number"}, "then": number}}},
            })
        })
        .collect();
    // Without `IsActive: false`, a SettingValue other than null is required.
    rules.push(json!({
        "if": {"properties": {"IsActive": {"const": false}}, "required": ["IsActive"]},
        "else": {"required": ["SettingValue"], "properties": {"SettingValue": {"not": {"type": "null"}}}},
    }));
    schema.insert("allOf".into(), Value::Array(rules));
}

/// The values in force, for the evaluator.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    values: [f64; 8],
}

impl Settings {
    /// Effective values from the written settings: active ones override the defaults.
    pub fn from_written(written: &[Setting]) -> Self {
        let mut values = SettingName::ALL.map(SettingName::default_value);
        for s in written.iter().filter(|s| s.active) {
            if let Some(i) = SettingName::ALL.iter().position(|n| *n == s.name) {
                values[i] = s.value;
            }
        }
        Self { values }
    }

    /// The value in force for `name`.
    pub fn get(&self, name: SettingName) -> f64 {
        SettingName::ALL.iter().position(|n| *n == name).map_or(name.default_value(), |i| self.values[i])
    }
}

impl Default for Settings {
    fn default() -> Self {
        Self::from_written(&[])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_parse_numbers_and_numeric_strings_within_range() {
        let s = Setting::parse(&json!({"SettingName": "ExitDelayMs", "SettingValue": "500"})).unwrap();
        assert_eq!((s.name, s.value, s.active), (SettingName::ExitDelayMs, 500.0, true));
        let e = Setting::parse(&json!({"SettingName": "ExitDelayMs", "SettingValue": 1.5})).unwrap_err().unwrap();
        assert_eq!(e.to_string(), "SettingValue: must be a whole number, got 1.5");
        let e =
            Setting::parse(&json!({"SettingName": "ExitToleranceMeters", "SettingValue": "far"})).unwrap_err().unwrap();
        assert_eq!(e.to_string(), "SettingValue: 'far' is not a number");
        assert_eq!(Setting::parse(&json!({"SettingName": "Nope", "SettingValue": 1})), Err(None));
    }

    #[test]
    fn alarm_levels_have_no_upper_bound_but_stay_whole_and_non_negative() {
        let s = Setting::parse(&json!({"SettingName": "SiteAlarmMinLevel", "SettingValue": 1e19})).unwrap();
        assert_eq!(s.value, 1e19);
        let e = Setting::parse(&json!({"SettingName": "SiteAlarmMinLevel", "SettingValue": -1})).unwrap_err().unwrap();
        assert_eq!(e.to_string(), "SettingValue: must be 0 or more, got -1");
        let e =
            Setting::parse(&json!({"SettingName": "DeviceAlarmMinLevel", "SettingValue": 4.5})).unwrap_err().unwrap();
        assert_eq!(e.to_string(), "SettingValue: must be a whole number, got 4.5");
    }

    #[test]
    fn every_setting_has_words_for_a_dashboard() {
        for name in SettingName::ALL {
            let json = Setting::listing(&[]).into_iter().find(|s| s.name == name).unwrap().to_json();
            assert!(!json.display_name.is_empty(), "{name}");
            assert!(json.description.len() > 20, "{name}");
        }
    }

    #[test]
    fn inactive_settings_leave_the_default_in_force() {
        let written = [Setting { name: SettingName::SiteAlarmMinLevel, value: 3.0, active: false }];
        assert_eq!(Settings::from_written(&written).get(SettingName::SiteAlarmMinLevel), 8.0);
        let written = [Setting { name: SettingName::SiteAlarmMinLevel, value: 3.0, active: true }];
        assert_eq!(Settings::from_written(&written).get(SettingName::SiteAlarmMinLevel), 3.0);
    }
}
