//! MQTT connections: what the client sends and what is stored and returned.

use schemars::{JsonSchema, Schema};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use uuid::Uuid;
use zonecast_filter::FilterSchema;

use crate::fields::Fields;
use crate::schema::{UpperUuid, UuidOrEmpty};
use crate::{Invalid, Limits, Secret, format_id};

/// One forwarding target of a connection: an MQTT topic and the filter chain events must pass.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Topic {
    /// MQTT topic name, no wildcards.
    pub topic: String,
    /// The chain as sent (a JSON array); it compiled when the connection was written.
    #[serde(rename = "FilterChain")]
    #[schemars(with = "Vec<FilterSchema>")]
    pub filter_chain: Value,
}

/// A topic of a connection and the filters an event must pass to be published to it.
#[derive(JsonSchema)]
struct TopicInput {
    /// MQTT topic name (1 to 65535 bytes) without wildcards (`+`, `#`) or NUL.
    #[schemars(length(min = 1, max = 65_535), regex(pattern = "^[^+#\\u0000]*$"))]
    topic: String,
    /// Filters an event must pass to go to the topic; absent or empty passes every event.
    #[schemars(rename = "FilterChain", with = "Option<Vec<FilterSchema>>")]
    filter_chain: Option<Vec<Value>>,
}

impl TopicInput {
    /// Reads a topic, the name before the chain; the chain is compiled by [`TopicInput::compile`].
    fn read(item: &Value) -> Result<Self, Invalid> {
        let f = Fields::of(item, "")?;
        let topic = f.string("topic")?.ok_or_else(|| Invalid::new("topic", "is required"))?;
        if topic.is_empty() || topic.len() > 65_535 {
            return Err(Invalid::new("topic", "must be 1 to 65535 bytes"));
        }
        if topic.contains(['+', '#', '\0']) {
            return Err(Invalid::new("topic", "must be a topic name without wildcards (+, #) or NUL"));
        }
        let filter_chain = f.array("FilterChain")?.cloned();
        Ok(Self { topic: topic.to_owned(), filter_chain })
    }

    /// The topic with its chain compiled within `budget` (absent, the empty chain).
    fn compile(self, budget: &mut zonecast_filter::Budget) -> Result<Topic, Invalid> {
        let filter_chain = Value::Array(self.filter_chain.unwrap_or_default());
        zonecast_filter::compile_in(&filter_chain, budget)
            .map_err(|e| Invalid::new(format!("FilterChain{}", e.path), e.message))?;
        Ok(Topic { topic: self.topic, filter_chain })
    }
}

/// A connection as the API returns it: never with its password.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[schemars(rename = "Connection", deny_unknown_fields)]
pub struct ConnectionView {
    /// Identity.
    #[serde(rename = "ConnectionID")]
    #[schemars(with = "UpperUuid")]
    pub id: String,
    /// Broker host name or address.
    pub host: String,
    /// Broker port.
    #[schemars(range(min = 1))]
    pub port: u16,
    /// Whether TLS is used.
    #[serde(rename = "TLS")]
    pub tls: bool,
    /// Certificate profile used for TLS (null without TLS).
    #[serde(rename = "CertificateProfileID")]
    #[schemars(with = "Option<UpperUuid>")]
    pub certificate_profile_id: Option<String>,
    /// MQTT user name.
    pub username: Option<String>,
    /// Where events go.
    pub topics: Vec<Topic>,
}

/// A stored MQTT connection without its password (that is stored sealed beside it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Connection {
    /// Identity.
    pub id: Uuid,
    /// Broker host name or address.
    pub host: String,
    /// Broker port.
    pub port: u16,
    /// Whether to use TLS.
    pub tls: bool,
    /// Certificate profile used for TLS.
    pub certificate_profile_id: Option<Uuid>,
    /// MQTT user name.
    pub username: Option<String>,
    /// Whether a password is stored.
    pub has_password: bool,
    /// Where events go.
    pub topics: Vec<Topic>,
}

impl Connection {
    /// JSON of the connection routes; never carries the password.
    pub fn to_json(&self) -> ConnectionView {
        ConnectionView {
            id: format_id(&self.id),
            host: self.host.clone(),
            port: self.port,
            tls: self.tls,
            certificate_profile_id: self.certificate_profile_id.as_ref().map(format_id),
            username: self.username.clone(),
            topics: self.topics.clone(),
        }
    }
}

