//! The closed vocabularies of events: categories, types, alarm kinds, exit reasons and
//! configuration operations, each with its wire name.

use serde::{Deserialize, Serialize};

/// Declares a wire-named enum: `as_str`, `Display`, `FromStr` and serde by the wire name.
macro_rules! wire_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $wire:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name {
            $($(#[$vmeta])* #[serde(rename = $wire)] $variant),+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];

            /// The wire name.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $wire),+
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = UnknownName;

            fn from_str(s: &str) -> Result<Self, UnknownName> {
                match s {
                    $($wire => Ok(Self::$variant),)+
                    _ => Err(UnknownName { what: stringify!($name), name: s.to_owned() }),
                }
            }
        }
    };
}

/// A wire name that is not one of its vocabulary's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{name}' is not a known {what}")]
pub struct UnknownName {
    /// The vocabulary.
    pub what: &'static str,
    /// The name read.
    pub name: String,
}

wire_enum! {
    /// `Category` of an event.
    EventCategory {
        /// Positions.
        Location = "LOCATION",
        /// Zone enter, exit and info events.
        Zone = "ZONE",
        /// Site and device alarms.
        Alarm = "ALARM",
        /// A device's own state: offline and online.
        Device = "DEVICE",
    }
}

wire_enum! {
    /// `Type` of an event.
    EventType {
        /// A normalised position.
        LocationRawUpdate = "LOCATION_RAW_UPDATE",
        /// A device entered a zone.
        ZoneEnter = "ZONE_ENTER",
        /// A device left a zone.
        ZoneExit = "ZONE_EXIT",
        /// An `info-event` zone action.
        ZoneInfo = "ZONE_INFO",
        /// A device has stayed in a zone longer than the zone's MaxDwellSeconds: once per stay.
        ZoneDwellExceeded = "ZONE_DWELL_EXCEEDED",
        /// More devices are inside a zone than its MaxOccupancy.
        ZoneOccupancyExceeded = "ZONE_OCCUPANCY_EXCEEDED",
        /// Fewer devices are inside a zone than its MinOccupancy, which they had reached.
        ZoneOccupancyBelow = "ZONE_OCCUPANCY_BELOW",
        /// A zone's count is within its limits again (or reached its MinOccupancy).
        ZoneOccupancyRestored = "ZONE_OCCUPANCY_RESTORED",
        /// An entry whose alarm kind is `site`.
        SiteAlarm = "SITE_ALARM",
        /// An entry whose alarm kind is `device`, or a `device-alarm` action.
        DeviceAlarm = "DEVICE_ALARM",
        /// The command for a device's gateway that accompanies every `DEVICE_ALARM`.
        DeviceAlarmCommand = "DEVICE_ALARM_COMMAND",
        /// A device has sent nothing for DeviceOfflineSeconds.
        DeviceOffline = "DEVICE_OFFLINE",
        /// A device reported offline has sent a position again.
        DeviceOnline = "DEVICE_ONLINE",
        /// Someone acknowledged an alarm.
        AlarmAcknowledged = "ALARM_ACKNOWLEDGED",
        /// Someone resolved an alarm.
        AlarmResolved = "ALARM_RESOLVED",
        /// The condition of an alarm no longer holds: the device left the zone whose entry or
        /// stay raised it, or a device reported offline came back.
        AlarmCleared = "ALARM_CLEARED",
    }
}

impl EventType {
    /// The types the events journal holds, and so the event history and live streams: every
    /// type but positions and device alarm commands.
    pub const JOURNALED: &'static [EventType] = &[
        Self::ZoneEnter,
        Self::ZoneExit,
        Self::ZoneInfo,
        Self::ZoneDwellExceeded,
        Self::ZoneOccupancyExceeded,
        Self::ZoneOccupancyBelow,
        Self::ZoneOccupancyRestored,
        Self::SiteAlarm,
        Self::DeviceAlarm,
        Self::DeviceOffline,
        Self::DeviceOnline,
        Self::AlarmAcknowledged,
        Self::AlarmResolved,
        Self::AlarmCleared,
    ];

    /// The types that raise an alarm a person can acknowledge and resolve (`/v3/alarms`).
    pub const ALARMS: [EventType; 6] = [
        Self::SiteAlarm,
        Self::DeviceAlarm,
        Self::ZoneDwellExceeded,
        Self::ZoneOccupancyExceeded,
        Self::ZoneOccupancyBelow,
        Self::DeviceOffline,
    ];

    /// Whether events of this type raise an alarm ([`EventType::ALARMS`]).
    pub fn is_alarm(self) -> bool {
        Self::ALARMS.contains(&self)
    }

    /// The category events of this type belong to.
    pub const fn category(self) -> EventCategory {
        match self {
            Self::LocationRawUpdate => EventCategory::Location,
            Self::ZoneEnter
            | Self::ZoneExit
            | Self::ZoneInfo
            | Self::ZoneDwellExceeded
            | Self::ZoneOccupancyExceeded
            | Self::ZoneOccupancyBelow
            | Self::ZoneOccupancyRestored => EventCategory::Zone,
            Self::SiteAlarm | Self::DeviceAlarm | Self::DeviceAlarmCommand => EventCategory::Alarm,
            Self::AlarmAcknowledged | Self::AlarmResolved | Self::AlarmCleared => EventCategory::Alarm,
            Self::DeviceOffline | Self::DeviceOnline => EventCategory::Device,
        }
    }
}

