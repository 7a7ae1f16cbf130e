//! Domain model of zonecast: validated zones, settings, radii, named devices, MQTT connections,
//! certificate profiles, the typed event contract and current collisions. JSON becomes these
//! types at the edge; nothing past the edge sees unvalidated input.

mod action;
mod action_request;
mod alarm_record;
mod alarm_selection;
mod certificate;
mod collision;
mod connection;
mod device;
mod event;
mod fields;
mod invalid;
pub mod lag;
mod limits;
mod mac;
mod position;
mod radius;
pub mod schema;
mod secret;
mod setting;
mod shelf;
mod zone;
mod zone_input;

pub use action::{ActionSecret, ActionTrigger, SECRET_CHARS, ZoneAction};
pub use action_request::ActionRequest;
pub use alarm_record::{
    AlarmChange, AlarmKey, AlarmNote, AlarmUpdate, CLEARED_NOTE, MAX_ALARM_NOTE_CHARS, RESOLVED_BY_ZONECAST,
    StoredAlarm,
};
pub use alarm_selection::{AlarmSelection, MAX_ALARM_IDS};
pub use certificate::{CertificateProfileInput, CertificateProfileSummary};
pub use collision::{Collision, Presence};
pub use connection::{Connection, ConnectionInput, ConnectionView, Topic};
pub use device::{
    DEVICE_KINDS, Device, DeviceInput, MAX_DEVICE_TEXT_CHARS, MAX_PROPERTIES, MAX_PROPERTIES_BYTES, NewDevice,
};
pub use event::{
    Alarm, AlarmCleared, AlarmKind, AlarmRecord, AlarmState, ConfigApplied, ConfigChanged, ConfigKind, ConfigOperation,
    Content, DeviceEventKind, DevicePresence, DeviceTag, Event, EventCategory, EventId, EventSource, EventType,
    ExitReason, IdSource, LocationRawUpdate, UnknownName, ZoneDwell, ZoneEnter, ZoneEventKind, ZoneExit, ZoneInfo,
    ZoneOccupancy, format_timestamp,
};
pub use invalid::Invalid;
pub use limits::Limits;
pub use mac::{MAC_PATTERN, Mac};
pub use position::{PASSTHROUGH_FIELDS, PositionFix, PositionUpdate, parse_vec3};
pub use radius::{MAX_RADIUS, RadiusMap};
pub use secret::Secret;
pub use setting::{Setting, SettingInput, SettingName, SettingValue, SettingView, Settings};
pub use shelf::{MAX_SHELVE_SECONDS, Shelf, ShelfTarget, ShelveInput};
pub use zone::{CollidingDevice, InclusionPolicy, Zone, ZoneSpec, format_id};
pub use zone_input::{Macs, NewZone, ZoneInput, ZoneUpdate};
pub use zonecast_geometry::{GeometryType, Shape, Vec3};
