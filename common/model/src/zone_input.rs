//! `ZoneInput`: the zone fields a client sends, checked one by one, and how they become a
//! [`ZoneSpec`] on create or merge into one on update.

use chrono::{DateTime, Utc};
use schemars::{JsonSchema, Schema};
use serde_json::{Value, json};
use uuid::Uuid;
use zonecast_geometry::{GeometryType, Vec3};

use crate::action::ZoneActionInput;
use crate::fields::{Fields, type_name};
use crate::mac::MacOrEmpty;
use crate::schema::{TimeOrEmpty, unbounded};
use crate::zone::GeometryTypeName;
use crate::{InclusionPolicy, Invalid, Limits, Mac, ZoneAction, ZoneSpec};

/// Longest accepted zone name, in characters.
const MAX_NAME_CHARS: usize = 256;

/// Largest accepted `MaxDwellSeconds`: 30 days.
pub const MAX_DWELL_SECONDS: f64 = 2_592_000.0;

/// Largest accepted `MaxOccupancy` and `MinOccupancy`.
pub const MAX_OCCUPANCY: i64 = 1_000_000;

/// The supplied fields of a zone, each already of the right type and range. Absent fields are
/// `None`; cross-field rules (geometry, time window, locks) are checked by [`ZoneInput::create`]
/// and [`ZoneInput::update`], within the [`Limits`] it was parsed with.
///
/// Its JSON Schema is the body of a zone update: every field optional, `null` counting as
/// absent, unknown fields ignored. A supplied GeometryData must have the row count of the
/// GeometryType (the one sent, else the zone's); the rules beyond counts (positive sizes,
/// axes neither zero nor parallel, a simple planar polygon, StartTime before StopTime when
/// IsTimed) are answered with 422.
#[derive(Debug, Clone, PartialEq, JsonSchema)]
#[schemars(
    rename_all = "PascalCase",
    transform = rows_by_geometry_type,
    description = "The fields of a zone update; only supplied fields change, null counts as absent, unknown fields are ignored. GeometryData must have the row count of the GeometryType (the one sent, else the zone's). Sizes must be positive, axes neither zero nor parallel, a polygon simple and planar, and StartTime before StopTime when IsTimed: otherwise 422."
)]
pub struct ZoneInput {
    /// `ZoneID` as sent, read only where it selects a zone (batch update); create and update
    /// ignore it, whatever it holds.
    #[schemars(skip)]
    pub zone_id: Option<String>,
    /// `Name`.
    #[schemars(length(max = MAX_NAME_CHARS))]
    pub name: Option<String>,
    /// `GeometryType`.
    #[schemars(with = "Option<GeometryTypeName>")]
    pub geometry_type: Option<GeometryType>,
    /// `GeometryData`: rows of three finite numbers.
    #[schemars(length(min = 2), extend("x-limit" = {"maxItems": "geometry_rows"}))]
    pub geometry_data: Option<Vec<Vec3>>,
    /// `AlertLevel`: 0 is the lowest priority, with no upper bound (default 0).
    #[schemars(range(min = 0), transform = unbounded)]
    pub alert_level: Option<u64>,
    /// `Active` (default true).
    pub active: Option<bool>,
    /// `InclusionPolicy` (default `all`; read in any case).
    pub inclusion_policy: Option<InclusionPolicy>,
    /// `DeviceList`: the exceptions to the inclusion policy (a MAC listed twice counts once).
    #[schemars(extend("x-limit" = {"maxItems": "device_list"}))]
    pub device_list: Option<Vec<Mac>>,
    /// `ZoneActions`.
    #[schemars(with = "Option<Vec<ZoneActionInput>>", extend("x-limit" = {"maxItems": "zone_actions"}))]
    pub zone_actions: Option<Vec<ZoneAction>>,
    /// `IsTimed` (default false).
    pub is_timed: Option<bool>,
    /// `StartTime`; `Some(None)` when sent as null or "" (clears it).
    #[schemars(with = "Option<TimeOrEmpty>")]
    pub start_time: Option<Option<DateTime<Utc>>>,
    /// `StopTime`; `Some(None)` when sent as null or "".
    #[schemars(with = "Option<TimeOrEmpty>")]
    pub stop_time: Option<Option<DateTime<Utc>>>,
    /// `MobileOriginSource`; `Some(None)` when sent as null or "" (makes the zone static).
    #[schemars(with = "Option<MacOrEmpty>")]
    pub mobile_origin_source: Option<Option<Mac>>,
    /// `MaxDwellSeconds`; `Some(None)` when sent as null or 0 (no dwell limit).
    #[schemars(with = "Option<f64>", range(min = 0.0, max = MAX_DWELL_SECONDS))]
    pub max_dwell_seconds: Option<Option<f64>>,
    /// `MaxOccupancy`; `Some(None)` when sent as null or 0 (no limit).
    #[schemars(with = "Option<u64>", range(min = 0, max = MAX_OCCUPANCY))]
    pub max_occupancy: Option<Option<u64>>,
    /// `MinOccupancy`; `Some(None)` when sent as null or 0 (no minimum).
    #[schemars(with = "Option<u64>", range(min = 0, max = MAX_OCCUPANCY))]
    pub min_occupancy: Option<Option<u64>>,
    /// `AlarmsNeedAcknowledgement` (default true): false resolves the zone's alarms as their
    /// condition clears.
    pub alarms_need_acknowledgement: Option<bool>,
    /// [`Limits::polygon_vertices`] at parse time, for the geometry check of create and update.
    #[schemars(skip)]
    polygon_vertices: usize,
}

