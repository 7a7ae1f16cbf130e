//! Every subject name and queue group of the system, built from one prefix and the typed
//! event kinds of the model.

use zonecast_model::{AlarmChange, AlarmKind, Content, DeviceEventKind, Event, EventType, ZoneEventKind};

/// The prefix used when none is configured (`ZONECAST_SUBJECT_PREFIX`).
pub const DEFAULT_PREFIX: &str = "zonecast";

/// Queue group shared by ingestor replicas on the ingest subject.
pub const INGESTORS: &str = "ingestors";

/// Queue group shared by forwarder replicas on the event subjects.
pub const FORWARDERS: &str = "forwarders";

/// Builds every subject name from a configurable prefix; no other crate writes subject literals.
///
/// Arguments (MACs, zone IDs) are inserted as single tokens; the bus rejects a subject whose
/// token is empty or holds whitespace or a wildcard when it is used. Kinds are the model's
/// enums, written by their wire names.
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

    /// `<prefix>.batches.`: what the subject and pattern of every batch of positions begin
    /// with.
    pub fn position_batches_root(&self) -> String {
        format!("{}.batches.", self.prefix)
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

    /// The batches of one partition's positions, one event per line:
    /// `<prefix>.batches.<partition>`: what ingest publishes and the evaluators follow (over
    /// NATS stored in the partition's stream, in one process handed over decoded).
    pub fn position_batch(&self, partition: u32) -> String {
        format!("{}.batches.{partition}", self.prefix)
    }

    /// The batches of several partitions' positions, stored together over NATS:
    /// `<prefix>.batches.all`, one event per line, each partition's lines together and named by
    /// the message's `Zonecast-Sections` header.
    pub fn position_rounds(&self) -> String {
        format!("{}.batches.all", self.prefix)
    }

    /// Pattern for the batches of every partition: `<prefix>.batches.*`.
    pub fn position_batches(&self) -> String {
        format!("{}.batches.*", self.prefix)
    }

    /// Pattern for every position: `<prefix>.positions.>`.
    pub fn positions_all(&self) -> String {
        format!("{}.positions.>", self.prefix)
    }

    /// A zone event: `<prefix>.events.zone.<zone_id>.<enter|exit|info>`.
    pub fn zone_event(&self, zone_id: &str, kind: ZoneEventKind) -> String {
        format!("{}.events.zone.{zone_id}.{kind}", self.prefix)
    }

    /// Pattern for every event of one zone: `<prefix>.events.zone.<zone_id>.>`.
    pub fn zone_events(&self, zone_id: &str) -> String {
        format!("{}.events.zone.{zone_id}.>", self.prefix)
    }

    /// An alarm event: `<prefix>.events.alarm.<site|device>.<mac>` (an entry whose alarm kind
    /// is `log` raises no alarm event).
    pub fn alarm(&self, kind: AlarmKind, mac: &str) -> String {
        format!("{}.events.alarm.{kind}.{mac}", self.prefix)
    }

    /// A person's change of an alarm's state:
    /// `<prefix>.events.alarm.<acknowledged|resolved>.<mac>` (the ZoneID for an alarm about a zone
    /// alone).
    pub fn alarm_change(&self, change: AlarmChange, mac: &str) -> String {
        format!("{}.events.alarm.{}.{mac}", self.prefix, change.as_str())
    }

    /// The end of an alarm's condition (`ALARM_CLEARED`): `<prefix>.events.alarm.cleared.<mac>`.
    pub fn alarm_cleared(&self, mac: &str) -> String {
        format!("{}.events.alarm.cleared.{mac}", self.prefix)
    }

    /// A device event: `<prefix>.events.device.<mac>.<offline|online>`.
    pub fn device_event(&self, mac: &str, kind: DeviceEventKind) -> String {
        format!("{}.events.device.{mac}.{kind}", self.prefix)
    }

    /// Pattern for every zone and alarm event: `<prefix>.events.>`.
    pub fn events_all(&self) -> String {
        format!("{}.events.>", self.prefix)
    }

    /// The patterns of the zone and alarm events of `types` (empty: every type of the events
    /// journal) in `zones` (upper-case IDs; empty: every zone): an event of those types and
    /// zones is on a subject that one of them matches. Alarms name no zone in their subject, so
    /// their zones are for the payload to tell; device events belong to no zone. Types outside
    /// the events journal add nothing.
    pub fn events_narrowed(&self, types: &[EventType], zones: &[String]) -> Vec<String> {
        let all = EventType::JOURNALED;
        let types: Vec<EventType> = if types.is_empty() { all.to_vec() } else { types.to_vec() };
        if zones.is_empty() && all.iter().all(|t| types.contains(t)) {
            return vec![self.events_all()];
        }
        let zone_tokens: Vec<&str> =
            if zones.is_empty() { vec!["*"] } else { zones.iter().map(String::as_str).collect() };
        let mut patterns = Vec::new();
        let zone_kinds = [
            (EventType::ZoneEnter, ZoneEventKind::Enter),
            (EventType::ZoneExit, ZoneEventKind::Exit),
            (EventType::ZoneInfo, ZoneEventKind::Info),
            (EventType::ZoneDwellExceeded, ZoneEventKind::Dwell),
            (EventType::ZoneOccupancyExceeded, ZoneEventKind::Occupancy),
            (EventType::ZoneOccupancyBelow, ZoneEventKind::Occupancy),
            (EventType::ZoneOccupancyRestored, ZoneEventKind::Occupancy),
        ];
        // The occupancy types share one subject.
        let mut kinds: Vec<ZoneEventKind> =
            zone_kinds.iter().filter(|(t, _)| types.contains(t)).map(|(_, k)| *k).collect();
        kinds.dedup();
        for zone in &zone_tokens {
            if kinds.len() == ZoneEventKind::ALL.len() {
                patterns.push(self.zone_events(zone));
            } else {
                patterns.extend(kinds.iter().map(|kind| format!("{}.events.zone.{zone}.{kind}", self.prefix)));
            }
        }
        for (kind, alarm) in [(EventType::SiteAlarm, AlarmKind::Site), (EventType::DeviceAlarm, AlarmKind::Device)] {
            if types.contains(&kind) {
                patterns.push(self.alarm(alarm, "*"));
            }
        }
        for change in [AlarmChange::Acknowledge, AlarmChange::Resolve] {
            if types.contains(&change.event_type()) {
                patterns.push(self.alarm_change(change, "*"));
            }
        }
        if types.contains(&EventType::AlarmCleared) {
            patterns.push(self.alarm_cleared("*"));
        }
        // Device events belong to no zone: a stream of some zones has none of them.
        if zones.is_empty() {
            for (kind, token) in [
                (EventType::DeviceOffline, DeviceEventKind::Offline),
                (EventType::DeviceOnline, DeviceEventKind::Online),
            ] {
                if types.contains(&kind) {
                    patterns.push(self.device_event("*", token));
                }
            }
        }
        patterns
    }

    /// Alarm command for one device, for a device gateway: `<prefix>.devices.<mac>.alarm`.
    pub fn device_alarm_command(&self, mac: &str) -> String {
        format!("{}.devices.{mac}.alarm", self.prefix)
    }

    /// The subject `event` is published on, from its type and its zone or device: zone events,
    /// alarms and device alarm commands. `None` for a position (its subject needs the partition
    /// count: [`Subjects::positions`]) and for an event without the device its subject names.
    pub fn of_event(&self, event: &Event) -> Option<String> {
        let mac = event.source.mac.as_ref().map(|m| m.as_str());
        let zone = |id: &uuid::Uuid, kind| {
            self.zone_event(id.hyphenated().encode_upper(&mut uuid::Uuid::encode_buffer()), kind)
        };
        Some(match &event.content {
            Content::LocationRawUpdate(_) => return None,
            Content::ZoneEnter(c) => zone(&c.zone_id, ZoneEventKind::Enter),
            Content::ZoneExit(c) => zone(&c.enter.zone_id, ZoneEventKind::Exit),
            Content::ZoneInfo(c) => zone(&c.zone_id, ZoneEventKind::Info),
            Content::ZoneDwellExceeded(c) => zone(&c.enter.zone_id, ZoneEventKind::Dwell),
            Content::ZoneOccupancyExceeded(c) | Content::ZoneOccupancyBelow(c) | Content::ZoneOccupancyRestored(c) => {
                zone(&c.zone_id, ZoneEventKind::Occupancy)
            }
            Content::SiteAlarm(_) => self.alarm(AlarmKind::Site, mac?),
            Content::DeviceAlarm(_) => self.alarm(AlarmKind::Device, mac?),
            Content::DeviceAlarmCommand(_) => self.device_alarm_command(mac?),
            Content::DeviceOffline(_) => self.device_event(mac?, DeviceEventKind::Offline),
            Content::DeviceOnline(_) => self.device_event(mac?, DeviceEventKind::Online),
            Content::AlarmAcknowledged(r) => self.alarm_change(AlarmChange::Acknowledge, &alarm_token(r)?),
            Content::AlarmResolved(r) => self.alarm_change(AlarmChange::Resolve, &alarm_token(r)?),
            Content::AlarmCleared(_) => self.alarm_cleared(mac?),
        })
    }

    /// How far behind each evaluator and forwarder replica is, reported four times a second;
    /// ingest pushes back on it: `<prefix>.pipeline.lag`.
    pub fn pipeline_lag(&self) -> String {
        format!("{}.pipeline.lag", self.prefix)
    }

    /// A stored http-request action request of one zone, for the evaluators' `http-actions`
    /// journal consumer: `<prefix>.actions.http.<zone_id>`.
    pub fn http_action(&self, zone_id: &str) -> String {
        format!("{}.actions.http.{zone_id}", self.prefix)
    }

    /// Pattern for every stored action request: `<prefix>.actions.>`.
    pub fn actions_all(&self) -> String {
        format!("{}.actions.>", self.prefix)
    }

    /// Configuration change announcements: `<prefix>.config.changed`.
    pub fn config_changed(&self) -> String {
        format!("{}.config.changed", self.prefix)
    }

    /// What each evaluator and forwarder replica has in force: `<prefix>.config.applied`.
    pub fn config_applied(&self) -> String {
        format!("{}.config.applied", self.prefix)
    }

    /// The API's roll call when it starts: every evaluator and forwarder replica answers with
    /// its `config.applied` report at once. `<prefix>.config.roll`.
    pub fn config_roll(&self) -> String {
        format!("{}.config.roll", self.prefix)
    }

    /// The last known position of a mobile-zone source, published again by the evaluator that
    /// owns the device when a change gives it a mobile zone, so that every evaluator places the
    /// zone at once: `<prefix>.config.source.<MAC>`.
    pub fn source_position(&self, mac: &str) -> String {
        format!("{}.config.source.{mac}", self.prefix)
    }

    /// Every republished source position: `<prefix>.config.source.*`.
    pub fn source_positions(&self) -> String {
        format!("{}.config.source.*", self.prefix)
    }
}

