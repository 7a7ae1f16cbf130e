//! The events that tell a change of a stored alarm's state (`ALARM_ACKNOWLEDGED`,
//! `ALARM_RESOLVED`), made by a person through the API or by zonecast when the condition of an
//! acknowledged alarm clears. They are appended to the events journal, so the live streams, the
//! event history, NATS subscribers and MQTT forwarding see them.

use std::time::Duration;

use chrono::{DateTime, Utc};
use zonecast_bus::journal::Record;
use zonecast_bus::{Journal, Subjects};
use zonecast_model::{AlarmChange, AlarmRecord, Content, Event, EventId, EventSource};
use zonecast_runtime::backoff::Backoff;

/// How long a change's event is tried on the journal before the failure is logged: the change
/// itself is stored already and stands.
const PUBLISH_FOR: Duration = Duration::from_secs(5);

/// Where the events of alarm changes go: the events journal of site `site_id`.
#[derive(Clone)]
pub struct ChangeEvents {
    /// The events journal.
    pub journal: std::sync::Arc<dyn Journal>,
    /// Its subjects.
    pub subjects: Subjects,
    /// The site the events are of.
    pub site_id: i64,
}

impl ChangeEvents {
    /// The event telling `change` of `record`, made `at`.
    fn event(&self, change: AlarmChange, record: &AlarmRecord, at: DateTime<Utc>) -> Event {
        let content = match change {
            AlarmChange::Acknowledge => Content::AlarmAcknowledged(record.clone()),
            AlarmChange::Resolve => Content::AlarmResolved(record.clone()),
        };
        Event {
            event_id: EventId::generate(at),
            timestamp: at,
            local_timestamp: Utc::now(),
            source: EventSource { mac: record.mac.clone(), gateway_uri: None, site_id: self.site_id },
            content,
            device: None,
        }
    }

    /// Appends the event of `change` to the events journal, trying again with backoff for
    /// [`PUBLISH_FOR`]. The change is stored already and stands whatever happens here: an event
    /// that cannot be appended is missing from the streams and the history, and counted in
    /// `zonecast_api_alarm_change_events_lost_total`.
    pub async fn publish(&self, change: AlarmChange, record: &AlarmRecord, at: DateTime<Utc>) {
        let event = self.event(change, record, at);
        let (Some(subject), Ok(payload)) = (self.subjects.of_event(&event), serde_json::to_vec(&event)) else {
            metrics::counter!("zonecast_api_alarm_change_events_lost_total").increment(1);
            tracing::error!(alarm = %zonecast_model::format_id(&record.alarm_id), "alarm change event could not be written");
            return;
        };
        let record = Record { subject, payload: payload.into(), id: event.event_id.to_string() };
        let deadline = tokio::time::Instant::now() + PUBLISH_FOR;
        let mut backoff = Backoff::new(Duration::from_millis(50), Duration::from_secs(1));
        loop {
            match self.journal.append(vec![record.clone()]).await {
                Ok(()) => return,
                Err(e) if tokio::time::Instant::now() >= deadline => {
                    metrics::counter!("zonecast_api_alarm_change_events_lost_total").increment(1);
                    tracing::warn!(error = %e, subject = %record.subject, "alarm change stored but its event not published");
                    return;
                }
                Err(_) => tokio::time::sleep(backoff.next_delay()).await,
            }
        }
    }
}