/// Adds the row count of each `GeometryType` to the schema of a zone body: when the body names
/// the type, GeometryData must have that many rows (a polygon at least
/// [`GeometryType::MIN_POLYGON_ROWS`]).
fn rows_by_geometry_type(schema: &mut Schema) {
    let rules: Vec<Value> = GeometryType::ALL
        .iter()
        .map(|kind| {
            let rows = match kind.fixed_rows() {
                Some(n) => json!({"minItems": n, "maxItems": n}),
                None => json!({"minItems": GeometryType::MIN_POLYGON_ROWS}),
            };
            json!({
                "if": {"properties": {"GeometryType": {"const": kind.as_str()}}, "required": ["GeometryType"]},
                "then": {"properties": {"GeometryData": rows}},
            })
        })
        .collect();
    schema.insert("allOf".into(), Value::Array(rules));
}

/// The body of a zone create (one zone, or each of a batch): a [`ZoneInput`] that names its
/// GeometryType and GeometryData.
#[derive(Debug, JsonSchema)]
#[schemars(
    transform = geometry_required,
    description = "A new zone: the fields of ZoneInput, with GeometryType and GeometryData required."
)]
pub struct NewZone(#[schemars(with = "ZoneInput")] ZoneSpec);

fn geometry_required(schema: &mut Schema) {
    let input = std::mem::take(schema);
    *schema = schemars::json_schema!({
        "allOf": [input],
        "required": ["GeometryType", "GeometryData"],
        "properties": {"GeometryType": {"type": "string"}, "GeometryData": {"type": "array"}},
    });
}

impl NewZone {
    /// Reads a zone create body: its fields as [`ZoneInput::parse`] reads them, then the rules
    /// of [`ZoneInput::create`]. The zone gets its identity from [`NewZone::with_id`].
    pub fn parse(value: &Value, limits: &Limits) -> Result<Self, Invalid> {
        ZoneInput::parse(value, limits)?.create(Uuid::nil()).map(Self)
    }

    /// Seals every `http-request` secret sent in clear with `seal`; the API does this before
    /// anything is stored.
    pub fn seal_secrets<E>(&mut self, seal: impl FnMut(&crate::Secret) -> Result<String, E>) -> Result<(), E> {
        seal_actions(&mut self.0.zone_actions, seal)
    }

    /// The zone to store under `id`.
    pub fn with_id(self, id: Uuid) -> ZoneSpec {
        ZoneSpec { id, ..self.0 }
    }
}

/// One element of a batch zone update: a [`ZoneInput`] that selects its zone by
/// `ZoneID`, or by a `Name` exactly one zone has.
#[derive(Debug, JsonSchema)]
#[schemars(
    transform = zone_selected,
    description = "One change of a batch update: the fields of ZoneInput and the zone it changes, by ZoneID or by a Name exactly one zone has."
)]
pub struct ZoneUpdate(pub ZoneInput);

