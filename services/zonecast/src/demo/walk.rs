//! Where each demo device is at any moment: people walking fixed rounds of the warehouse at
//! their own pace, and the forklift driving the cross aisle and the walkways. A position is a
//! pure function of the seconds since the demo started, so every run moves the same way, while
//! every device has its own round, speed, starting point, side of the path and tag height.

use super::site::{
    AISLES, CHARGERS, CROSS_AISLE_Y, DOCKS, EAST_WALK_X, FORKLIFT, NORTH_WALK_Y, WEST_WALK_X, aisle_y, charger, dock_x,
};

/// Pickers walk two neighbouring pick aisles, one in ten calling at a charger on the way.
const PICKERS: usize = 150;
/// Runners take goods from a dock along the cross aisle into an aisle and back.
const RUNNERS: usize = 80;
/// Packers go round the packing area, half of them by the office too.
const PACKERS: usize = 40;
/// Technicians walk past the robot cells along the north wall and look into the quality cage.
const TECHNICIANS: usize = 20;
/// The forklift's speed, in metres per second.
const FORKLIFT_SPEED: f64 = 2.2;

/// A closed round on the floor: straight legs from waypoint to waypoint, the last back to the
/// first.
pub struct Round {
    points: Vec<[f64; 2]>,
    /// The distance along the round at the end of each leg.
    ends: Vec<f64>,
}

impl Round {
    /// The round through `points` (at least two).
    pub fn new(points: Vec<[f64; 2]>) -> Self {
        let mut total = 0.0;
        let ends = (0..points.len())
            .map(|i| {
                let (a, b) = (points[i], points[(i + 1) % points.len()]);
                total += (b[0] - a[0]).hypot(b[1] - a[1]);
                total
            })
            .collect();
        Self { points, ends }
    }

    /// Its length in metres.
    pub fn length(&self) -> f64 {
        self.ends.last().copied().unwrap_or(0.0)
    }

    /// The point `distance` metres along the round from its first waypoint, going round as
    /// often as it takes.
    pub fn at(&self, distance: f64) -> [f64; 2] {
        let d = distance.rem_euclid(self.length().max(f64::MIN_POSITIVE));
        let leg = self.ends.partition_point(|&end| end < d).min(self.points.len() - 1);
        let (a, b) = (self.points[leg], self.points[(leg + 1) % self.points.len()]);
        let start = if leg == 0 { 0.0 } else { self.ends[leg - 1] };
        let span = self.ends[leg] - start;
        let t = if span > 0.0 { (d - start) / span } else { 0.0 };
        [a[0] + (b[0] - a[0]) * t, a[1] + (b[1] - a[1]) * t]
    }
}

/// A device of the demo and how it moves.
pub struct Walker {
    /// Its MAC, as it reports it.
    pub mac: String,
    /// Its name in the device registry ("Picker 12", "Forklift").
    pub name: String,
    /// Its group there: its job (`pickers`, `runners`, `packers`, `technicians`, `vehicles`).
    pub group: &'static str,
    /// Its kind there: `person` or `vehicle`.
    pub kind: &'static str,
    round: Round,
    /// Metres per second.
    speed: f64,
    /// Where on its round it starts, in metres.
    start: f64,
    /// Its side of the path, added to every point of the round.
    offset: [f64; 2],
    /// The tag's height above the floor.
    height: f64,
}

impl Walker {
    /// Where it is `seconds` after the demo started, in site metres (to the millimetre).
    pub fn position(&self, seconds: f64) -> [f64; 3] {
        let [x, y] = self.round.at(self.start + self.speed * seconds);
        let mm = |v: f64| (v * 1000.0).round() / 1000.0;
        [mm(x + self.offset[0]), mm(y + self.offset[1]), mm(self.height)]
    }
}

/// A number in `0..1` drawn from `device` and `salt` (SplitMix64): fixed per device, varied
/// between devices.
fn unit(device: usize, salt: u64) -> f64 {
    let mut z = (device as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ salt.wrapping_mul(0xD1B5_4A32_D192_ED03);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)) as f64 / u64::MAX as f64
}

