//! Event identities: time-ordered UUIDs (version 7) drawn from a seeded source, so that the
//! services draw them without a system call each and tests draw the same ones every run.

use std::cell::RefCell;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use uuid::Uuid;

/// `EventID` of an event: a version 7 UUID, the same on every copy of the event (the bus
/// message, the MQTT messages forwarded from it, the body of an http-request action), so that
/// consumers can drop duplicates. Written as an upper-case UUID, read in any case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EventId(pub Uuid);

impl EventId {
    /// A fresh ID for an event produced at `now`, from this thread's source.
    pub fn generate(now: DateTime<Utc>) -> Self {
        thread_local! {
            static SOURCE: RefCell<IdSource> = RefCell::new(IdSource::random());
        }
        Self(SOURCE.with(|s| s.borrow_mut().next(now)))
    }

    /// The UUID.
    pub fn uuid(&self) -> Uuid {
        self.0
    }
}

impl std::fmt::Display for EventId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0.hyphenated().encode_upper(&mut Uuid::encode_buffer()))
    }
}

impl Serialize for EventId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.0.hyphenated().encode_upper(&mut Uuid::encode_buffer()))
    }
}

impl<'de> Deserialize<'de> for EventId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Uuid::deserialize(d).map(Self)
    }
}

/// A source of version 7 UUIDs: the Unix time in milliseconds of the instant given, then a
/// counter that keeps the IDs one source draws within a millisecond in order, then random
/// bits from a generator seeded once. [`IdSource::seeded`] draws the same sequence for the
/// same instants every time, for deterministic tests.
#[derive(Debug, Clone)]
pub struct IdSource {
    state: u64,
    last_millis: u64,
    counter: u16,
    /// The time part is fixed ([`IdSource::derived`]).
    pinned: bool,
}

/// The counter's 12 bits (the UUID's `rand_a`).
const COUNTER_MAX: u16 = 0x0fff;

impl IdSource {
    /// A source seeded from the operating system's random generator.
    pub fn random() -> Self {
        let (hi, lo) = Uuid::new_v4().as_u64_pair();
        Self::seeded(hi ^ lo.rotate_left(17))
    }

    /// A source that draws the same IDs for the same instants on every run.
    pub fn seeded(seed: u64) -> Self {
        Self { state: seed, last_millis: 0, counter: 0, pinned: false }
    }

    /// A source whose IDs follow from `origin` alone: its time and seed come from `origin`,
    /// whatever instant each ID is drawn at. What one input causes, drawn from a source
    /// derived from the input's own ID, gets the same IDs each time the input is evaluated
    /// again from the same state, so a repeat is recognisable (and the journal stores it once).
    pub fn derived(origin: Uuid) -> Self {
        let (hi, lo) = origin.as_u64_pair();
        let millis = origin.get_timestamp().map_or(0, |t| {
            let (secs, nanos) = t.to_unix();
            secs * 1000 + u64::from(nanos / 1_000_000)
        });
        Self { state: hi ^ lo.rotate_left(29) ^ 0xA5A5_5A5A_F00D_D00D, last_millis: millis, counter: 0, pinned: true }
    }

    /// A source whose IDs follow from `key` and the instant `at` alone: what the clock causes
    /// (an entry delay or exit delay that runs out, a device timeout) is drawn from a source
    /// keyed by the device, the zone and the instant it became due, so that evaluating the same
    /// positions again from the same state gives it the same IDs, whenever the clock fires.
    pub fn keyed(at: DateTime<Utc>, key: &[&[u8]]) -> Self {
        // FNV-1a, 64 bits: stable across builds and processes.
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for part in key {
            for byte in part.iter().chain(std::iter::once(&0xff)) {
                hash = (hash ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3);
            }
        }
        let mut bytes = [0u8; 10];
        bytes[2..].copy_from_slice(&hash.to_be_bytes());
        let millis = u64::try_from(at.timestamp_millis()).unwrap_or(0);
        Self::derived(uuid::Builder::from_unix_timestamp_millis(millis, &bytes).into_uuid())
    }