/// The last token of an alarm change's subject: the alarm's device, or the zone of an alarm
/// about a zone alone (occupancy).
fn alarm_token(record: &zonecast_model::AlarmRecord) -> Option<String> {
    match (&record.mac, &record.zone_id) {
        (Some(mac), _) => Some(mac.as_str().to_owned()),
        (None, Some(zone)) => Some(zonecast_model::format_id(zone)),
        (None, None) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pattern::{Pattern, validate_pattern, validate_subject};
    use ZoneEventKind::{Enter, Exit, Info};

    const MAC: &str = "00:AA:BB:CC:DD:EE";

    fn matches(pattern: &str, subject: &str) -> bool {
        let tokens: Vec<&str> = subject.split('.').collect();
        Pattern::parse(pattern).expect("subject patterns are valid").matches(&tokens)
    }

    #[test]
    fn narrowed_event_patterns_match_exactly_the_subjects_of_their_types_and_zones() {
        let s = Subjects::new("p");
        let zone = "6F1C4C0E-2B1E-4C55-9E59-0A3E1A2B3C4D".to_owned();
        assert_eq!(s.events_narrowed(&[], &[]), ["p.events.>"]);
        assert_eq!(
            s.events_narrowed(&[], std::slice::from_ref(&zone)),
            [
                format!("p.events.zone.{zone}.>"),
                "p.events.alarm.site.*".to_owned(),
                "p.events.alarm.device.*".to_owned(),
                "p.events.alarm.acknowledged.*".to_owned(),
                "p.events.alarm.resolved.*".to_owned(),
                "p.events.alarm.cleared.*".to_owned()
            ]
        );
        let cleared = s.events_narrowed(&[EventType::AlarmCleared], &[]);
        assert_eq!(cleared, ["p.events.alarm.cleared.*"]);
        assert!(matches(&cleared[0], &s.alarm_cleared(MAC)));
        let enter_exit = s.events_narrowed(&[EventType::ZoneEnter, EventType::ZoneExit], std::slice::from_ref(&zone));
        assert_eq!(enter_exit, [format!("p.events.zone.{zone}.enter"), format!("p.events.zone.{zone}.exit")]);
        let alarms = s.events_narrowed(&[EventType::SiteAlarm], &[]);
        assert_eq!(alarms, ["p.events.alarm.site.*"]);
        let of_any_zone = s.events_narrowed(&[EventType::ZoneEnter], &[]);
        assert!(matches(&of_any_zone[0], &s.zone_event(&zone, Enter)));
        assert!(!matches(&of_any_zone[0], &s.zone_event(&zone, Exit)));
        assert!(matches(&alarms[0], &s.alarm(AlarmKind::Site, MAC)));
        let offline = s.events_narrowed(&[EventType::DeviceOffline], &[]);
        assert_eq!(offline, ["p.events.device.*.offline"]);
        assert!(matches(&offline[0], &s.device_event(MAC, DeviceEventKind::Offline)));
        assert!(s.events_narrowed(&[EventType::DeviceOnline], std::slice::from_ref(&zone)).is_empty());
        for pattern in s.events_narrowed(&[EventType::ZoneInfo, EventType::DeviceAlarm], &[zone.clone(), "Z2".into()]) {
            validate_pattern(&pattern).expect("a valid pattern");
        }
    }

    #[test]
    fn the_default_prefix_gives_the_documented_subjects() {
        let s = Subjects::default();
        assert_eq!(s.prefix(), "zonecast");
        assert_eq!(s.ingest(), "zonecast.ingest");
        assert_eq!(s.positions(3, MAC), "zonecast.positions.3.00:AA:BB:CC:DD:EE");
        assert_eq!(s.positions_partition(3), "zonecast.positions.3.*");
        assert_eq!(s.positions_all(), "zonecast.positions.>");
        assert_eq!(s.zone_event("42", Enter), "zonecast.events.zone.42.enter");
        assert_eq!(s.zone_events("42"), "zonecast.events.zone.42.>");
        assert_eq!(s.alarm(AlarmKind::Device, MAC), "zonecast.events.alarm.device.00:AA:BB:CC:DD:EE");
        assert_eq!(s.events_all(), "zonecast.events.>");
        assert_eq!(s.device_alarm_command(MAC), "zonecast.devices.00:AA:BB:CC:DD:EE.alarm");
        assert_eq!(
            s.alarm_change(AlarmChange::Acknowledge, MAC),
            "zonecast.events.alarm.acknowledged.00:AA:BB:CC:DD:EE"
        );
        assert_eq!(s.alarm_change(AlarmChange::Resolve, MAC), "zonecast.events.alarm.resolved.00:AA:BB:CC:DD:EE");
        assert_eq!(s.http_action("42"), "zonecast.actions.http.42");
        assert_eq!(s.actions_all(), "zonecast.actions.>");
        assert_eq!(s.config_changed(), "zonecast.config.changed");
        assert_eq!(s.config_applied(), "zonecast.config.applied");
        assert_eq!(s.config_roll(), "zonecast.config.roll");
        assert_eq!(s.source_position(MAC), "zonecast.config.source.00:AA:BB:CC:DD:EE");
        assert_eq!(s.source_positions(), "zonecast.config.source.*");
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
            s.zone_event("7", Exit),
            s.alarm(AlarmKind::Site, MAC),
            s.device_alarm_command(MAC),
            s.http_action("7"),
            s.config_changed(),
            s.config_applied(),
            s.source_position(MAC),
        ] {
            assert!(validate_subject(&subject).is_ok(), "{subject}");
        }
        for pattern in [
            s.positions_partition(0),
            s.positions_all(),
            s.zone_events("7"),
            s.events_all(),
            s.source_positions(),
            s.actions_all(),
        ] {
            assert!(validate_pattern(&pattern).is_ok(), "{pattern}");
        }
    }

    #[test]
    fn the_patterns_select_the_subjects_they_are_named_for() {
        let s = Subjects::default();
        assert!(matches(&s.positions_partition(3), &s.positions(3, MAC)));
        assert!(!matches(&s.positions_partition(3), &s.positions(13, MAC)));
        assert!(matches(&s.positions_all(), &s.positions(13, MAC)));
        assert!(matches(&s.zone_events("7"), &s.zone_event("7", Info)));
        assert!(!matches(&s.zone_events("7"), &s.zone_event("70", Info)));
        assert!(matches(&s.events_all(), &s.zone_event("7", Enter)));
        assert!(matches(&s.events_all(), &s.alarm(AlarmKind::Site, MAC)));
        assert!(!matches(&s.events_all(), &s.positions(1, MAC)));
        assert!(!matches(&s.events_all(), &s.device_alarm_command(MAC)));
        assert!(!matches(&s.events_all(), &s.config_changed()));
        assert!(matches(&s.actions_all(), &s.http_action("7")));
        assert!(!matches(&s.events_all(), &s.http_action("7")));
        assert!(!matches(&s.actions_all(), &s.zone_event("7", Enter)));
        assert!(matches(&s.source_positions(), &s.source_position(MAC)));
        assert!(!matches(&s.positions_all(), &s.source_position(MAC)));
    }

    #[test]
    fn an_event_is_published_on_the_subject_of_its_type_and_zone_or_device() {
        use chrono::Utc;
        use zonecast_model::{Alarm, EventId, EventSource, ZoneInfo};
        let s = Subjects::default();
        let zone_id = uuid::Uuid::from_u128(0xab);
        let alarm = Alarm { zone_id, zone_name: "z".into(), alert_level: 9, collision_id: zone_id };
        let event = |content| Event {
            event_id: EventId::generate(Utc::now()),
            timestamp: Utc::now(),
            local_timestamp: Utc::now(),
            source: EventSource { mac: Some(MAC.parse().unwrap()), gateway_uri: None, site_id: 1 },
            content,
            device: None,
        };
        let info = ZoneInfo { zone_id, zone_name: "z".into(), message: "m".into(), collision_id: zone_id };
        assert_eq!(
            s.of_event(&event(Content::ZoneInfo(info))).unwrap(),
            "zonecast.events.zone.00000000-0000-0000-0000-0000000000AB.info"
        );
        assert_eq!(s.of_event(&event(Content::SiteAlarm(alarm.clone()))).unwrap(), s.alarm(AlarmKind::Site, MAC));
        assert_eq!(s.of_event(&event(Content::DeviceAlarm(alarm.clone()))).unwrap(), s.alarm(AlarmKind::Device, MAC));
        assert_eq!(s.of_event(&event(Content::DeviceAlarmCommand(alarm))).unwrap(), s.device_alarm_command(MAC));
    }
}