/// West along aisle `j`, east along the next one, with a call at charger `charge` between.
fn picker_round(j: usize, charge: Option<usize>) -> Round {
    let (a, b) = (aisle_y(j), aisle_y(j + 1));
    let mut points = vec![[WEST_WALK_X, a], [EAST_WALK_X, a]];
    if let Some(k) = charge {
        let [x, y] = charger(k);
        points.extend([[EAST_WALK_X, y], [x, y], [EAST_WALK_X, y]]);
    }
    points.extend([[EAST_WALK_X, b], [WEST_WALK_X, b]]);
    Round::new(points)
}

/// From dock `k` through its staging lane, west along the cross aisle, east through aisle `j`
/// and back along the cross aisle to the dock.
fn runner_round(k: usize, j: usize) -> Round {
    let x = dock_x(k);
    Round::new(vec![
        [x, 2.0],
        [x, CROSS_AISLE_Y],
        [WEST_WALK_X, CROSS_AISLE_Y],
        [WEST_WALK_X, aisle_y(j)],
        [EAST_WALK_X, aisle_y(j)],
        [EAST_WALK_X, CROSS_AISLE_Y],
        [x, CROSS_AISLE_Y],
    ])
}

/// Round the packing area, and by the office when `office`.
fn packer_round(office: bool) -> Round {
    let mut points = vec![[2.0, 12.5], [5.5, 16.0], [5.5, 21.0], [2.5, 27.0]];
    if office {
        points.extend([[2.5, 33.5], [4.0, 37.5]]);
    }
    points.extend([[WEST_WALK_X, 31.0], [WEST_WALK_X, 12.5]]);
    Round::new(points)
}

/// Up the west walkway, along the robot cells, down the east walkway with a look into the
/// quality cage.
fn technician_round() -> Round {
    Round::new(vec![
        [WEST_WALK_X, CROSS_AISLE_Y],
        [WEST_WALK_X, NORTH_WALK_Y],
        [EAST_WALK_X, NORTH_WALK_Y],
        [EAST_WALK_X, 34.0],
        [61.0, 34.0],
        [EAST_WALK_X, 34.0],
        [EAST_WALK_X, CROSS_AISLE_Y],
    ])
}

/// The forklift's loop: the cross aisle, the east walkway, the north walkway, the west one.
fn forklift_round() -> Round {
    Round::new(vec![
        [WEST_WALK_X, CROSS_AISLE_Y],
        [EAST_WALK_X, CROSS_AISLE_Y],
        [EAST_WALK_X, NORTH_WALK_Y],
        [WEST_WALK_X, NORTH_WALK_Y],
    ])
}

/// What a person of the demo does: their round, and their name and group in the registry.
#[derive(Clone, Copy)]
enum Job {
    Picker,
    Runner,
    Packer,
    Technician,
}

impl Job {
    fn title(self) -> &'static str {
        match self {
            Self::Picker => "Picker",
            Self::Runner => "Runner",
            Self::Packer => "Packer",
            Self::Technician => "Technician",
        }
    }

    fn group(self) -> &'static str {
        match self {
            Self::Picker => "pickers",
            Self::Runner => "runners",
            Self::Packer => "packers",
            Self::Technician => "technicians",
        }
    }
}

/// The job of person `i` and their index among those doing it: the first [`PICKERS`] pick,
/// the next [`RUNNERS`] run, then the packers and the technicians.
fn job(i: usize) -> (Job, usize) {
    match i {
        _ if i < PICKERS => (Job::Picker, i),
        _ if i < PICKERS + RUNNERS => (Job::Runner, i - PICKERS),
        _ if i < PICKERS + RUNNERS + PACKERS => (Job::Packer, i - PICKERS - RUNNERS),
        _ => (Job::Technician, i - PICKERS - RUNNERS - PACKERS),
    }
}

/// The round of person `i`, by their job.
fn round_of(i: usize) -> Round {
    match job(i) {
        (Job::Picker, _) => picker_round(i % (AISLES - 1), i.is_multiple_of(10).then_some((i / 10) % CHARGERS)),
        (Job::Runner, r) => runner_round(r % DOCKS, (r * 5 + 3) % AISLES),
        (Job::Packer, _) => packer_round(i.is_multiple_of(2)),
        (Job::Technician, _) => technician_round(),
    }
}