/// The body of a connection create or update, validated. `password`: `None` when absent (an update
/// keeps the stored one), `Some(None)` when sent as null or "" (clears it).
///
/// Its JSON Schema is the body as [`ConnectionInput::parse`] reads it: `null` counts as absent,
/// unknown fields (`ConnectionID` among them) are ignored. A `CertificateProfileID` that names
/// no profile, and a filter chain that does not compile, are answered with 422.
#[derive(Debug, Clone, JsonSchema)]
#[schemars(
    transform = tls_needs_a_profile,
    description = "An MQTT connection as written: null counts as absent, unknown fields (ConnectionID among them) are ignored. A CertificateProfileID naming no profile, or a FilterChain that does not compile, is 422."
)]
pub struct ConnectionInput {
    /// Broker host name or IP address: at most 253 bytes without white space or `/?#@`
    /// (surrounding white space is trimmed).
    #[schemars(regex(pattern = "^\\s*[^\\s/?#@]{1,253}\\s*$"))]
    pub host: String,
    /// Broker port: when left out, 8883 with TLS and 1883 without (the MQTT ports registered
    /// for each).
    #[schemars(with = "Option<u16>", range(min = 1), extend("default" = 8883))]
    pub port: u16,
    /// Whether to use TLS (default true).
    #[schemars(rename = "TLS", with = "Option<bool>", extend("default" = true))]
    pub tls: bool,
    /// Certificate profile for TLS; required when TLS is true.
    #[schemars(rename = "CertificateProfileID", with = "Option<UuidOrEmpty>")]
    pub certificate_profile_id: Option<Uuid>,
    /// MQTT user name ("" for none).
    pub username: Option<String>,
    /// MQTT password ("" or null for none); never returned. Left out of an update, the stored
    /// one is kept.
    #[schemars(with = "Option<String>", extend("writeOnly" = true))]
    pub password: Option<Option<Secret>>,
    /// Topics with compiled-and-checked filter chains.
    #[schemars(with = "Option<Vec<TopicInput>>", extend("x-limit" = {"maxItems": "topics_per_connection"}))]
    pub topics: Vec<Topic>,
}

/// The port of a connection that names none: MQTT over TLS listens on 8883, plain MQTT on 1883.
pub fn default_port(tls: bool) -> u16 {
    if tls { 8883 } else { 1883 }
}

/// With TLS (the default), a non-empty `CertificateProfileID` is required.
fn tls_needs_a_profile(schema: &mut Schema) {
    schema.insert("if".into(), json!({"properties": {"TLS": {"const": false}}, "required": ["TLS"]}));
    schema.insert(
        "else".into(),
        json!({"required": ["CertificateProfileID"], "properties": {"CertificateProfileID": {"type": "string", "minLength": 1}}}),
    );
}

impl ConnectionInput {
    /// Validates a connection body: host, port range, TLS needing a profile, topic names
    /// without wildcards, filter chains that compile; topics, filters and regexes within
    /// `limits`, the chains of all topics bounded together.
    pub fn parse(value: &Value, limits: &Limits) -> Result<Self, Invalid> {
        let f = Fields::of(value, "")?;
        let host = f.string("host")?.ok_or_else(|| Invalid::new("host", "is required"))?.trim().to_owned();
        if host.is_empty() || host.len() > 253 || host.contains(|c: char| c.is_whitespace() || "/?#@".contains(c)) {
            return Err(Invalid::new("host", "must be a host name or IP address"));
        }
        let tls = f.bool("TLS")?.unwrap_or(true);
        let port = f.int("port", 1, 65_535)?.map_or_else(|| default_port(tls), |p| p as u16);
        let certificate_profile_id = f
            .string("CertificateProfileID")?
            .filter(|s| !s.is_empty())
            .map(|s| {
                s.parse::<Uuid>().map_err(|_| Invalid::new("CertificateProfileID", format!("'{s}' is not a UUID")))
            })
            .transpose()?;
        if tls && certificate_profile_id.is_none() {
            return Err(Invalid::new("CertificateProfileID", "is required when TLS is true"));
        }
        let username = f.string("username")?.filter(|s| !s.is_empty()).map(str::to_owned);
        let password = if f.has("password") {
            Some(f.string("password")?.filter(|s| !s.is_empty()).map(Secret::new))
        } else {
            None
        };
        let items = f.array("topics")?.map(Vec::as_slice).unwrap_or_default();
        let most = limits.topics_per_connection;
        if items.len() > most {
            return Err(Invalid::new("topics", format!("must have at most {most} entries, got {}", items.len())));
        }
        // One budget for every topic: the connection's filters and regexes are bounded together,
        // and each distinct regex is compiled once.
        let mut budget = zonecast_filter::Budget::new(limits.filter_bounds());
        let topics = items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                TopicInput::read(item)
                    .and_then(|t| t.compile(&mut budget))
                    .map_err(|e| e.within(&format!("topics[{i}]")))
            })
            .collect::<Result<_, _>>()?;
        Ok(Self { host, port, tls, certificate_profile_id, username, password, topics })
    }

    /// The connection to store under `id`; `had_password` says whether one is stored already.
    pub fn into_connection(self, id: Uuid, had_password: bool) -> Connection {
        let has_password = match &self.password {
            None => had_password,
            Some(p) => p.is_some(),
        };
        Connection {
            id,
            host: self.host,
            port: self.port,
            tls: self.tls,
            certificate_profile_id: if self.tls { self.certificate_profile_id } else { None },
            username: self.username,
            has_password,
            topics: self.topics,
        }
    }
}
