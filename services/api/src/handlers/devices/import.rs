//! `POST /v3/devices/import`: many devices created or replaced at once, from a JSON array of
//! devices (each with its `MAC`) or from CSV (`Content-Type: text/csv`: a header row naming
//! `MAC` and `Name`, and optionally `Group`, `Kind` and further columns, which become
//! `Properties`). Every device is read and checked first, then all are written in one
//! transaction: all or nothing. A refusal names the element (`[i]`) or the CSV line, and the
//! field.

use std::collections::HashMap;

use bytes::Bytes;
use serde::Serialize;
use serde_json::{Map, Value};
use warp::http::{HeaderMap, header};
use warp::reply::Response;
use zonecast_model::{Device, Invalid, Limits, Mac, NewDevice};

use super::csv::{self, Record};
use crate::context::Context;
use crate::error::ApiError;
use crate::{body, reply};

/// The JSON body of an import: the devices, each with its MAC.
#[derive(schemars::JsonSchema)]
#[schemars(extend("x-limit" = {"maxItems": "devices_per_import"}))]
pub struct DeviceImport(Vec<NewDevice>);

/// What an import answers.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ImportAnswer {
    /// Devices created or replaced.
    #[serde(rename = "Imported")]
    pub imported: usize,
}

/// The CSV columns with a field of their own; any other column is a property.
const COLUMNS: [&str; 5] = ["MAC", "Name", "Group", "Kind", "OfflineSeconds"];

/// `POST /v3/devices/import`.
pub async fn import(ctx: &Context, headers: &HeaderMap, body: &Bytes) -> Result<Response, ApiError> {
    let devices = if is_csv(headers) { from_csv(body, &ctx.limits)? } else { from_json(body, &ctx.limits)? };
    ctx.store.put_devices(&devices).await?;
    let macs: Vec<Mac> = devices.iter().map(|d| d.mac.clone()).collect();
    let applied = super::announce(ctx, &macs).await;
    Ok(applied.stamp(reply::ok(&ImportAnswer { imported: devices.len() })))
}

/// Whether the body is labelled CSV.
fn is_csv(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|kind| kind.trim().eq_ignore_ascii_case("text/csv"))
}

/// More devices than one import takes: refused before any is read.
fn check_count(count: usize, limits: &Limits) -> Result<(), ApiError> {
    let most = limits.devices_per_import;
    if count > most {
        return Err(ApiError::Invalid(format!("must have at most {most} devices, got {count}")));
    }
    Ok(())
}

/// The devices of a JSON array; a refusal names the element, `[i]`.
fn from_json(body: &Bytes, limits: &Limits) -> Result<Vec<Device>, ApiError> {
    let DeviceImport(devices) = DeviceImport::parse(&body::array(body, limits)?, limits)?;
    Ok(devices.into_iter().map(NewDevice::into_device).collect())
}

impl DeviceImport {
    /// Reads the elements of a JSON import: at most [`Limits::devices_per_import`], each as
    /// [`NewDevice::parse`] reads one, each MAC once.
    fn parse(items: &[Value], limits: &Limits) -> Result<Self, ApiError> {
        check_count(items.len(), limits)?;
        let mut places = Places::default();
        items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let place = format!("[{i}]");
                let device = NewDevice::parse(item).map_err(|e| e.within(&place))?;
                places.admit(&device.mac, &place, |first| format!("{place}.MAC: {} is also at {first}", device.mac))?;
                Ok(device)
            })
            .collect::<Result<_, _>>()
            .map(Self)
    }
}

/// Where each MAC of an import was first seen: a MAC twice is refused, whichever record
/// should have won being unclear.
#[derive(Default)]
struct Places(HashMap<Mac, String>);

impl Places {
    /// Records `mac` at `place`, or refuses with `message` of the place it was first seen.
    fn admit(&mut self, mac: &Mac, place: &str, message: impl Fn(&str) -> String) -> Result<(), ApiError> {
        match self.0.get(mac) {
            Some(first) => Err(ApiError::Invalid(message(first))),
            None => {
                self.0.insert(mac.clone(), place.to_owned());
                Ok(())
            }
        }
    }
}

