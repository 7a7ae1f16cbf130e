//! The routing table: which connection topics an event goes to. Pure and synchronous: built
//! from the stored connections, consulted once per event.

use std::sync::Arc;

use serde_json::Value;
use uuid::Uuid;
use zonecast_filter::Chain;
use zonecast_model::Connection;

/// One `topics` element of a connection: the MQTT topic and its compiled chain.
#[derive(Debug, Clone)]
pub struct Route {
    /// MQTT topic name (shared with every queued message for it).
    pub topic: Arc<str>,
    /// The compiled `FilterChain`.
    pub chain: Chain,
}

/// A stored topic that cannot be used (its chain no longer compiles, or its name is not a
/// publishable topic); it is left out of the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The connection.
    pub connection: Uuid,
    /// Index in its `topics`.
    pub index: usize,
    /// Why, with the place in the chain.
    pub reason: String,
}

/// Whether `topic` can be published to: 1 to 65535 bytes, no wildcard, no NUL. A broker
/// drops the client that publishes to anything else, which would stall the connection.
fn publishable(topic: &str) -> bool {
    !topic.is_empty() && topic.len() <= 65_535 && !topic.contains(['+', '#', '\0'])
}

/// Why an event cannot be routed.
#[derive(Debug, thiserror::Error)]
pub enum BadEvent {
    /// The payload does not parse.
    #[error("not JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// It parses but is no event envelope.
    #[error("not a JSON object")]
    NotObject,
}

/// An event as filter chains read it: parsed once into the JSON tree their selectors walk.
#[derive(Debug)]
pub struct Envelope(Value);

impl Envelope {
    /// Parses an event's payload; it must be a JSON object.
    pub fn parse(payload: &[u8]) -> Result<Self, BadEvent> {
        match serde_json::from_slice(payload)? {
            tree @ Value::Object(_) => Ok(Self(tree)),
            _ => Err(BadEvent::NotObject),
        }
    }

    /// The tree.
    pub fn tree(&self) -> &Value {
        &self.0
    }

    /// Its `Category` and `Type`, for [`Chain::admits`].
    pub fn kind(&self) -> (Option<&str>, Option<&str>) {
        let text = |name: &str| self.0.get(name).and_then(Value::as_str);
        (text("Category"), text("Type"))
    }
}

/// The fields of an event read before, and often instead of, the whole tree: `Category` and
/// `Type` (which decide template-only chains, see [`zonecast_filter::Chain::decide`]) and
/// `EventID`. Read without building the tree: strings are borrowed where they have no escapes.
#[derive(Debug, Default, serde::Deserialize)]
pub struct Head<'a> {
    #[serde(rename = "Category", borrow, default)]
    category: Text<'a>,
    #[serde(rename = "Type", borrow, default)]
    kind: Text<'a>,
    #[serde(rename = "EventID", borrow, default)]
    event_id: Text<'a>,
}

impl<'a> Head<'a> {
    /// The head of a JSON object; `None` for anything else, or for an object that serde cannot
    /// read field by field (a key twice), which the whole tree then decides.
    pub fn parse(payload: &'a [u8]) -> Option<Self> {
        let first = payload.iter().find(|b| !b.is_ascii_whitespace())?;
        if *first != b'{' {
            return None;
        }
        serde_json::from_slice(payload).ok()
    }

    /// Its `Category` and `Type`, as [`Envelope::kind`] reads them.
    pub fn kind(&self) -> (Option<&str>, Option<&str>) {
        (self.category.0.as_deref(), self.kind.0.as_deref())
    }

    /// Its `EventID`, when a string.
    pub fn event_id(&self) -> Option<&str> {
        self.event_id.0.as_deref()
    }
}

/// A field's text when it is a JSON string, `None` when it is any other value (as
/// `Value::as_str` reads it).
#[derive(Debug, Default)]
struct Text<'a>(Option<std::borrow::Cow<'a, str>>);

