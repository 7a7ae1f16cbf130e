//! A generated site shared by the engine's benchmark and its memory test: zones of every
//! shape at random places on a 1 km × 1 km × 20 m site, and devices numbered by their MAC.

use chrono::Utc;
use serde_json::{Value, json};
use zonecast_evaluator::catalog::Catalog;
use zonecast_evaluator::{Engine, Ownership};
use zonecast_model::{IdSource, Mac, ZoneInput};

/// A xorshift generator: the same site on every run.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
    pub fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.next()
    }
}

/// Zone `i` of the mix: sphere, circle, cuboid and square with rotated axes, cylinder,
/// polygon prism, 1–20 m; a mobile zone of `mobile` when given.
pub fn zone_json(r: &mut Rng, i: usize, mobile: Option<&Mac>) -> Value {
    let (x, y, z) = (r.range(0.0, 1000.0), r.range(0.0, 1000.0), r.range(0.0, 18.0));
    let s = r.range(1.0, 20.0);
    let a = r.range(0.0, std::f64::consts::PI);
    let (c, n) = (a.cos(), a.sin());
    let mut v = match i % 6 {
        0 => json!({"GeometryType": "sphere", "GeometryData": [[x, y, z], [s / 2.0, 0, 0]]}),
        1 => json!({"GeometryType": "circle", "GeometryData": [[x, y, 0], [s / 2.0, 0, 0]]}),
        2 => {
            json!({"GeometryType": "cuboid", "GeometryData": [[x, y, z], [s, s / 2.0, 2.0], [c, n, 0.1], [-n, c, 0], [0, 0.1, 1]]})
        }
        3 => json!({"GeometryType": "square", "GeometryData": [[x, y, 0], [s, s / 2.0, 0], [c, n, 0], [-n, c, 0]]}),
        4 => json!({"GeometryType": "cylinder", "GeometryData": [[x, y, z], [0.1, 0, 1], [2.0, s / 2.0, 0]]}),
        _ => json!({"GeometryType": "polygon", "GeometryData": [[x, y, z], [x + s, y, z], [x + s, y + s, z],
            [x + s / 2.0, y + s / 3.0, z], [x, y + s, z], [2.0, 0, 0], [0, 0, 1]]}),
    };
    if let Some(m) = mobile {
        v["MobileOriginSource"] = json!(m.as_str());
    }
    v
}

/// The MAC of device `i`.
pub fn mac(i: usize) -> Mac {
    format!("02:00:00:{:02X}:{:02X}:{:02X}", (i >> 16) & 0xff, (i >> 8) & 0xff, i & 0xff).parse().expect("valid MAC")
}

/// An engine owning every partition over `static_zones` static zones and `mobile_zones` mobile
/// zones, whose sources have been placed.
pub fn engine(static_zones: usize, mobile_zones: usize) -> Engine {
    let mut r = Rng(0x9E37_79B9_7F4A_7C15);
    let mut specs = Vec::new();
    for i in 0..static_zones {
        specs.push(
            ZoneInput::parse(&zone_json(&mut r, i, None), &zonecast_model::Limits::DEFAULT)
                .and_then(|z| z.create(uuid::Uuid::new_v4()))
                .expect("valid zone"),
        );
    }
    for i in 0..mobile_zones {
        let source = mac(1_000_000 + i);
        specs.push(
            ZoneInput::parse(&zone_json(&mut r, i, Some(&source)), &zonecast_model::Limits::DEFAULT)
                .and_then(|z| z.create(uuid::Uuid::new_v4()))
                .expect("valid zone"),
        );
    }
    let catalog = Catalog::build(specs, &[], Vec::new());
    let mut e = Engine::new(catalog, 1, Ownership::range(16, 0, 15), IdSource::seeded(7));
    // Mobile zones wander: give each source a position so its zone is placed.
    let mut out = Vec::new();
    for i in 0..mobile_zones {
        e.on_position(
            &mac(1_000_000 + i),
            [r.range(0.0, 1000.0), r.range(0.0, 1000.0), 1.0],
            Utc::now(),
            None,
            Utc::now(),
            &mut out,
        );
    }
    e
}
