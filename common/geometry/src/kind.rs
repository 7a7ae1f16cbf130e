//! The six geometry kinds and their lower-case names on the wire.

use std::fmt;
use std::str::FromStr;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The six geometry kinds a zone may have (`GeometryType`).
///
/// Parses its lower-case name case-insensitively and serialises as the lower-case name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GeometryType {
    /// A ball: `[centre]`, `[r,0,0]`.
    Sphere,
    /// A disc in XY, infinite in z: `[centre]`, `[r,0,0]`.
    Circle,
    /// An oriented box: `[origin]`, `[l,w,h]`, `[axis_l]`, `[axis_w]`, `[axis_h]`.
    Cuboid,
    /// A rectangle in XY, infinite in z: `[bottom_left]`, `[l,w,0]`, `[axis_l]`, `[axis_w]`.
    Square,
    /// A capped cylinder: `[origin]`, `[axis]`, `[h,r,0]`.
    Cylinder,
    /// A prism over a planar polygon: `[v1]…[vN]`, `[h,0,0]`, `[axis]`.
    Polygon,
}

impl GeometryType {
    /// Every kind, in the order the names are listed in messages.
    pub const ALL: [GeometryType; 6] = [
        GeometryType::Sphere,
        GeometryType::Circle,
        GeometryType::Cuboid,
        GeometryType::Square,
        GeometryType::Cylinder,
        GeometryType::Polygon,
    ];

    /// The lower-case name: `"sphere"`, `"circle"`, `"cuboid"`, `"square"`, `"cylinder"`, `"polygon"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            GeometryType::Sphere => "sphere",
            GeometryType::Circle => "circle",
            GeometryType::Cuboid => "cuboid",
            GeometryType::Square => "square",
            GeometryType::Cylinder => "cylinder",
            GeometryType::Polygon => "polygon",
        }
    }

    /// Fewest `GeometryData` rows a polygon takes: three vertices, `[h,0,0]` and `[axis]`.
    pub const MIN_POLYGON_ROWS: usize = 5;

    /// How many `GeometryData` rows this kind takes; `None` for a polygon, which takes at least
    /// [`GeometryType::MIN_POLYGON_ROWS`].
    pub const fn fixed_rows(self) -> Option<usize> {
        match self {
            GeometryType::Sphere | GeometryType::Circle => Some(2),
            GeometryType::Cuboid => Some(5),
            GeometryType::Square => Some(4),
            GeometryType::Cylinder => Some(3),
            GeometryType::Polygon => None,
        }
    }
}

impl fmt::Display for GeometryType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Longest part of an unknown name echoed back in the error message.
const ECHO_CHARS: usize = 64;

/// A `GeometryType` name that is none of the six; holds the name as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown type '{}' (expected one of sphere, circle, cuboid, square, cylinder, polygon)",
    Echo(&self.0)
)]
pub struct UnknownGeometryType(pub String);

/// The name as given, cut to [`ECHO_CHARS`] so an error never repeats a huge input in full.
struct Echo<'a>(&'a str);

impl fmt::Display for Echo<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut chars = self.0.chars();
        f.write_str(&chars.by_ref().take(ECHO_CHARS).collect::<String>())?;
        if chars.next().is_some() {
            f.write_str("…")?;
        }
        Ok(())
    }
}

impl FromStr for GeometryType {
    type Err = UnknownGeometryType;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        GeometryType::ALL
            .into_iter()
            .find(|kind| kind.as_str().eq_ignore_ascii_case(s))
            .ok_or_else(|| UnknownGeometryType(s.to_owned()))
    }
}

impl Serialize for GeometryType {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for GeometryType {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(NameVisitor)
    }
}

/// Reads a `GeometryType` from its name, with the same rules as `FromStr`.
struct NameVisitor;

impl Visitor<'_> for NameVisitor {
    type Value = GeometryType;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("one of sphere, circle, cuboid, square, cylinder, polygon")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<GeometryType, E> {
        v.parse().map_err(E::custom)
    }
}