impl<'de: 'a, 'a> serde::Deserialize<'de> for Text<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Visitor<'a> {
            type Value = Text<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Text(Some(v.into())))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Text(Some(v.to_owned().into())))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(Text(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(Text(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(Text(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Text(None))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Text(None))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(Text(None))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?.is_some() {}
                Ok(Text(None))
            }
        }
        deserializer.deserialize_any(Visitor(std::marker::PhantomData))
    }
}

/// Every connection's topics with compiled chains, in connection order.
#[derive(Debug, Clone, Default)]
pub struct Router {
    connections: Vec<(Uuid, Vec<Route>)>,
}

impl Router {
    /// Compiles the chains of `connections`, each connection's within `bounds` together (as the
    /// API checked them). Topics were checked when the connections were written, so one that
    /// fails now (stored by another version, or under other limits) only drops that topic,
    /// reported in the second value.
    pub fn build<'a>(
        connections: impl IntoIterator<Item = &'a Connection>,
        bounds: zonecast_filter::Bounds,
    ) -> (Self, Vec<Skipped>) {
        let mut skipped = Vec::new();
        let connections = connections
            .into_iter()
            .map(|c| {
                // The connection's topics share their regexes and their bounds, as when it was
                // written.
                let mut budget = zonecast_filter::Budget::new(bounds);
                let routes = c
                    .topics
                    .iter()
                    .enumerate()
                    .filter_map(|(index, t)| {
                        let compiled = if publishable(&t.topic) {
                            zonecast_filter::compile_in(&t.filter_chain, &mut budget)
                                .map_err(|e| format!("FilterChain{e}"))
                        } else {
                            Err("topic is not a publishable MQTT topic name".to_owned())
                        };
                        match compiled {
                            Ok(chain) => Some(Route { topic: Arc::from(t.topic.as_str()), chain }),
                            Err(reason) => {
                                skipped.push(Skipped { connection: c.id, index, reason });
                                None
                            }
                        }
                    })
                    .collect();
                (c.id, routes)
            })
            .collect();
        (Self { connections }, skipped)
    }

    /// Each connection's usable topics, in order.
    pub fn each(&self) -> impl Iterator<Item = (Uuid, &[Route])> + '_ {
        self.connections.iter().map(|(id, routes)| (*id, routes.as_slice()))
    }

    /// The connections in the table, in order.
    pub fn connections(&self) -> impl Iterator<Item = Uuid> + '_ {
        self.connections.iter().map(|(id, _)| *id)
    }

    /// Every (connection, topic) whose chain `event` matches, in connection then topic order.
    /// A topic listed twice in one connection is yielded twice, as the event is published to
    /// each element.
    pub fn route<'a>(&'a self, event: &'a Value) -> impl Iterator<Item = (Uuid, &'a Arc<str>)> + 'a {
        self.connections.iter().flat_map(move |(id, routes)| {
            routes.iter().filter(move |r| r.chain.matches(event)).map(move |r| (*id, &r.topic))
        })
    }

    /// Whether any chain could take an event of this `Category` and `Type` (see
    /// [`zonecast_filter::Chain::admits`]); when not, the event need not be parsed at all.
    pub fn admits(&self, category: Option<&str>, kind: Option<&str>) -> bool {
        self.connections.iter().any(|(_, routes)| routes.iter().any(|r| r.chain.admits(category, kind)))
    }

    /// Like [`Router::route`], with the connection's position in the table instead of its id,
    /// for callers that keep per-connection state in a parallel `Vec`.
    pub fn route_indexed<'a>(&'a self, event: &'a Value) -> impl Iterator<Item = (usize, &'a Arc<str>)> + 'a {
        self.connections.iter().enumerate().flat_map(move |(i, (_, routes))| {
            routes.iter().filter(move |r| r.chain.matches(event)).map(move |r| (i, &r.topic))
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;
    use zonecast_filter::Bounds;
    use zonecast_model::Topic;

    use super::*;

    fn connection(topics: Value) -> Connection {
        Connection {
            id: Uuid::new_v4(),
            host: "localhost".into(),
            port: 1883,
            tls: false,
            certificate_profile_id: None,
            username: None,
            has_password: false,
            topics: serde_json::from_value::<Vec<Topic>>(topics).unwrap(),
        }
    }

    fn routed(router: &Router, event: &Value) -> Vec<(Uuid, String)> {
        router.route(event).map(|(id, t)| (id, t.to_string())).collect()
    }

    fn position(mac: &str, z: f64) -> Value {
        json!({"Category": "LOCATION", "Type": "LOCATION_RAW_UPDATE", "Source": {"MAC": mac},
               "Content": {"Position": [1.0, 2.0, z]}})
    }

    #[test]
    fn an_event_goes_to_every_topic_whose_chain_it_matches_in_order() {
        let a = connection(json!([
            {"topic": "a/all", "FilterChain": []},
            {"topic": "a/zones", "FilterChain": [{"FilterTemplate": "zone_events"}]},
            {"topic": "a/low", "FilterChain": [{"Selector": "Content.Position.2", "Type": "lt", "Match": 1}]},
        ]));
        let b = connection(json!([{"topic": "b/positions", "FilterChain": [{"FilterTemplate": "position_events"}]}]));
        let (router, skipped) = Router::build([&a, &b], Bounds::DEFAULT);
        assert!(skipped.is_empty());
        assert_eq!(
            routed(&router, &position("00:00:00:00:00:01", 0.5)),
            vec![(a.id, "a/all".into()), (a.id, "a/low".into()), (b.id, "b/positions".into())]
        );
        assert_eq!(
            routed(&router, &position("00:00:00:00:00:01", 3.0)),
            vec![(a.id, "a/all".into()), (b.id, "b/positions".into())]
        );
        let enter = json!({"Category": "ZONE", "Type": "ZONE_ENTER", "Content": {}});
        assert_eq!(routed(&router, &enter), vec![(a.id, "a/all".into()), (a.id, "a/zones".into())]);
        let indexed: Vec<usize> = router.route_indexed(&enter).map(|(i, _)| i).collect();
        assert_eq!(indexed, vec![0, 0]);
    }

    #[test]
    fn a_connection_without_topics_gets_nothing_and_an_empty_router_routes_nowhere() {
        let a = connection(json!([]));
        let (router, _) = Router::build([&a], Bounds::DEFAULT);
        assert_eq!(router.connections().collect::<Vec<_>>(), vec![a.id]);
        assert!(routed(&router, &position("00:00:00:00:00:01", 0.0)).is_empty());
        assert!(routed(&Router::default(), &position("00:00:00:00:00:01", 0.0)).is_empty());
    }

    #[test]
    fn a_stored_topic_that_cannot_be_used_drops_only_that_topic() {
        let mut a = connection(json!([{"topic": "ok", "FilterChain": []}]));
        a.topics.insert(0, Topic { topic: "bad".into(), filter_chain: json!([{"FilterTemplate": "nope"}]) });
        a.topics.insert(1, Topic { topic: "site/+/all".into(), filter_chain: json!([]) });
        let (router, skipped) = Router::build([&a], Bounds::DEFAULT);
        assert_eq!(skipped.len(), 2);
        assert_eq!((skipped[0].connection, skipped[0].index), (a.id, 0));
        assert!(skipped[0].reason.contains("FilterTemplate"), "{}", skipped[0].reason);
        assert_eq!(skipped[1].index, 1);
        assert_eq!(routed(&router, &position("00:00:00:00:00:01", 0.0)), vec![(a.id, "ok".into())]);
    }

    #[test]
    fn a_connection_past_the_configured_bounds_loses_the_topics_that_cross_them() {
        let regex = |m: &str| json!([{"Selector": "Source.MAC", "Type": "regex", "Match": m}]);
        let a = connection(json!([
            {"topic": "one", "FilterChain": regex("^00")},
            {"topic": "same", "FilterChain": regex("^00")},
            {"topic": "two", "FilterChain": regex("^01")},
        ]));
        let (router, skipped) = Router::build([&a], Bounds { regexes: 1, ..Bounds::DEFAULT });
        assert_eq!(skipped.len(), 1);
        assert_eq!(skipped[0].index, 2);
        assert_eq!(skipped[0].reason, "FilterChain[0].Match: a connection may use at most 1 distinct regexes");
        assert_eq!(
            routed(&router, &position("00:00:00:00:00:01", 0.0)),
            vec![(a.id, "one".into()), (a.id, "same".into())]
        );
    }

    #[test]
    fn the_head_reads_category_type_and_event_id_as_the_tree_does() {
        let payload = br#"{"Category": "ZONE", "Content": {"Type": "inner"}, "Type": "ZONE_\u0045NTER",
            "EventID": "0190A1B2-0000-7000-8000-000000000001", "Source": {"MAC": "00:00:00:00:00:01"}}"#;
        let head = Head::parse(payload).unwrap();
        let tree = Envelope::parse(payload).unwrap();
        assert_eq!(head.kind(), tree.kind());
        assert_eq!(head.kind(), (Some("ZONE"), Some("ZONE_ENTER")));
        assert_eq!(head.event_id(), Some("0190A1B2-0000-7000-8000-000000000001"));
        let odd = Head::parse(br#"{"Category": 7, "Type": ["ZONE_ENTER"], "EventID": null}"#).unwrap();
        assert_eq!((odd.kind(), odd.event_id()), ((None, None), None));
        assert_eq!(Head::parse(b"{}").unwrap().kind(), (None, None));
        assert!(Head::parse(br#"["ZONE", "ZONE_ENTER"]"#).is_none(), "no object, no head");
        assert!(Head::parse(br#"{"Type": "A", "Type": "B"}"#).is_none(), "a key twice is left to the tree");
        assert!(Head::parse(b"{\"Category\": ").is_none());
    }

    mod properties {
        use proptest::prelude::*;

        use super::*;

        fn chain_strategy() -> impl Strategy<Value = Value> {
            prop_oneof![
                Just(json!([])),
                Just(json!([{"FilterTemplate": "position_events"}])),
                Just(json!([{"FilterTemplate": "zone_events"}])),
                (0i64..5).prop_map(|m| json!([{"Selector": "Content.Position.2", "Type": "lt", "Match": m}])),
                (0i64..5).prop_map(|m| json!([{"Selector": "Content.Position.2", "Type": "gte", "Match": m}])),
                (0u8..4).prop_map(|m| json!([{"Selector": "Source.MAC", "Type": "equals",
                                              "Match": format!("00:00:00:00:00:0{m}"), "Invert": true}])),
            ]
        }

        fn event_strategy() -> impl Strategy<Value = Value> {
            (0u8..4, -1.0f64..6.0, any::<bool>()).prop_map(|(m, z, zone)| {
                let mac = format!("00:00:00:00:00:0{m}");
                if zone {
                    json!({"Category": "ZONE", "Type": "ZONE_ENTER", "Source": {"MAC": mac},
                           "Content": {"Position": [0, 0, z]}})
                } else {
                    position(&mac, z)
                }
            })
        }

        proptest! {
            /// The table is exactly the chains applied one by one: nothing added, nothing lost,
            /// order kept.
            #[test]
            fn routing_equals_matching_each_chain_in_order(
                chains in proptest::collection::vec(proptest::collection::vec(chain_strategy(), 0..5), 0..5),
                event in event_strategy(),
            ) {
                let connections: Vec<Connection> = chains
                    .iter()
                    .map(|topics| {
                        let topics: Vec<Value> = topics.iter().enumerate()
                            .map(|(i, chain)| json!({"topic": format!("t{i}"), "FilterChain": chain}))
                            .collect();
                        connection(Value::Array(topics))
                    })
                    .collect();
                let (router, skipped) = Router::build(&connections, Bounds::DEFAULT);
                prop_assert!(skipped.is_empty());
                let expected: Vec<(Uuid, String)> = connections
                    .iter()
                    .flat_map(|c| c.topics.iter().filter(|t| zonecast_filter::compile(&t.filter_chain).unwrap().matches(&event))
                        .map(|t| (c.id, t.topic.clone())))
                    .collect();
                prop_assert_eq!(routed(&router, &event), expected);
            }
        }
    }
}
