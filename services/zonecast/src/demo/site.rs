//! The demo warehouse's floor plan and zones. The hall is 64 m × 44 m (x east, y north, z up,
//! metres): eight dock doors on the south wall with staging lanes in front, a cross aisle along
//! them, a block of rack rows with six pick aisles between them, walkways west and east of the
//! block and along the north wall, packing and the office in the west strip, chargers and a
//! quality cage in the east strip, robot cells along the north wall.

use serde_json::{Value, json};
use uuid::Uuid;

/// The forklift's MAC: the source of the mobile safety zone.
pub const FORKLIFT: &str = "02:DE:40:F0:00:01";
/// The cross aisle's centre line, in front of the staging lanes.
pub const CROSS_AISLE_Y: f64 = 11.5;
/// The walkway west of the rack block.
pub const WEST_WALK_X: f64 = 6.5;
/// The walkway east of the rack block.
pub const EAST_WALK_X: f64 = 57.5;
/// The walkway along the north wall.
pub const NORTH_WALK_Y: f64 = 40.5;
/// How many pick aisles run east–west through the rack block.
pub const AISLES: usize = 6;
/// How many dock doors the south wall has.
pub const DOCKS: usize = 8;
/// How many chargers stand in the east strip.
pub const CHARGERS: usize = 4;

/// The centre line (y) of pick aisle `j`.
pub fn aisle_y(j: usize) -> f64 {
    16.6 + 4.0 * j as f64
}

/// The middle (x) of dock door `k`.
pub fn dock_x(k: usize) -> f64 {
    6.0 + 7.0 * k as f64
}

/// Where charger `k` stands.
pub fn charger(k: usize) -> [f64; 2] {
    [61.0, 14.0 + 4.0 * k as f64]
}

/// The ZoneID of demo zone `n`: `64656D6F-0000-4000-8000-0000000000NN` ("demo" in hex), the same
/// on every start, which is how a restart knows the zones it made.
pub fn zone_id(n: u8) -> Uuid {
    Uuid::from_u128(0x6465_6D6F_0000_4000_8000_0000_0000_0000 | u128::from(n))
}

/// One zone of the demo: the body the API takes, and whether its geometry is locked once made.
pub struct DemoZone {
    /// Its fixed ZoneID.
    pub id: Uuid,
    /// The zone as `POST /v3/modules/zones` takes it.
    pub body: Value,
    /// Locked after it is created.
    pub locked: bool,
}

fn zone(name: &str, kind: &str, data: Value, level: u32) -> Value {
    json!({"Name": name, "GeometryType": kind, "GeometryData": data, "AlertLevel": level})
}

/// An axis-aligned 2D rectangle from its south-west corner.
fn rectangle(name: &str, level: u32, corner: [f64; 2], size: [f64; 2]) -> Value {
    let data = json!([[corner[0], corner[1], 0], [size[0], size[1], 0], [1, 0, 0], [0, 1, 0]]);
    zone(name, "square", data, level)
}

/// An axis-aligned box from its lowest south-west corner.
fn block(name: &str, level: u32, corner: [f64; 3], size: [f64; 3]) -> Value {
    let data = json!([corner, size, [1, 0, 0], [0, 1, 0], [0, 0, 1]]);
    zone(name, "cuboid", data, level)
}

/// A prism over a floor polygon, `height` tall.
fn floor_prism(name: &str, level: u32, ring: &[[f64; 2]], height: f64) -> Value {
    let mut rows: Vec<Value> = ring.iter().map(|p| json!([p[0], p[1], 0])).collect();
    rows.extend([json!([height, 0, 0]), json!([0, 0, 1])]);
    zone(name, "polygon", Value::Array(rows), level)
}

/// The docks, staging lanes and pick aisles: where most devices come and go.
fn flow_zones() -> Vec<Value> {
    let docks = (0..DOCKS).map(|k| rectangle(&format!("Dock {}", k + 1), 2, [dock_x(k) - 2.0, 0.5], [4.0, 3.0]));
    let lanes = (0..4).map(|k| {
        let name = format!("Staging lane {}", ["A", "B", "C", "D"][k]);
        rectangle(&name, 1, [4.0 + 14.0 * k as f64, 5.0], [10.0, 4.0])
    });
    let aisles =
        (0..AISLES).map(|j| block(&format!("Aisle {}", j + 1), 0, [8.0, aisle_y(j) - 1.4, 0.0], [48.0, 2.8, 3.0]));
    docks.chain(lanes).chain(aisles).collect()
}

