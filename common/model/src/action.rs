//! Zone actions: what a zone does when a device enters or leaves it.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::fields::Fields;
use crate::{Invalid, Limits, Secret};

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
    /// When the stay passes the zone's MaxDwellSeconds (`ZONE_DWELL_EXCEEDED`).
    Dwell,
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
        /// Whether the requests are signed with a secret; the secret itself is never returned.
        #[serde(default)]
        has_secret: bool,
        /// The signing secret, sealed; kept in the store, never returned by the API (see
        /// [`ZoneAction::hide_secret`]).
        #[serde(rename = "secret_sealed", default, skip_serializing_if = "Option::is_none")]
        #[schemars(skip)]
        secret: Option<ActionSecret>,
    },
}

/// Shortest and longest `secret` of an `http-request` action, in characters (the request
/// body's schema, `ActionSecretText`, states the same bounds).
pub const SECRET_CHARS: (usize, usize) = (16, 256);

/// The signing secret of an `http-request` action, by where it stands between the request
/// body and the store. Only [`ActionSecret::Sealed`] can be serialized: a secret in clear never
/// reaches the store, whatever path a zone takes to it.
#[derive(Clone, PartialEq)]
pub enum ActionSecret {
    /// As a client sent it; the API seals it before the zone is stored.
    Given(Secret),
    /// Left out of a write: the zone's stored action to the same `uri` keeps its secret.
    Kept,
    /// Sealed with the deployment's key (base64), as the store and the evaluators hold it.
    Sealed(String),
}

impl std::fmt::Debug for ActionSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Given(_) => "Given(***)",
            Self::Kept => "Kept",
            Self::Sealed(_) => "Sealed(***)",
        })
    }
}

impl Serialize for ActionSecret {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Sealed(text) => s.serialize_str(text),
            Self::Given(_) | Self::Kept => {
                Err(serde::ser::Error::custom("an http-request secret must be sealed before it is written"))
            }
        }
    }
}

impl<'de> Deserialize<'de> for ActionSecret {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Self::Sealed)
    }
}

/// The methods an `http-request` action may use (read in any case).
#[derive(Clone, Copy, JsonSchema)]
#[schemars(rename_all = "UPPERCASE")]
pub(crate) enum HttpMethod {
    Get,
    Post,
    Put,
    Patch,
    Delete,
}

impl HttpMethod {
    /// Every method, in the order messages list them.
    const ALL: [Self; 5] = [Self::Get, Self::Post, Self::Put, Self::Patch, Self::Delete];

    /// The method's name, upper-case.
    fn as_str(self) -> &'static str {
        match self {
            Self::Get => "GET",
            Self::Post => "POST",
            Self::Put => "PUT",
            Self::Patch => "PATCH",
            Self::Delete => "DELETE",
        }
    }

    /// The method named `name` in any case.
    fn named(name: &str) -> Result<Self, Invalid> {
        Self::ALL.into_iter().find(|m| m.as_str().eq_ignore_ascii_case(name)).ok_or_else(|| {
            let names: Vec<&str> = Self::ALL.into_iter().map(Self::as_str).collect();
            Invalid::new("method", format!("must be one of {}", names.join(", ")))
        })
    }
}

/// A `ZoneActions` item as [`ZoneActionInput::read`] reads it: the schema of the request body.
/// Fields other than `type` are optional and `null` counts as absent (but removes a `secret`);
/// unknown fields are ignored. [`ZoneAction`] is made of it with the defaults filled in.
#[derive(JsonSchema)]
#[schemars(
    tag = "type",
    rename_all = "kebab-case",
    description = "A zone action; fields other than type are optional, null counts as absent (except for secret, where null removes the stored secret), unknown fields are ignored."
)]
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
        /// Secret that signs every request (`X-Zonecast-Signature`); write-only, never
        /// returned. Left out of a zone update, the stored action with the same `uri` keeps its
        /// secret; `null` removes it.
        #[schemars(with = "Option<ActionSecretText>")]
        secret: Option<Option<ActionSecretText>>,
    },
}