fn zone_selected(schema: &mut Schema) {
    let input = std::mem::take(schema);
    *schema = schemars::json_schema!({
        "allOf": [input],
        "properties": {"ZoneID": {"type": ["string", "null"], "format": "uuid", "description": "selects the zone"}},
        "anyOf": [
            {"required": ["ZoneID"], "properties": {"ZoneID": {"type": "string"}}},
            {"required": ["Name"], "properties": {"Name": {"type": "string"}}},
        ],
    });
}

impl ZoneUpdate {
    /// Reads one element of a batch update as [`ZoneInput::parse`] does, after checking that
    /// a `ZoneID` other than `null` is text (text that is not a UUID names no zone, and is
    /// answered as such when the zone is looked up).
    pub fn parse(value: &Value, limits: &Limits) -> Result<Self, Invalid> {
        if let Some(id) = value.get("ZoneID").filter(|id| !id.is_null() && !id.is_string()) {
            return Err(Invalid::new("ZoneID", format!("must be a zone ID string, got {id}")));
        }
        ZoneInput::parse(value, limits).map(Self)
    }
}

/// Seals every `http-request` secret of `actions` sent in clear with `seal`.
fn seal_actions<E>(
    actions: &mut [ZoneAction],
    mut seal: impl FnMut(&crate::Secret) -> Result<String, E>,
) -> Result<(), E> {
    for action in actions {
        action.seal_secret(&mut seal)?;
    }
    Ok(())
}

impl ZoneInput {
    /// Seals every `http-request` secret sent in clear with `seal`; the API does this before
    /// anything is stored.
    pub fn seal_secrets<E>(&mut self, seal: impl FnMut(&crate::Secret) -> Result<String, E>) -> Result<(), E> {
        seal_actions(self.zone_actions.as_deref_mut().unwrap_or_default(), seal)
    }

