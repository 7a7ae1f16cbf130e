//! Device MAC addresses: six hex octets, stored upper-case with `:`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A normalised MAC address (`00:AA:BB:CC:DD:EE`). Parsing accepts `:` or `-` separators in
/// any case.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Mac(String);

impl Mac {
    /// The normalised text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for Mac {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || format!("'{s}' is not a MAC address (six hex octets separated by ':' or '-')");
        let sep = if s.contains('-') { '-' } else { ':' };
        let octets: Vec<&str> = s.split(sep).collect();
        if octets.len() != 6 || octets.iter().any(|o| o.len() != 2 || !o.bytes().all(|b| b.is_ascii_hexdigit())) {
            return Err(bad());
        }
        Ok(Self(octets.join(":").to_ascii_uppercase()))
    }
}

impl fmt::Display for Mac {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for Mac {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Mac {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
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
