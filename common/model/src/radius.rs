//! Device radii (`PUT /v3/modules/zones/devices/radius`): `{MAC: metres}`, a null value removes the
//! device's own radius.

use serde_json::Value;

use crate::fields::{number_in, type_name};
use crate::{Invalid, Limits, Mac};

/// Largest accepted device radius, in metres.
pub const MAX_RADIUS: f64 = 100.0;

/// The body of a radius write as [`RadiusMap::parse`] reads it: device MACs to metres, `null` to
/// remove the device's own radius.
#[derive(schemars::JsonSchema)]
#[schemars(
    extend("x-limit" = {"maxProperties": "radii_per_write"}),
    description = "Device MACs to their radius in metres; merged with the stored radii, null removes a device's own radius."
)]
pub struct RadiusMap(#[schemars(with = "std::collections::BTreeMap<Mac, Option<Radius>>")] Vec<(Mac, Option<Radius>)>);

/// A device radius in metres.
#[derive(schemars::JsonSchema)]
struct Radius(#[schemars(range(min = 0.0, max = MAX_RADIUS))] f64);

impl RadiusMap {
    /// Reads the body of a radius write: at most [`Limits::radii_per_write`] entries, kept in
    /// the order sent (a MAC sent twice, in two spellings, is kept twice).
    pub fn parse(value: &Value, limits: &Limits) -> Result<Self, Invalid> {
        let Value::Object(map) = value else {
            return Err(Invalid::new("", format!("must be an object of MAC to metres, got {}", type_name(value))));
        };
        let most = limits.radii_per_write;
        if map.len() > most {
            return Err(Invalid::new("", format!("must have at most {most} entries, got {}", map.len())));
        }
        map.iter()
            .map(|(key, v)| {
                let mac: Mac = key.parse().map_err(|e: String| Invalid::new(key.as_str(), e))?;
                let radius = match v {
                    Value::Null => None,
                    v => Some(Radius(number_in(v, 0.0, MAX_RADIUS).map_err(|m| Invalid::new(key.as_str(), m))?)),
                };
                Ok((mac, radius))
            })
            .collect::<Result<_, _>>()
            .map(Self)
    }

    /// The changes to merge into the stored radii: `(MAC, Some(metres) | None to remove)`.
    pub fn changes(self) -> Vec<(Mac, Option<f64>)> {
        self.0.into_iter().map(|(mac, radius)| (mac, radius.map(|Radius(metres)| metres))).collect()
    }
}