    /// Reads a `ZoneInput` object, checking each field's type and range and each list against
    /// `limits` before reading its elements. Unknown fields, and the read-only `SiteID`,
    /// `CollidingDevices` and `IsGeometryLocked`, are ignored.
    pub fn parse(value: &Value, limits: &Limits) -> Result<Self, Invalid> {
        let f = Fields::of(value, "")?;
        let zone_id = f.raw("ZoneID").map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned));
        let name = f.string("Name")?.map(str::to_owned);
        if let Some(n) = &name
            && n.chars().count() > MAX_NAME_CHARS
        {
            return Err(Invalid::new("Name", format!("must be at most {MAX_NAME_CHARS} characters")));
        }
        let geometry_type = f
            .string("GeometryType")?
            .map(|s| s.parse::<GeometryType>().map_err(|e| Invalid::new("GeometryType", e.to_string())))
            .transpose()?;
        let geometry_data = f.array("GeometryData")?.map(|rows| parse_rows(rows, limits)).transpose()?;
        let inclusion_policy = match f.string("InclusionPolicy")? {
            None => None,
            Some(s) if s.eq_ignore_ascii_case("all") => Some(InclusionPolicy::All),
            Some(s) if s.eq_ignore_ascii_case("none") => Some(InclusionPolicy::None),
            Some(other) => {
                return Err(Invalid::new("InclusionPolicy", format!("must be 'all' or 'none', got '{other}'")));
            }
        };
        let device_list =
            f.array("DeviceList")?.map(|l| parse_macs(l, "DeviceList", limits.device_list)).transpose()?;
        let zone_actions = f
            .array("ZoneActions")?
            .map(|items| {
                check_len(items, "ZoneActions", limits.zone_actions)?;
                items
                    .iter()
                    .enumerate()
                    .map(|(i, a)| ZoneAction::parse(a, limits).map_err(|e| e.within(&format!("ZoneActions[{i}]"))))
                    .collect::<Result<Vec<_>, _>>()
            })
            .transpose()?;
        let mobile_origin_source = if f.has("MobileOriginSource") {
            match f.string("MobileOriginSource")? {
                None | Some("") => Some(None),
                Some(s) => Some(Some(s.parse::<Mac>().map_err(|e| Invalid::new("MobileOriginSource", e))?)),
            }
        } else {
            None
        };
        let max_dwell_seconds = match f.raw("MaxDwellSeconds") {
            None if f.has("MaxDwellSeconds") => Some(None),
            None => None,
            Some(v) => {
                let seconds = crate::fields::number_in(v, 0.0, MAX_DWELL_SECONDS)
                    .map_err(|m| Invalid::new("MaxDwellSeconds", m))?;
                Some((seconds > 0.0).then_some(seconds))
            }
        };
        let occupancy = |name: &str| -> Result<Option<Option<u64>>, Invalid> {
            match f.raw(name) {
                None if f.has(name) => Ok(Some(None)),
                None => Ok(None),
                Some(v) => {
                    let n = crate::fields::int_in(v, 0, MAX_OCCUPANCY).map_err(|m| Invalid::new(name, m))?;
                    Ok(Some(u64::try_from(n).ok().filter(|n| *n > 0)))
                }
            }
        };
        Ok(Self {
            zone_id,
            name,
            geometry_type,
            geometry_data,
            alert_level: f.unbounded_uint("AlertLevel")?,
            active: f.bool("Active")?,
            inclusion_policy,
            device_list,
            zone_actions,
            is_timed: f.bool("IsTimed")?,
            start_time: time_field(&f, "StartTime")?,
            stop_time: time_field(&f, "StopTime")?,
            mobile_origin_source,
            max_dwell_seconds,
            max_occupancy: occupancy("MaxOccupancy")?,
            min_occupancy: occupancy("MinOccupancy")?,
            alarms_need_acknowledgement: f.bool("AlarmsNeedAcknowledgement")?,
            polygon_vertices: limits.polygon_vertices,
        })
    }

    /// A new zone with identity `id` from this input: GeometryType and GeometryData are
    /// required, everything else takes its default.
    pub fn create(self, id: Uuid) -> Result<ZoneSpec, Invalid> {
        let geometry_type = self.geometry_type.ok_or_else(|| Invalid::new("GeometryType", "is required"))?;
        let geometry_data = self.geometry_data.clone().ok_or_else(|| Invalid::new("GeometryData", "is required"))?;
        let base = ZoneSpec {
            id,
            name: String::new(),
            geometry_type,
            geometry_data,
            alert_level: 0,
            active: true,
            inclusion_policy: InclusionPolicy::All,
            device_list: Vec::new(),
            zone_actions: Vec::new(),
            is_timed: false,
            start_time: None,
            stop_time: None,
            mobile_origin_source: None,
            is_geometry_locked: false,
            max_dwell_seconds: None,
            max_occupancy: None,
            min_occupancy: None,
            alarms_need_acknowledgement: true,
            version: 0,
        };
        self.merge(base)
    }

    /// `base` with the supplied fields changed; only supplied fields change. A geometry change
    /// of a locked zone is invalid.
    pub fn update(self, base: &ZoneSpec) -> Result<ZoneSpec, Invalid> {
        if base.is_geometry_locked {
            if self.geometry_type.is_some_and(|t| t != base.geometry_type) {
                return Err(Invalid::new("GeometryType", "cannot change while the zone's geometry is locked"));
            }
            if self.geometry_data.as_ref().is_some_and(|d| *d != base.geometry_data) {
                return Err(Invalid::new("GeometryData", "cannot change while the zone's geometry is locked"));
            }
        }
        self.merge(base.clone())
    }

    fn merge(self, mut z: ZoneSpec) -> Result<ZoneSpec, Invalid> {
        let geometry_changed = self.geometry_type.is_some() || self.geometry_data.is_some();
        if let Some(v) = self.name {
            z.name = v;
        }
        if let Some(v) = self.geometry_type {
            z.geometry_type = v;
        }
        if let Some(v) = self.geometry_data {
            z.geometry_data = v;
        }
        if let Some(v) = self.alert_level {
            z.alert_level = v;
        }
        if let Some(v) = self.active {
            z.active = v;
        }
        if let Some(v) = self.inclusion_policy {
            z.inclusion_policy = v;
        }
        if let Some(v) = self.device_list {
            z.device_list = v;
        }
        if let Some(mut v) = self.zone_actions {
            crate::action::settle_secrets(&mut v, &z.zone_actions);
            z.zone_actions = v;
        }
        if let Some(v) = self.is_timed {
            z.is_timed = v;
        }
        if let Some(v) = self.start_time {
            z.start_time = v;
        }
        if let Some(v) = self.stop_time {
            z.stop_time = v;
        }
        if let Some(v) = self.mobile_origin_source {
            z.mobile_origin_source = v;
        }
        if let Some(v) = self.max_dwell_seconds {
            z.max_dwell_seconds = v;
        }
        if let Some(v) = self.max_occupancy {
            z.max_occupancy = v;
        }
        if let Some(v) = self.min_occupancy {
            z.min_occupancy = v;
        }
        if let Some(v) = self.alarms_need_acknowledgement {
            z.alarms_need_acknowledgement = v;
        }
        if let (Some(min), Some(max)) = (z.min_occupancy, z.max_occupancy)
            && min > max
        {
            return Err(Invalid::new("MinOccupancy", format!("must be at most MaxOccupancy ({max}), got {min}")));
        }
        if geometry_changed {
            zonecast_geometry::validate_within(z.geometry_type, &z.geometry_data, self.polygon_vertices).map_err(
                |e| match e.row {
                    Some(row) => Invalid::new(format!("GeometryData[{row}]"), e.message),
                    None => Invalid::new("GeometryData", e.message),
                },
            )?;
        }
        if z.is_timed {
            match (z.start_time, z.stop_time) {
                (Some(start), Some(stop)) if start < stop => {}
                (Some(_), Some(_)) => return Err(Invalid::new("StopTime", "must be after StartTime")),
                (None, _) => return Err(Invalid::new("StartTime", "is required when IsTimed is true")),
                (_, None) => return Err(Invalid::new("StopTime", "is required when IsTimed is true")),
            }
        }
        Ok(z)
    }
}