/// Person `i` of the demo: MAC `02:DE:40:00:HH:LL`, named after their job ("Runner 7"),
/// walking 0.7–1.5 m/s up to half a metre off the path's centre line, the tag 0.9–1.6 m high.
fn person(i: usize) -> Walker {
    let round = round_of(i);
    let start = unit(i, 1) * round.length();
    let (work, index) = job(i);
    Walker {
        mac: format!("02:DE:40:00:{:02X}:{:02X}", i >> 8, i & 0xFF),
        name: format!("{} {}", work.title(), index + 1),
        group: work.group(),
        kind: "person",
        speed: 0.7 + 0.8 * unit(i, 2),
        start,
        offset: [unit(i, 3) - 0.5, unit(i, 4) - 0.5],
        height: 0.9 + 0.7 * unit(i, 5),
        round,
    }
}

/// The forklift, carrying its tag 1 m high along the middle of its path.
fn forklift() -> Walker {
    Walker {
        mac: FORKLIFT.to_owned(),
        name: "Forklift".to_owned(),
        group: "vehicles",
        kind: "vehicle",
        round: forklift_round(),
        speed: FORKLIFT_SPEED,
        start: 0.0,
        offset: [0.0, 0.0],
        height: 1.0,
    }
}

/// The MACs of the technicians cleared for the robot cells and the quality cage: all but the
/// first, a trainee.
pub fn cleared_technicians() -> Vec<String> {
    let first = PICKERS + RUNNERS + PACKERS;
    (first + 1..first + TECHNICIANS).map(|i| person(i).mac).collect()
}

/// Every device of the demo: the people, then the forklift.
pub fn walkers() -> Vec<Walker> {
    (0..PICKERS + RUNNERS + PACKERS + TECHNICIANS).map(person).chain([forklift()]).collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_round_is_walked_leg_by_leg_and_starts_again_after_its_length() {
        let round = Round::new(vec![[0.0, 0.0], [4.0, 0.0], [4.0, 3.0]]);
        assert_eq!(round.length(), 12.0);
        assert_eq!(round.at(0.0), [0.0, 0.0]);
        assert_eq!(round.at(2.0), [2.0, 0.0]);
        assert_eq!(round.at(5.5), [4.0, 1.5]);
        // The last leg goes back to the start: 5 m from (4, 3) to (0, 0).
        assert_eq!(round.at(9.5), [2.0, 1.5]);
        assert_eq!(round.at(12.0 + 2.0), [2.0, 0.0]);
        assert_eq!(round.at(-10.0), [2.0, 0.0]);
    }

    #[test]
    fn every_device_has_its_own_mac_and_stays_in_the_hall_walking_at_its_pace() {
        let walkers = walkers();
        assert_eq!(walkers.len(), PICKERS + RUNNERS + PACKERS + TECHNICIANS + 1);
        let macs: std::collections::HashSet<&str> = walkers.iter().map(|w| w.mac.as_str()).collect();
        assert_eq!(macs.len(), walkers.len());
        assert!(macs.contains(FORKLIFT));
        for w in &walkers {
            w.mac.parse::<zonecast_model::Mac>().unwrap();
            let mut walked = 0.0;
            for second in 0..600 {
                let [x, y, z] = w.position(f64::from(second));
                assert!((0.0..=64.0).contains(&x) && (0.0..=44.0).contains(&y), "{} at {x}, {y}", w.mac);
                assert!((0.9..=1.6).contains(&z), "{} at height {z}", w.mac);
                let [x1, y1, _] = w.position(f64::from(second) + 1.0);
                let step = (x1 - x).hypot(y1 - y);
                // Positions are rounded to the millimetre: up to 1.5 mm more between two of them.
                assert!(step <= w.speed + 1.5e-3, "{} moved {step} m in a second at {}", w.mac, w.speed);
                walked += step;
            }
            // Corners are cut a little between two seconds; the pace is kept otherwise.
            assert!(walked > 0.9 * w.speed * 600.0, "{} walked {walked} m in 600 s", w.mac);
        }
    }

    #[test]
    fn the_same_second_puts_every_device_in_the_same_place_on_every_run() {
        let (a, b) = (walkers(), walkers());
        for (a, b) in a.iter().zip(&b) {
            assert_eq!(a.position(123.4), b.position(123.4));
        }
        // And the devices are spread out, not bunched at one point.
        let starts: std::collections::HashSet<[u64; 2]> =
            a.iter().map(|w| w.position(0.0)).map(|[x, y, _]| [x.to_bits(), y.to_bits()]).collect();
        assert_eq!(starts.len(), a.len());
    }
}