    /// The next ID, timed `at` (an instant before the previous one's counts as that one).
    pub fn next(&mut self, at: DateTime<Utc>) -> Uuid {
        let millis = u64::try_from(at.timestamp_millis()).unwrap_or(0);
        if !self.pinned && millis > self.last_millis {
            self.last_millis = millis;
            self.counter = 0;
        } else if self.counter < COUNTER_MAX {
            self.counter += 1;
        } else {
            // 4096 IDs in one millisecond: borrow the next one, as RFC 9562 allows.
            self.last_millis += 1;
            self.counter = 0;
        }
        let random = self.splitmix();
        let mut bytes = [0u8; 10];
        bytes[..2].copy_from_slice(&self.counter.to_be_bytes());
        bytes[2..].copy_from_slice(&random.to_be_bytes());
        // The builder masks the version and variant bits over the counter's top and the random bits.
        uuid::Builder::from_unix_timestamp_millis(self.last_millis, &bytes).into_uuid()
    }

    /// SplitMix64: a fast generator with a full period, good enough for the random part of an
    /// identifier whose uniqueness rests on the time and the seed.
    fn splitmix(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    #[test]
    fn derived_sources_draw_the_same_ids_from_the_same_origin_at_any_time() {
        let origin = super::IdSource::seeded(11).next(chrono::Utc::now());
        let draw = |at: chrono::DateTime<chrono::Utc>| {
            let mut ids = super::IdSource::derived(origin);
            [ids.next(at), ids.next(at + chrono::Duration::seconds(5))]
        };
        let first = draw(chrono::Utc::now());
        assert_eq!(first, draw(chrono::Utc::now() + chrono::Duration::minutes(3)));
        assert_ne!(first[0], first[1]);
        assert_ne!(first[0], origin);
        assert_eq!(first[0].get_timestamp(), origin.get_timestamp(), "the origin's time");
        let other = super::IdSource::seeded(12).next(chrono::Utc::now());
        assert_ne!(super::IdSource::derived(other).next(chrono::Utc::now()), first[0]);
    }

    #[test]
    fn keyed_sources_draw_the_same_ids_for_the_same_key_and_instant() {
        let due = chrono::Utc::now();
        let draw = |key: &[&[u8]], at| super::IdSource::keyed(at, key).next(chrono::Utc::now());
        assert_eq!(draw(&[b"mac", b"zone"], due), draw(&[b"mac", b"zone"], due));
        assert_ne!(draw(&[b"mac", b"zone"], due), draw(&[b"mac", b"zone2"], due));
        assert_ne!(draw(&[b"ma", b"czone"], due), draw(&[b"mac", b"zone"], due), "parts are kept apart");
        assert_ne!(draw(&[b"mac", b"zone"], due), draw(&[b"mac", b"zone"], due + chrono::Duration::milliseconds(1)));
    }

    use super::*;

    fn at(ms: i64) -> DateTime<Utc> {
        DateTime::from_timestamp_millis(1_795_000_000_000 + ms).unwrap()
    }

    #[test]
    fn ids_are_version_7_and_ordered_by_time_then_draw() {
        let mut ids = IdSource::seeded(7);
        let drawn: Vec<Uuid> = [0, 0, 0, 5, 5, 9].into_iter().map(|ms| ids.next(at(ms))).collect();
        for id in &drawn {
            assert_eq!(id.get_version_num(), 7);
            assert_eq!(id.get_variant(), uuid::Variant::RFC4122);
        }
        assert!(drawn.windows(2).all(|w| w[0] < w[1]), "{drawn:?}");
        let ts = drawn[3].get_timestamp().unwrap().to_unix();
        assert_eq!(ts.0 * 1000 + u64::from(ts.1) / 1_000_000, 1_795_000_000_005);
    }

    #[test]
    fn a_seeded_source_draws_the_same_ids_and_other_seeds_others() {
        let draw = |seed| {
            let mut ids = IdSource::seeded(seed);
            (0..3).map(|i| ids.next(at(i))).collect::<Vec<_>>()
        };
        assert_eq!(draw(1), draw(1));
        assert_ne!(draw(1), draw(2));
    }

    #[test]
    fn a_clock_that_steps_back_keeps_the_order() {
        let mut ids = IdSource::seeded(3);
        let a = ids.next(at(10));
        let b = ids.next(at(2));
        assert!(a < b);
    }

    #[test]
    fn event_ids_are_written_upper_case_and_read_in_any_case() {
        let id = EventId(Uuid::from_u128(0x0190_abcd_ef00_7000_8000_0000_0000_00ff));
        let text = serde_json::to_value(id).unwrap();
        assert_eq!(text, "0190ABCD-EF00-7000-8000-0000000000FF");
        assert_eq!(serde_json::from_value::<EventId>(text.as_str().unwrap().to_lowercase().into()).unwrap(), id);
        assert_eq!(id.to_string(), text);
    }
}