fn check_len(items: &[Value], field: &str, most: usize) -> Result<(), Invalid> {
    if items.len() > most {
        return Err(Invalid::new(field, format!("must have at most {most} entries, got {}", items.len())));
    }
    Ok(())
}

/// The body of DeviceList additions and removals: device MACs (a MAC listed twice counts once).
#[derive(Debug, JsonSchema)]
#[schemars(extend("x-limit" = {"maxItems": "device_list"}))]
pub struct Macs(pub Vec<Mac>);

impl Macs {
    /// Reads a JSON array of at most [`Limits::device_list`] MACs: normalised, each once; errors
    /// name the element (`[2]: …`).
    pub fn parse(items: &[Value], limits: &Limits) -> Result<Self, Invalid> {
        parse_macs(items, "", limits.device_list).map(Self)
    }
}

/// Reads a JSON array of at most `most` MACs, naming the bad element.
fn parse_macs(items: &[Value], field: &str, most: usize) -> Result<Vec<Mac>, Invalid> {
    check_len(items, field, most)?;
    let mut macs: Vec<Mac> = Vec::with_capacity(items.len());
    let mut seen = std::collections::HashSet::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let mac = match item {
            Value::String(s) => s.parse::<Mac>().map_err(|e| Invalid::new(format!("{field}[{i}]"), e))?,
            other => {
                return Err(Invalid::new(
                    format!("{field}[{i}]"),
                    format!("must be a string, got {}", type_name(other)),
                ));
            }
        };
        if seen.insert(mac.clone()) {
            macs.push(mac);
        }
    }
    Ok(macs)
}

fn parse_rows(rows: &[Value], limits: &Limits) -> Result<Vec<Vec3>, Invalid> {
    let most = limits.geometry_rows();
    if rows.len() > most {
        return Err(Invalid::new(
            "GeometryData",
            format!(
                "must have at most {most} rows (a polygon of at most {} vertices), got {}",
                limits.polygon_vertices,
                rows.len()
            ),
        ));
    }
    rows.iter()
        .enumerate()
        .map(|(i, row)| {
            let bad = || Invalid::new(format!("GeometryData[{i}]"), "must be an array of three finite numbers");
            let arr = row.as_array().filter(|a| a.len() == 3).ok_or_else(bad)?;
            let mut out = [0.0; 3];
            for (slot, v) in out.iter_mut().zip(arr) {
                *slot = v.as_f64().filter(|f| f.is_finite()).ok_or_else(bad)?;
            }
            Ok(out)
        })
        .collect()
}

fn time_field(f: &Fields<'_>, name: &str) -> Result<Option<Option<DateTime<Utc>>>, Invalid> {
    if !f.has(name) {
        return Ok(None);
    }
    match f.string(name)? {
        None | Some("") => Ok(Some(None)),
        Some(s) => DateTime::parse_from_rfc3339(s)
            .map(|t| Some(Some(t.with_timezone(&Utc))))
            .map_err(|_| Invalid::new(name, format!("'{s}' is not an ISO 8601 time (e.g. 2026-11-21T10:00:00.000Z)"))),
    }
}

#[cfg(test)]
mod tests;