/// The devices of a CSV body; a refusal names the line.
fn from_csv(body: &Bytes, limits: &Limits) -> Result<Vec<Device>, ApiError> {
    let text = std::str::from_utf8(body).map_err(|_| ApiError::Malformed("request body is not UTF-8 CSV".into()))?;
    // The body is read as text; what it says, its CSV syntax included, is data.
    let records = csv::records(text).map_err(|e| ApiError::Invalid(e.to_string()))?;
    let Some((header, rows)) = records.split_first() else {
        return Err(ApiError::Invalid(format!("the CSV has no header row (e.g. {})", COLUMNS.join(","))));
    };
    check_count(rows.len(), limits)?;
    let columns = Columns::read(header)?;
    let mut places = Places::default();
    rows.iter()
        .map(|row| {
            let place = format!("line {}", row.line);
            let device = columns.device(row).map_err(|e| ApiError::Invalid(format!("{place}: {e}")))?;
            places.admit(&device.mac, &place, |first| format!("{place}: MAC: {} is also on {first}", device.mac))?;
            Ok(device)
        })
        .collect()
}

/// What each CSV column holds: a field of the device, or a property.
struct Columns(Vec<Column>);

enum Column {
    Field(&'static str),
    Property(String),
}

impl Columns {
    /// The header row: each name once; `MAC` and `Name` needed. The field columns are named in
    /// any case.
    fn read(header: &Record) -> Result<Self, ApiError> {
        let refuse = |message: String| ApiError::Invalid(format!("line {}: {message}", header.line));
        let mut columns: Vec<Column> = Vec::with_capacity(header.fields.len());
        for (i, name) in header.fields.iter().map(|n| n.trim()).enumerate() {
            if name.is_empty() {
                return Err(refuse(format!("column {} has no name", i + 1)));
            }
            let column = match COLUMNS.iter().find(|c| c.eq_ignore_ascii_case(name)) {
                Some(field) => Column::Field(field),
                None => Column::Property(name.to_owned()),
            };
            let taken = columns.iter().any(|c| match (c, &column) {
                (Column::Field(a), Column::Field(b)) => a == b,
                (Column::Property(a), Column::Property(b)) => a == b,
                _ => false,
            });
            if taken {
                return Err(refuse(format!("column {name} appears twice")));
            }
            columns.push(column);
        }
        for needed in ["MAC", "Name"] {
            if !columns.iter().any(|c| matches!(c, Column::Field(f) if *f == needed)) {
                return Err(refuse(format!(
                    "the header has no {needed} column (it names MAC and Name, and may name Group, Kind, \
                     OfflineSeconds and properties)"
                )));
            }
        }
        Ok(Self(columns))
    }

