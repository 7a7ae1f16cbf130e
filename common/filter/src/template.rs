//! Filter templates: named presets standing for a condition on an event's `Category` or `Type`.

use serde_json::Value;

/// A `FilterTemplate` name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, schemars::JsonSchema)]
#[schemars(rename = "TemplateName", rename_all = "snake_case")]
pub(crate) enum Template {
    /// `LOCATION_RAW_UPDATE`, `ZONE_ENTER` and `ZONE_EXIT` events.
    Dashboard,
    /// Category `LOCATION`.
    PositionEvents,
    /// Category `ZONE`.
    ZoneEvents,
    /// Category `ALARM`.
    AlarmEvents,
    /// Every event.
    All,
}

impl Template {
    /// The accepted names, for error messages.
    pub(crate) const NAMES: &'static str = "dashboard, position_events, zone_events, alarm_events, all";

    /// Parses a template name (exact, lower case).
    pub(crate) fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "dashboard" => Self::Dashboard,
            "position_events" => Self::PositionEvents,
            "zone_events" => Self::ZoneEvents,
            "alarm_events" => Self::AlarmEvents,
            "all" => Self::All,
            _ => return None,
        })
    }

    /// Whether `event` is one the template stands for.
    // The envelope's category and type names are spelled out here because the model crate, which
    // owns them, depends on this one.
    pub(crate) fn matches(self, event: &Value) -> bool {
        self.matches_kind(text(event, "Category"), text(event, "Type"))
    }

    /// Whether an event with this `Category` and `Type` is one the template stands for.
    pub(crate) fn matches_kind(self, category: Option<&str>, kind: Option<&str>) -> bool {
        match self {
            Self::Dashboard => matches!(kind, Some("LOCATION_RAW_UPDATE" | "ZONE_ENTER" | "ZONE_EXIT")),
            Self::PositionEvents => category == Some("LOCATION"),
            Self::ZoneEvents => category == Some("ZONE"),
            Self::AlarmEvents => category == Some("ALARM"),
            Self::All => true,
        }
    }
}

fn text<'a>(event: &'a Value, key: &str) -> Option<&'a str> {
    event.get(key)?.as_str()
}

#[cfg(test)]
mod tests {
    use super::Template;
    use serde_json::json;

    #[test]
    fn names_round_trip() {
        for name in Template::NAMES.split(", ") {
            assert!(Template::from_name(name).is_some(), "{name}");
        }
        assert_eq!(Template::from_name("Dashboard"), None);
        assert_eq!(Template::from_name(""), None);
    }

    #[test]
    fn non_string_fields_do_not_match() {
        let event = json!({"Category": 1, "Type": ["ZONE_ENTER"]});
        assert!(!Template::ZoneEvents.matches(&event));
        assert!(!Template::Dashboard.matches(&event));
        assert!(Template::All.matches(&event));
    }
}
