//! MQTT connections (operations 17–20): what the client sends and what is stored and returned.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::fields::{Fields, type_name};
use crate::{Invalid, Limits, Secret, format_id};

/// One forwarding target of a connection: an MQTT topic and the filter chain events must pass.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Topic {
    /// MQTT topic name, no wildcards.
    pub topic: String,
    /// The chain as sent (a JSON array); it compiled when the connection was written.
    #[serde(rename = "FilterChain")]
    pub filter_chain: Value,
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
    /// JSON of operations 17–20; never carries the password.
    pub fn to_json(&self) -> Value {
        json!({
            "ConnectionID": format_id(&self.id),
            "host": self.host,
            "port": self.port,
            "TLS": self.tls,
            "CertificateProfileID": self.certificate_profile_id.as_ref().map(format_id),
            "username": self.username,
            "topics": self.topics,
        })
    }
}

/// The body of operations 18 and 20, validated. `password`: `None` when absent (an update
/// keeps the stored one), `Some(None)` when sent as null or "" (clears it).
#[derive(Debug, Clone)]
pub struct ConnectionInput {
    /// Broker host.
    pub host: String,
    /// Broker port (default 8883).
    pub port: u16,
    /// TLS on (default true).
    pub tls: bool,
    /// Required when `tls`.
    pub certificate_profile_id: Option<Uuid>,
    /// MQTT user name.
    pub username: Option<String>,
    /// MQTT password.
    pub password: Option<Option<Secret>>,
    /// Topics with compiled-and-checked filter chains.
    pub topics: Vec<Topic>,
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
        let port = f.int("port", 1, 65_535)?.unwrap_or(8883) as u16;
        let tls = f.bool("TLS")?.unwrap_or(true);
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
            .map(|(i, item)| parse_topic(item, &mut budget).map_err(|e| e.within(&format!("topics[{i}]"))))
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

fn parse_topic(item: &Value, budget: &mut zonecast_filter::Budget) -> Result<Topic, Invalid> {
    let f = Fields::of(item, "")?;
    let topic = f.string("topic")?.ok_or_else(|| Invalid::new("topic", "is required"))?;
    if topic.is_empty() || topic.len() > 65_535 {
        return Err(Invalid::new("topic", "must be 1 to 65535 bytes"));
    }
    if topic.contains(['+', '#', '\0']) {
        return Err(Invalid::new("topic", "must be a topic name without wildcards (+, #) or NUL"));
    }
    let filter_chain = match f.raw("FilterChain") {
        None => Value::Array(Vec::new()),
        Some(chain @ Value::Array(_)) => chain.clone(),
        Some(other) => return Err(Invalid::new("FilterChain", format!("must be an array, got {}", type_name(other)))),
    };
    zonecast_filter::compile_in(&filter_chain, budget)
        .map_err(|e| Invalid::new(format!("FilterChain{}", e.path), e.message))?;
    Ok(Topic { topic: topic.to_owned(), filter_chain })
}
