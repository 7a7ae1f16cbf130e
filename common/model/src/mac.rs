//! Device MAC addresses: six hex octets, stored upper-case with `:`.

use std::fmt;
use std::str::FromStr;

use arrayvec::ArrayString;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A normalised MAC address (`00:AA:BB:CC:DD:EE`). Parsing accepts `:` or `-` separators in
/// any case.
///
/// The text is held inline, with its partition hash: a MAC is copied into every map and event
/// that names the device, so cloning one allocates nothing, and every position asks for its
/// partition at least twice (the subject it is published on, the evaluator that owns it).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Mac {
    text: ArrayString<17>,
    /// 32-bit FNV-1a of `text`.
    fnv: u32,
}

impl Mac {
    /// The normalised text.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The position partition of this device: 32-bit FNV-1a of the normalised text
    /// (`00:AA:BB:CC:DD:EE`, upper case, colons) modulo `count`. Documented in `docs/events.md`
    /// so that other producers can compute it.
    pub fn partition(&self, count: u32) -> u32 {
        self.fnv % count.max(1)
    }
}

impl FromStr for Mac {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || format!("'{s}' is not a MAC address (six hex octets separated by ':' or '-')");
        let bytes = s.as_bytes();
        if bytes.len() != 17 {
            return Err(bad());
        }
        let sep = bytes[2];
        if sep != b':' && sep != b'-' {
            return Err(bad());
        }
        let mut text = ArrayString::new();
        let mut fnv: u32 = 0x811c_9dc5;
        for (i, &b) in bytes.iter().enumerate() {
            let c = if i % 3 == 2 {
                if b != sep {
                    return Err(bad());
                }
                b':'
            } else if b.is_ascii_hexdigit() {
                b.to_ascii_uppercase()
            } else {
                return Err(bad());
            };
            text.push(char::from(c));
            fnv = (fnv ^ u32::from(c)).wrapping_mul(0x0100_0193);
        }
        Ok(Self { text, fnv })
    }
}

/// What [`Mac`] parses, as a JSON Schema (ECMA-262) pattern: six hex octets in any case, with
/// one separator throughout, `:` or `-`.
pub const MAC_PATTERN: &str = "^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}$|^[0-9A-Fa-f]{2}(-[0-9A-Fa-f]{2}){5}$";

impl schemars::JsonSchema for Mac {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "MAC".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "pattern": MAC_PATTERN,
            "description": "Six hex octets separated by ':' or '-' (one separator throughout), any case; \
                            returned upper-case with ':'.",
            "examples": ["00:AA:BB:CC:DD:EE"],
        })
    }
}

/// A MAC, or `""` for none (`MobileOriginSource`).
pub(crate) struct MacOrEmpty;

impl schemars::JsonSchema for MacOrEmpty {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        "MacOrEmpty".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"anyOf": [generator.subschema_for::<Mac>(), {"const": ""}]})
    }
}

impl fmt::Display for Mac {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Serialize for Mac {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for Mac {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        /// Parses the text wherever the deserializer has it, without copying it first.
        struct Text;
        impl serde::de::Visitor<'_> for Text {
            type Value = Mac;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a MAC address")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Mac, E> {
                s.parse().map_err(E::custom)
            }
        }
        d.deserialize_str(Text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn macs_are_normalised_to_upper_case_with_colons() {
        assert_eq!("00-aa-bb-cc-dd-ee".parse::<Mac>().unwrap().as_str(), "00:AA:BB:CC:DD:EE");
        assert_eq!("00:aa:BB:cc:dd:EE".parse::<Mac>().unwrap().as_str(), "00:AA:BB:CC:DD:EE");
    }

    #[test]
    fn partitions_are_fnv1a_of_the_normalised_text() {
        // Known answer computed outside Rust: FNV-1a-32("00:AA:BB:CC:DD:EE") = 0xf52c75b7.
        let mac: Mac = "00-aa-bb-cc-dd-ee".parse().unwrap();
        assert_eq!(mac.partition(u32::MAX), 0xf52c_75b7);
        assert_eq!(mac.partition(16), 7);
        let spread: std::collections::HashSet<u32> =
            (0..256).map(|i| format!("00:00:00:00:00:{i:02X}").parse::<Mac>().unwrap().partition(16)).collect();
        assert_eq!(spread.len(), 16, "256 consecutive MACs cover all 16 partitions");
    }

    #[test]
    fn the_schema_pattern_accepts_exactly_what_parses() {
        let pattern = regex_automata::meta::Regex::new(MAC_PATTERN).unwrap();
        for text in [
            "00:aa:BB:cc:dd:EE",
            "00-AA-BB-CC-DD-EE",
            "00:AA:BB:CC:DD",
            "00:AA-BB:CC:DD:EE",
            "00AABBCCDDEE",
            "GG:AA:BB:CC:DD:EE",
            "00:AA:BB:CC:DD:EE\n",
            " 00:AA:BB:CC:DD:EE",
            "00:AA:BB:CC:DD:EE:FF",
        ] {
            assert_eq!(pattern.is_match(text), text.parse::<Mac>().is_ok(), "{text:?}");
        }
    }

    #[test]
    fn malformed_macs_are_rejected() {
        for bad in [
            "",
            "00:AA:BB:CC:DD",
            "00:AA:BB:CC:DD:EE:FF",
            "0:AA:BB:CC:DD:EE",
            "GG:AA:BB:CC:DD:EE",
            "00:AA-BB:CC:DD:EE",
            "00AABBCCDDEE",
        ] {
            assert!(bad.parse::<Mac>().is_err(), "{bad}");
        }
    }
}
