//! Zone actions: what a zone does when a device enters or leaves it.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::fields::Fields;
use crate::{Invalid, Limits};

/// When an action runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ActionTrigger {
    /// On entry (default).
    #[default]
    Enter,
    /// On exit.
    Exit,
    /// On entry and on exit.
    Both,
}

/// One validated `ZoneActions` item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum ZoneAction {
    /// Log line plus a `ZONE_INFO` event.
    InfoEvent {
        /// Text of the log line and event.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
        /// When it runs.
        on: ActionTrigger,
    },
    /// Device alarm command plus a `DEVICE_ALARM` event.
    DeviceAlarm {
        /// When it runs.
        on: ActionTrigger,
    },
    /// HTTP request carrying the triggering event as its JSON body.
    HttpRequest {
        /// `http://` or `https://` URI.
        uri: String,
        /// HTTP method, upper-case (default POST).
        #[schemars(with = "HttpMethod")]
        method: String,
        /// Extra request headers.
        headers: BTreeMap<String, String>,
        /// When it runs.
        on: ActionTrigger,
    },
}

const METHODS: [&str; 5] = ["GET", "POST", "PUT", "PATCH", "DELETE"];

/// The methods an `http-request` action may use (read in any case).
#[derive(JsonSchema)]
#[schemars(rename_all = "UPPERCASE")]
#[allow(dead_code)]
pub(crate) enum HttpMethod {
    Get,
    Post,
    Put,
    Patch,
    Delete,
}

/// A `ZoneActions` item as [`ZoneAction::parse`] reads it: the schema of the request body.
/// Fields other than `type` are optional and `null` counts as absent; unknown fields are
/// ignored.
#[derive(JsonSchema)]
#[schemars(
    tag = "type",
    rename_all = "kebab-case",
    description = "A zone action; fields other than type are optional, null counts as absent, unknown fields are ignored."
)]
#[allow(dead_code)]
pub(crate) enum ZoneActionInput {
    /// Writes a log line and publishes a `ZONE_INFO` event.
    InfoEvent {
        /// Text of the log line and event.
        #[schemars(extend("x-limit" = {"maxLength": "info_message_chars"}))]
        message: Option<String>,
        /// When it runs (default `enter`).
        on: Option<ActionTrigger>,
    },
    /// Publishes a device alarm command and a `DEVICE_ALARM` event.
    DeviceAlarm {
        /// When it runs (default `enter`).
        on: Option<ActionTrigger>,
    },
    /// Sends the triggering event as the JSON body of a request.
    HttpRequest {
        /// An `http://` or `https://` URI with a host.
        #[schemars(with = "HttpUri")]
        uri: String,
        /// HTTP method (default POST).
        method: Option<HttpMethod>,
        /// Extra request headers: names of letters, digits, `-` and `_`, values without line
        /// breaks (`null` sends an empty value).
        headers: Option<std::collections::BTreeMap<HeaderName, Option<HeaderValue>>>,
        /// When it runs (default `enter`).
        on: Option<ActionTrigger>,
    },
}

/// The `uri` of an `http-request` action.
struct HttpUri;

impl JsonSchema for HttpUri {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        "HttpUri".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "string", "format": "uri", "pattern": "^[Hh][Tt][Tt][Pp][Ss]?://[^/?#\\s]"})
    }
}

/// A header name: letters, digits, `-` and `_`.
#[derive(JsonSchema)]
#[schemars(transparent)]
#[allow(dead_code)]
pub(crate) struct HeaderName(#[schemars(regex(pattern = "^[A-Za-z0-9_-]+$"))] String);

/// A header value: no line breaks.
#[derive(JsonSchema)]
#[schemars(transparent)]
#[allow(dead_code)]
pub(crate) struct HeaderValue(#[schemars(regex(pattern = "^[^\\r\\n]*$"))] String);

impl ZoneAction {
    /// When this action runs.
    pub fn trigger(&self) -> ActionTrigger {
        match self {
            Self::InfoEvent { on, .. } | Self::DeviceAlarm { on } | Self::HttpRequest { on, .. } => *on,
        }
    }

    /// Validates one `ZoneActions` item.
    ///
    /// An info-event's message travels in every `ZONE_INFO` event of the zone, so it is bounded
    /// by [`Limits::info_message_chars`].
    pub fn parse(value: &Value, limits: &Limits) -> Result<Self, Invalid> {
        let f = Fields::of(value, "")?;
        let on = match f.string("on")? {
            None => ActionTrigger::Enter,
            Some("enter") => ActionTrigger::Enter,
            Some("exit") => ActionTrigger::Exit,
            Some("both") => ActionTrigger::Both,
            Some(other) => {
                return Err(Invalid::new("on", format!("must be enter, exit or both, got '{other}'")));
            }
        };
        match f.string("type")? {
            None => Err(Invalid::new("type", "is required (info-event, device-alarm or http-request)")),
            Some("info-event") => {
                let message = f.string("message")?;
                let most = limits.info_message_chars;
                // Counting stops just past the bound: a huge message costs no more than a long one.
                if let Some(m) = message
                    && m.chars().nth(most).is_some()
                {
                    return Err(Invalid::new("message", format!("must be at most {most} characters")));
                }
                Ok(Self::InfoEvent { message: message.map(str::to_owned), on })
            }
            Some("device-alarm") => Ok(Self::DeviceAlarm { on }),
            Some("http-request") => {
                let uri = f.string("uri")?.ok_or_else(|| Invalid::new("uri", "is required for http-request"))?;
                let parsed =
                    url::Url::parse(uri).map_err(|e| Invalid::new("uri", format!("is not a valid URI: {e}")))?;
                if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
                    return Err(Invalid::new("uri", "must be an http:// or https:// URI with a host"));
                }
                let method = f.string("method")?.unwrap_or("POST").to_ascii_uppercase();
                if !METHODS.contains(&method.as_str()) {
                    return Err(Invalid::new("method", format!("must be one of {}", METHODS.join(", "))));
                }
                let mut headers = BTreeMap::new();
                if let Some(h) = f.raw("headers") {
                    let hf = Fields::of(h, "headers")?;
                    for (name, _) in h.as_object().into_iter().flatten() {
                        let valid_name =
                            !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b));
                        if !valid_name {
                            return Err(Invalid::new(format!("headers.{name}"), "is not a valid header name"));
                        }
                        let v = hf.string(name).map_err(|e| e.within("headers"))?.unwrap_or("");
                        if v.contains(['\r', '\n']) {
                            return Err(Invalid::new(format!("headers.{name}"), "must not contain line breaks"));
                        }
                        headers.insert(name.clone(), v.to_owned());
                    }
                }
                Ok(Self::HttpRequest { uri: uri.to_owned(), method, headers, on })
            }
            Some(other) => Err(Invalid::new(
                "type",
                format!("unknown action type '{other}' (expected info-event, device-alarm or http-request)"),
            )),
        }
    }
}
