//! Every subject name and queue group of the system, built from one prefix.

/// The prefix used when none is configured (`ZONECAST_SUBJECT_PREFIX`).
pub const DEFAULT_PREFIX: &str = "zonecast";

/// Queue group shared by ingestor replicas on the ingest subject.
pub const INGESTORS: &str = "ingestors";

/// Queue group shared by forwarder replicas on the event subjects.
pub const FORWARDERS: &str = "forwarders";

/// Builds every subject name from a configurable prefix; no other crate writes subject literals.
///
/// Arguments (MACs, zone IDs, kinds) are inserted as single tokens; the bus rejects a subject
/// whose token is empty or holds whitespace or a wildcard when it is used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subjects {
    prefix: String,
}

impl Default for Subjects {
    fn default() -> Self {
        Self::new(DEFAULT_PREFIX)
    }
}

impl Subjects {
    /// Subjects under `prefix` (one or more dot-separated tokens, e.g. `zonecast`).
    pub fn new(prefix: impl Into<String>) -> Self {
        Self { prefix: prefix.into() }
    }

    /// The first token(s) of every subject.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Raw position input, consumed by the `ingestors` queue group: `<prefix>.ingest`.
    pub fn ingest(&self) -> String {
        format!("{}.ingest", self.prefix)
    }

    /// Normalised positions of one device: `<prefix>.positions.<partition>.<mac>`.
    pub fn positions(&self, partition: u32, mac: &str) -> String {
        format!("{}.positions.{partition}.{mac}", self.prefix)
    }

    /// Pattern for all devices of one partition: `<prefix>.positions.<partition>.*`.
    pub fn positions_partition(&self, partition: u32) -> String {
        format!("{}.positions.{partition}.*", self.prefix)
    }

    /// Pattern for one device in whichever partition: `<prefix>.positions.*.<mac>` (evaluators
    /// follow mobile-zone sources outside their own partitions with it).
    pub fn positions_of_device(&self, mac: &str) -> String {
        format!("{}.positions.*.{mac}", self.prefix)
    }

    /// Pattern for every position: `<prefix>.positions.>`.
    pub fn positions_all(&self) -> String {
        format!("{}.positions.>", self.prefix)
    }

    /// A zone event; `kind` is `enter`, `exit` or `info`: `<prefix>.events.zone.<zone_id>.<kind>`.
    pub fn zone_event(&self, zone_id: &str, kind: &str) -> String {
        format!("{}.events.zone.{zone_id}.{kind}", self.prefix)
    }

    /// Pattern for every event of one zone: `<prefix>.events.zone.<zone_id>.>`.
    pub fn zone_events(&self, zone_id: &str) -> String {
        format!("{}.events.zone.{zone_id}.>", self.prefix)
    }

    /// An alarm event; `kind` is `site` or `device`: `<prefix>.events.alarm.<kind>.<mac>`.
    pub fn alarm(&self, kind: &str, mac: &str) -> String {
        format!("{}.events.alarm.{kind}.{mac}", self.prefix)
    }

    /// Pattern for every zone and alarm event: `<prefix>.events.>`.
    pub fn events_all(&self) -> String {
        format!("{}.events.>", self.prefix)
    }

    /// Alarm command for one device, for a device gateway: `<prefix>.devices.<mac>.alarm`.
    pub fn device_alarm_command(&self, mac: &str) -> String {
        format!("{}.devices.{mac}.alarm", self.prefix)
    }

    /// Configuration change announcements: `<prefix>.config.changed`.
    pub fn config_changed(&self) -> String {
        format!("{}.config.changed", self.prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pattern::{Pattern, validate_pattern, validate_subject};

    const MAC: &str = "00:AA:BB:CC:DD:EE";

    fn matches(pattern: &str, subject: &str) -> bool {
        let tokens: Vec<&str> = subject.split('.').collect();
        Pattern::parse(pattern).expect("subject patterns are valid").matches(&tokens)
    }

    #[test]
    fn the_default_prefix_gives_the_subjects_of_the_design() {
        let s = Subjects::default();
        assert_eq!(s.prefix(), "zonecast");
        assert_eq!(s.ingest(), "zonecast.ingest");
        assert_eq!(s.positions(3, MAC), "zonecast.positions.3.00:AA:BB:CC:DD:EE");
        assert_eq!(s.positions_partition(3), "zonecast.positions.3.*");
        assert_eq!(s.positions_all(), "zonecast.positions.>");
        assert_eq!(s.zone_event("42", "enter"), "zonecast.events.zone.42.enter");
        assert_eq!(s.zone_events("42"), "zonecast.events.zone.42.>");
        assert_eq!(s.alarm("device", MAC), "zonecast.events.alarm.device.00:AA:BB:CC:DD:EE");
        assert_eq!(s.events_all(), "zonecast.events.>");
        assert_eq!(s.device_alarm_command(MAC), "zonecast.devices.00:AA:BB:CC:DD:EE.alarm");
        assert_eq!(s.config_changed(), "zonecast.config.changed");
        assert_eq!(INGESTORS, "ingestors");
        assert_eq!(FORWARDERS, "forwarders");
    }

    #[test]
    fn a_custom_prefix_replaces_the_first_token_everywhere() {
        let s = Subjects::new("site7.rtls");
        assert_eq!(s.prefix(), "site7.rtls");
        assert_eq!(s.ingest(), "site7.rtls.ingest");
        assert_eq!(s.events_all(), "site7.rtls.events.>");
    }

    #[test]
    fn every_subject_is_valid_and_every_pattern_is_a_valid_pattern() {
        let s = Subjects::default();
        for subject in [
            s.ingest(),
            s.positions(0, MAC),
            s.zone_event("7", "exit"),
            s.alarm("site", MAC),
            s.device_alarm_command(MAC),
            s.config_changed(),
        ] {
            assert!(validate_subject(&subject).is_ok(), "{subject}");
        }
        for pattern in [s.positions_partition(0), s.positions_all(), s.zone_events("7"), s.events_all()] {
            assert!(validate_pattern(&pattern).is_ok(), "{pattern}");
        }
    }

    #[test]
    fn the_patterns_select_the_subjects_they_are_named_for() {
        let s = Subjects::default();
        assert!(matches(&s.positions_partition(3), &s.positions(3, MAC)));
        assert!(!matches(&s.positions_partition(3), &s.positions(13, MAC)));
        assert!(matches(&s.positions_all(), &s.positions(13, MAC)));
        assert!(matches(&s.zone_events("7"), &s.zone_event("7", "info")));
        assert!(!matches(&s.zone_events("7"), &s.zone_event("70", "info")));
        assert!(matches(&s.events_all(), &s.zone_event("7", "enter")));
        assert!(matches(&s.events_all(), &s.alarm("site", MAC)));
        assert!(!matches(&s.events_all(), &s.positions(1, MAC)));
        assert!(!matches(&s.events_all(), &s.device_alarm_command(MAC)));
        assert!(!matches(&s.events_all(), &s.config_changed()));
    }
}