wire_enum! {
    /// The last token of a zone event's subject (`<prefix>.events.zone.<ZoneID>.<kind>`).
    ZoneEventKind {
        /// `ZONE_ENTER`.
        Enter = "enter",
        /// `ZONE_EXIT`.
        Exit = "exit",
        /// `ZONE_INFO`.
        Info = "info",
        /// `ZONE_DWELL_EXCEEDED`.
        Dwell = "dwell",
        /// `ZONE_OCCUPANCY_EXCEEDED`, `ZONE_OCCUPANCY_BELOW` and `ZONE_OCCUPANCY_RESTORED`.
        Occupancy = "occupancy",
    }
}

wire_enum! {
    /// The last token of a device event's subject (`<prefix>.events.device.<MAC>.<kind>`).
    DeviceEventKind {
        /// `DEVICE_OFFLINE`.
        Offline = "offline",
        /// `DEVICE_ONLINE`.
        Online = "online",
    }
}

wire_enum! {
    /// `Alarm` of an entry, from its zone's AlertLevel: `site` from SiteAlarmMinLevel, else
    /// `device` from DeviceAlarmMinLevel, else `log`.
    AlarmKind {
        /// A site-wide alarm (`SITE_ALARM`).
        Site = "site",
        /// A device-level alarm (`DEVICE_ALARM` and the device command).
        Device = "device",
        /// Logged only.
        Log = "log",
    }
}

wire_enum! {
    /// Why a device left a zone (`Reason` of `ZONE_EXIT`).
    ExitReason {
        /// It moved out (beyond the tolerance, for the exit delay).
        Position = "position",
        /// The zone was deactivated.
        Deactivated = "deactivated",
        /// The zone was deleted.
        Deleted = "deleted",
        /// The zone's collisions were reset.
        Reset = "reset",
        /// The zone left its time window.
        Window = "window",
        /// The zone's geometry changed (or its mobile source vanished) so the device is outside.
        Geometry = "geometry",
        /// A DeviceList change excluded the device.
        Excluded = "excluded",
        /// The device sent nothing for DeviceTimeoutSeconds.
        Timeout = "timeout",
    }
}

wire_enum! {
    /// `Operation` of a `config.changed` announcement, for changes that are more than a write.
    ConfigOperation {
        /// A zone's collisions were reset (its devices exit with the Reason `reset`).
        Reset = "reset",
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn every_name_reads_back_and_serialises_as_itself() {
        for t in EventType::ALL {
            assert_eq!(t.as_str().parse::<EventType>().unwrap(), *t);
            assert_eq!(serde_json::to_value(t).unwrap(), t.as_str());
        }
        for r in ExitReason::ALL {
            assert_eq!(serde_json::from_value::<ExitReason>(r.as_str().into()).unwrap(), *r);
        }
        assert_eq!(AlarmKind::ALL.iter().map(|a| a.as_str()).collect::<Vec<_>>(), ["site", "device", "log"]);
        assert_eq!(ConfigOperation::Reset.to_string(), "reset");
        assert_eq!(
            "ZONE_BOUNCE".parse::<EventType>().unwrap_err().to_string(),
            "'ZONE_BOUNCE' is not a known EventType"
        );
    }

    #[test]
    fn types_belong_to_their_categories() {
        assert_eq!(EventType::LocationRawUpdate.category(), EventCategory::Location);
        assert_eq!(EventType::ZoneInfo.category(), EventCategory::Zone);
        assert_eq!(EventType::DeviceAlarmCommand.category(), EventCategory::Alarm);
    }
}
