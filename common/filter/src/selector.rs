//! Selectors: dotted paths into an event, split into segments once at compile time.

use serde_json::Value;

/// One step of a path: an object key, and also an array index when it is all digits.
#[derive(Clone, Debug)]
struct Segment {
    key: Box<str>,
    index: Option<usize>,
}

/// A pre-split dotted path such as `Content.Position.2`.
#[derive(Clone, Debug)]
pub(crate) struct Selector {
    segments: Box<[Segment]>,
}

impl Selector {
    /// Splits `text` on dots; an empty segment (`a..b`, a leading or trailing dot, `""`) is an error.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        // `"".split('.')` yields one empty segment, so the empty selector is caught here too.
        if text.split('.').any(str::is_empty) {
            return Err(format!(
                "bad selector '{text}': empty path segment (expected keys joined by dots, e.g. Content.ZoneID)"
            ));
        }
        let segments = text
            .split('.')
            .map(|key| Segment {
                key: key.into(),
                // All digits only: `usize::from_str` would also take "+1".
                index: if key.bytes().all(|b| b.is_ascii_digit()) { key.parse().ok() } else { None },
            })
            .collect();
        Ok(Self { segments })
    }

    /// The value the path points at, or `None` when any step is missing.
    pub(crate) fn resolve<'a>(&self, event: &'a Value) -> Option<&'a Value> {
        self.segments.iter().try_fold(event, |value, segment| match value {
            Value::Object(map) => map.get(&*segment.key),
            Value::Array(items) => segment.index.and_then(|i| items.get(i)),
            _ => None,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::Selector;
    use serde_json::json;

    fn resolve(selector: &str, event: &serde_json::Value) -> Option<serde_json::Value> {
        Selector::parse(selector).unwrap().resolve(event).cloned()
    }

    #[test]
    fn nested_keys_resolve() {
        let event = json!({"Source": {"MAC": "00:AA"}});
        assert_eq!(resolve("Source.MAC", &event), Some(json!("00:AA")));
        assert_eq!(resolve("Source", &event), Some(json!({"MAC": "00:AA"})));
    }

    #[test]
    fn numeric_segments_index_arrays() {
        let event = json!({"Content": {"Position": [1.5, 2.5, 3.5]}});
        assert_eq!(resolve("Content.Position.0", &event), Some(json!(1.5)));
        assert_eq!(resolve("Content.Position.2", &event), Some(json!(3.5)));
        assert_eq!(resolve("Content.Position.3", &event), None);
        assert_eq!(resolve("Content.Position.x", &event), None);
        assert_eq!(resolve("Content.Position.+1", &event), None);
    }

    #[test]
    fn numeric_segments_are_keys_on_objects() {
        let event = json!({"a": {"2": "two"}});
        assert_eq!(resolve("a.2", &event), Some(json!("two")));
    }

    #[test]
    fn arrays_nest() {
        let event = json!({"m": [[0, 1], [2, 3]]});
        assert_eq!(resolve("m.1.0", &event), Some(json!(2)));
    }

    #[test]
    fn missing_paths_resolve_to_none() {
        let event = json!({"Source": {"MAC": "00:AA"}, "n": 1});
        assert_eq!(resolve("Source.IP", &event), None);
        assert_eq!(resolve("Content.ZoneID", &event), None);
        assert_eq!(resolve("n.x", &event), None);
        assert_eq!(resolve("Source.MAC.x", &event), None);
    }

    #[test]
    fn null_values_resolve() {
        let event = json!({"Source": {"GatewayURI": null}});
        assert_eq!(resolve("Source.GatewayURI", &event), Some(json!(null)));
    }

    #[test]
    fn empty_segments_are_rejected() {
        for bad in ["", ".", "a..b", ".a", "a.", "a.b."] {
            let err = Selector::parse(bad).unwrap_err();
            assert!(err.starts_with(&format!("bad selector '{bad}'")), "{err}");
        }
    }
}