    /// The device of one row: its cells trimmed, an empty one absent, then read as a device
    /// body is.
    fn device(&self, row: &Record) -> Result<Device, Invalid> {
        if row.fields.len() != self.0.len() {
            return Err(Invalid::new("", format!("has {} fields, the header has {}", row.fields.len(), self.0.len())));
        }
        let mut object = Map::new();
        let mut properties = Map::new();
        for (column, cell) in self.0.iter().zip(&row.fields) {
            let cell = cell.trim();
            if cell.is_empty() {
                continue;
            }
            match column {
                // A number where the field takes one; text the field refuses otherwise.
                Column::Field(field) if *field == "OfflineSeconds" => {
                    let number =
                        cell.parse::<u64>().map(Value::from).unwrap_or_else(|_| Value::String(cell.to_owned()));
                    object.insert((*field).to_owned(), number)
                }
                Column::Field(field) => object.insert((*field).to_owned(), Value::String(cell.to_owned())),
                Column::Property(name) => properties.insert(name.clone(), Value::String(cell.to_owned())),
            };
        }
        object.insert("Properties".into(), Value::Object(properties));
        Ok(NewDevice::parse(&Value::Object(object))?.into_device())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn csv(text: &str) -> Result<Vec<Value>, String> {
        from_csv(&Bytes::from(text.to_owned()), &Limits::DEFAULT)
            .map(|ds| ds.iter().map(|d| serde_json::to_value(d).unwrap()).collect())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn csv_rows_become_devices_and_extra_columns_properties() {
        let devices =
            csv("mac,Name,Group,KIND,badge,shift,offlineseconds\n00-aa-bb-cc-dd-01, Anna ,staff,person,17,, 90\n")
                .unwrap();
        assert_eq!(
            devices,
            vec![json!({"MAC": "00:AA:BB:CC:DD:01", "Name": "Anna", "Group": "staff", "Kind": "person",
                        "Properties": {"badge": "17"}, "OfflineSeconds": 90})]
        );
        assert_eq!(csv("MAC,Name\n").unwrap(), Vec::<Value>::new(), "a header alone imports nothing");
    }

    #[test]
    fn csv_refusals_name_the_line_and_the_field() {
        let refused = |text: &str| csv(text).unwrap_err();
        assert_eq!(refused(""), "the CSV has no header row (e.g. MAC,Name,Group,Kind,OfflineSeconds)");
        assert_eq!(
            refused("MAC,Name,OfflineSeconds\n00:00:00:00:00:01,a,soon\n"),
            "line 2: OfflineSeconds: must be an integer, got a string"
        );
        assert!(refused("MAC,Group\n").starts_with("line 1: the header has no Name column"));
        assert_eq!(refused("MAC,Name,mac\n"), "line 1: column mac appears twice");
        assert_eq!(refused("MAC,,Name\n"), "line 1: column 2 has no name");
        assert_eq!(
            refused("MAC,Name\n00:00:00:00:00:01,a\n\n00:00:00:00:00:02\n"),
            "line 4: has 1 fields, the header has 2"
        );
        assert!(refused("MAC,Name\nnope,a\n").starts_with("line 2: MAC: 'nope' is not a MAC address"));
        assert_eq!(refused("MAC,Name\n00:00:00:00:00:01,\n"), "line 2: Name: is required");
        let long = format!("MAC,Name,Kind\n00:00:00:00:00:01,a,{}\n", "k".repeat(257));
        assert_eq!(refused(&long), "line 2: Kind: must be 1 to 256 characters");
        assert_eq!(
            refused("MAC,Name\n00:00:00:00:00:01,a\n00-00-00-00-00-01,b\n"),
            "line 3: MAC: 00:00:00:00:00:01 is also on line 2"
        );
        assert_eq!(refused("MAC,Name\n\"00:00:00:00:00:01,a\n"), "line 2: a quoted field is not closed");
        let limits = Limits { devices_per_import: 1, ..Limits::DEFAULT };
        let two = Bytes::from("MAC,Name\n00:00:00:00:00:01,a\n00:00:00:00:00:02,b\n");
        assert_eq!(from_csv(&two, &limits).unwrap_err().to_string(), "must have at most 1 devices, got 2");
    }

    #[test]
    fn json_refusals_name_the_element_and_the_field() {
        let refused = |v: Value| from_json(&Bytes::from(v.to_string()), &Limits::DEFAULT).unwrap_err().to_string();
        assert_eq!(refused(json!([{"MAC": "00:00:00:00:00:01", "Name": "a"}, {"Name": "b"}])), "[1].MAC: is required");
        assert_eq!(
            refused(json!([{"MAC": "00:00:00:00:00:01", "Name": 5}])),
            "[0].Name: must be a string, got a number"
        );
        assert_eq!(
            refused(json!([{"MAC": "00:00:00:00:00:01", "Name": "a"}, {"MAC": "00-00-00-00-00-01", "Name": "b"}])),
            "[1].MAC: 00:00:00:00:00:01 is also at [0]"
        );
        assert_eq!(refused(json!({"MAC": "00:00:00:00:00:01"})), "request body must be a JSON array");
    }
}