/// Chargers, crossings, robot cells and the other places of the hall, one or more of each
/// shape: spheres, circles, cylinders (one tilted), polygons (one concave), an oblique cuboid.
fn place_zones(cleared: &[String]) -> Vec<Value> {
    let chargers = (0..CHARGERS).map(|k| {
        let [x, y] = charger(k);
        zone(&format!("Charger {}", k + 1), "sphere", json!([[x, y, 1.0], [1.2, 0, 0]]), 1)
    });
    // Crossings are logged: everyone walks through them.
    let crossings = [("Crossing west", 20.0), ("Crossing east", 34.0)]
        .map(|(name, x)| zone(name, "circle", json!([[x, CROSS_AISLE_Y, 0], [1.5, 0, 0]]), 2));
    let cells = (0..3).map(|k| {
        let data = json!([[14.0 + 12.0 * k as f64, 42.0, 0], [0, 0, 1], [3.0, 2.2, 0]]);
        cleared_only(zone(&format!("Robot cell {}", k + 1), "cylinder", data, 9), cleared)
    });
    let others = [
        zone("Chute", "cylinder", json!([[59.5, 6.0, 0.5], [-0.5, 0.3, 1], [4.0, 0.8, 0]]), 4),
        // Rising from the cross aisle: its length axis is not square to its height axis.
        // The runners pass under it: logged.
        zone("Conveyor", "cuboid", json!([[40.0, 10.6, 0.3], [12.0, 1.2, 0.8], [1, 0, 0.25], [0, 1, 0], [0, 0, 1]]), 3),
        floor_prism("Packing", 3, &[[0.5, 14.0], [7.0, 14.0], [7.0, 22.0], [4.0, 22.0], [4.0, 30.0], [0.5, 30.0]], 2.5),
        floor_prism("Office", 0, &[[0.5, 32.0], [5.5, 32.0], [5.5, 39.0], [3.0, 43.0], [0.5, 39.0]], 3.0),
        cleared_only(floor_prism("Quality cage", 7, &hexagon([61.0, 34.0], 2.8), 2.5), cleared),
        zone("Assembly point", "circle", json!([[70.0, 22.0, 0], [4.0, 0, 0]]), 0),
        // Logged: the people the forklift passes are many, and each entry is in the timeline.
        zone("Forklift safety", "circle", json!([[0, 0, 0], [3.0, 0, 0]]), 3),
    ];
    chargers.chain(crossings).chain(cells).chain(others).collect()
}

/// `body` triggered by everyone but the devices `cleared` for it (the forklift, whose walkway
/// runs by the robot cells, and every technician but the first, a trainee, whose rounds raise
/// the site's only alarms in the demo's first minutes, one per zone, each later pass counted on
/// it).
fn cleared_only(mut body: Value, cleared: &[String]) -> Value {
    body["DeviceList"] = json!(cleared);
    body
}

fn hexagon(centre: [f64; 2], radius: f64) -> [[f64; 2]; 6] {
    std::array::from_fn(|k| {
        let a = std::f64::consts::TAU * k as f64 / 6.0;
        [centre[0] + radius * a.cos(), centre[1] + radius * a.sin()]
    })
}

/// Every zone of the demo, each with its fixed ZoneID: 36 zones of every shape and several
/// AlertLevels; the mezzanine inactive, the fire exit locked, the forklift's safety circle
/// following the forklift, the robot cells and the quality cage leaving out the devices
/// `cleared` for them.
pub fn zones(cleared: &[String]) -> Vec<DemoZone> {
    let mut bodies = flow_zones();
    bodies.extend(place_zones(cleared));
    let mut mezzanine = block("Mezzanine (closed)", 5, [44.0, 39.5, 3.0], [18.0, 4.0, 3.0]);
    mezzanine["Active"] = json!(false);
    bodies.push(mezzanine);
    let fire_exit = rectangle("Fire exit", 8, [62.0, 40.0], [2.0, 3.5]);
    let locked = bodies.len();
    bodies.push(fire_exit);
    for body in &mut bodies {
        if body["Name"] == "Forklift safety" {
            body["MobileOriginSource"] = json!(FORKLIFT);
        }
    }
    bodies
        .into_iter()
        .enumerate()
        .map(|(n, body)| DemoZone { id: zone_id(n as u8 + 1), body, locked: n == locked })
        .collect()
}