/// The `secret` of an `http-request` action: 16 to 256 characters, write-only.
#[derive(JsonSchema)]
#[schemars(transparent, extend("writeOnly" = true))]
pub(crate) struct ActionSecretText(#[schemars(length(min = 16, max = 256))] String);

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
#[derive(PartialEq, Eq, PartialOrd, Ord, JsonSchema)]
#[schemars(transparent)]
pub(crate) struct HeaderName(#[schemars(regex(pattern = "^[A-Za-z0-9_-]+$"))] String);

/// A header value: no line breaks.
#[derive(JsonSchema)]
#[schemars(transparent)]
pub(crate) struct HeaderValue(#[schemars(regex(pattern = "^[^\\r\\n]*$"))] String);

/// The `secret` of an `http-request` action: `None` when left out, `Some(None)` for `null`.
fn secret(f: &Fields<'_>) -> Result<Option<Option<ActionSecretText>>, Invalid> {
    if !f.has("secret") {
        return Ok(None);
    }
    let Some(text) = f.string("secret")? else { return Ok(Some(None)) };
    let (least, most) = SECRET_CHARS;
    let chars = text.chars().take(most + 1).count();
    if !(least..=most).contains(&chars) {
        return Err(Invalid::new("secret", format!("must be {least} to {most} characters long")));
    }
    Ok(Some(Some(ActionSecretText(text.to_owned()))))
}

/// The `headers` of an `http-request` action: names checked before their values, in the
/// order sent; `null` values kept as `None`.
fn headers(f: &Fields<'_>) -> Result<Option<BTreeMap<HeaderName, Option<HeaderValue>>>, Invalid> {
    let Some(h) = f.raw("headers") else { return Ok(None) };
    let hf = Fields::of(h, "headers")?;
    let mut headers = BTreeMap::new();
    for (name, _) in h.as_object().into_iter().flatten() {
        let valid_name = !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b));
        if !valid_name {
            return Err(Invalid::new(format!("headers.{name}"), "is not a valid header name"));
        }
        let value = hf.string(name).map_err(|e| e.within("headers"))?;
        if value.is_some_and(|v| v.contains(['\r', '\n'])) {
            return Err(Invalid::new(format!("headers.{name}"), "must not contain line breaks"));
        }
        headers.insert(HeaderName(name.clone()), value.map(|v| HeaderValue(v.to_owned())));
    }
    Ok(Some(headers))
}

impl ZoneActionInput {
    /// Reads one `ZoneActions` item field by field, each failure naming the field: `on`, then
    /// `type`, then the fields of that type.
    ///
    /// An info-event's message travels in every `ZONE_INFO` event of the zone, so it is bounded
    /// by [`Limits::info_message_chars`].
    fn read(value: &Value, limits: &Limits) -> Result<Self, Invalid> {
        let f = Fields::of(value, "")?;
        let on = match f.string("on")? {
            None => None,
            Some("enter") => Some(ActionTrigger::Enter),
            Some("exit") => Some(ActionTrigger::Exit),
            Some("both") => Some(ActionTrigger::Both),
            Some("dwell") => Some(ActionTrigger::Dwell),
            Some(other) => {
                return Err(Invalid::new("on", format!("must be enter, exit, both or dwell, got '{other}'")));
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
                let method = f.string("method")?.map(HttpMethod::named).transpose()?;
                let headers = headers(&f)?;
                Ok(Self::HttpRequest { uri: uri.to_owned(), method, headers, on, secret: secret(&f)? })
            }
            Some(other) => Err(Invalid::new(
                "type",
                format!("unknown action type '{other}' (expected info-event, device-alarm or http-request)"),
            )),
        }
    }
}

/// The action with its defaults: `on` is `enter`, `method` POST, a `null` header value empty.
/// A `secret` left out is [`ActionSecret::Kept`], `null` is none; `has_secret` tells whether
/// one was sent.
impl From<ZoneActionInput> for ZoneAction {
    fn from(input: ZoneActionInput) -> Self {
        match input {
            ZoneActionInput::InfoEvent { message, on } => Self::InfoEvent { message, on: on.unwrap_or_default() },
            ZoneActionInput::DeviceAlarm { on } => Self::DeviceAlarm { on: on.unwrap_or_default() },
            ZoneActionInput::HttpRequest { uri, method, headers, on, secret } => {
                let secret = match secret {
                    None => Some(ActionSecret::Kept),
                    Some(None) => None,
                    Some(Some(ActionSecretText(text))) => Some(ActionSecret::Given(Secret::new(text))),
                };
                Self::HttpRequest {
                    uri,
                    method: method.unwrap_or(HttpMethod::Post).as_str().to_owned(),
                    headers: headers
                        .into_iter()
                        .flatten()
                        .map(|(HeaderName(name), value)| (name, value.map(|HeaderValue(v)| v).unwrap_or_default()))
                        .collect(),
                    on: on.unwrap_or_default(),
                    has_secret: matches!(secret, Some(ActionSecret::Given(_))),
                    secret,
                }
            }
        }
    }
}

/// Settles the secrets of the `http-request` actions of a zone write against the zone's stored
/// `actions`: an action that left `secret` out takes the stored secret of the action to the same
/// `uri` (the one at the same position first, else the first with a secret), or none when there
/// is no such action, so a secret is never carried to another receiver. `has_secret` then tells
/// whether a secret is held.
pub(crate) fn settle_secrets(new: &mut [ZoneAction], stored: &[ZoneAction]) {
    let sealed_for = |target: &str, action: &ZoneAction| match action {
        ZoneAction::HttpRequest { uri, secret: Some(s @ ActionSecret::Sealed(_)), .. } if uri == target => {
            Some(s.clone())
        }
        _ => None,
    };
    for (i, action) in new.iter_mut().enumerate() {
        if let ZoneAction::HttpRequest { uri, secret, has_secret, .. } = action {
            if matches!(secret, Some(ActionSecret::Kept)) {
                *secret = stored
                    .get(i)
                    .and_then(|a| sealed_for(uri, a))
                    .or_else(|| stored.iter().find_map(|a| sealed_for(uri, a)));
            }
            *has_secret = secret.is_some();
        }
    }
}

impl ZoneAction {
    /// When this action runs.
    pub fn trigger(&self) -> ActionTrigger {
        match self {
            Self::InfoEvent { on, .. } | Self::DeviceAlarm { on } | Self::HttpRequest { on, .. } => *on,
        }
    }

    /// Drops the sealed secret from what the API returns; `has_secret` still tells that one is
    /// stored.
    pub fn hide_secret(&mut self) {
        if let Self::HttpRequest { secret, .. } = self {
            *secret = None;
        }
    }

    /// Seals a secret sent in clear with `seal`, which returns the sealed text.
    pub fn seal_secret<E>(&mut self, seal: impl FnOnce(&Secret) -> Result<String, E>) -> Result<(), E> {
        if let Self::HttpRequest { secret, .. } = self
            && let Some(ActionSecret::Given(plain)) = secret
        {
            *secret = Some(ActionSecret::Sealed(seal(plain)?));
        }
        Ok(())
    }

    /// Validates one `ZoneActions` item: [`ZoneActionInput::read`], then the defaults filled in.
    pub fn parse(value: &Value, limits: &Limits) -> Result<Self, Invalid> {
        ZoneActionInput::read(value, limits).map(Self::from)
    }
}
