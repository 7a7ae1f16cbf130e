//! Certificate profiles (create and update): the upload, decoded. Opening the bundle and
//! parsing the CA happens where the TLS crates are (the API); this only checks shape and base64.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

use crate::fields::Fields;
use crate::{Invalid, Secret};

/// Largest accepted decoded `ca` or `client`, in bytes.
const MAX_BLOB: usize = 256 * 1024;

/// A certificate profile upload: the CA certificate (PEM or DER) and the client's PKCS#12
/// bundle with its password. `Debug` hides the bundle and password.
///
/// Its JSON Schema is the body as [`CertificateProfileInput::parse`] reads it; a CA or bundle
/// that does not open (or a wrong password) is answered with 422.
#[derive(Clone, schemars::JsonSchema)]
#[schemars(
    description = "A certificate profile upload. A CA or bundle that does not open, or a wrong password, is 422."
)]
pub struct CertificateProfileInput {
    /// Profile name, shown in listings (1 to 256 characters once trimmed).
    #[schemars(length(min = 1, max = 256), regex(pattern = "\\S"))]
    pub name: String,
    /// Base64 of the CA certificate, PEM or DER (white space allowed).
    #[schemars(with = "Base64")]
    pub ca: Vec<u8>,
    /// Base64 of a PKCS#12 bundle with the client certificate chain and private key.
    #[schemars(with = "Base64", extend("writeOnly" = true))]
    pub client: Vec<u8>,
    /// Password of the bundle (default empty).
    #[schemars(with = "Option<String>", extend("writeOnly" = true))]
    pub password: Secret,
}

/// Base64 as the decoder takes it: groups of four characters, the last one padded with `=`
/// (whose unused bits are zero), white space anywhere, at least one byte.
const BASE64_PATTERN: &str = concat!(
    "^\\s*(?:(?:(?:[A-Za-z0-9+/]\\s*){4})+(?:",
    "(?:[A-Za-z0-9+/]\\s*)[AQgw]\\s*=\\s*=|(?:[A-Za-z0-9+/]\\s*){2}[AEIMQUYcgkosw048]\\s*=)?",
    "|(?:[A-Za-z0-9+/]\\s*)[AQgw]\\s*=\\s*=|(?:[A-Za-z0-9+/]\\s*){2}[AEIMQUYcgkosw048]\\s*=)\\s*$"
);

/// Base64 text of 1 to [`MAX_BLOB`] bytes, white space allowed anywhere.
struct Base64;

impl schemars::JsonSchema for Base64 {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Base64".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "contentEncoding": "base64",
            "pattern": BASE64_PATTERN,
            "minLength": 4,
        })
    }
}

/// A certificate profile as the API returns it: identity and name only.
#[derive(Debug, Clone, PartialEq, serde::Serialize, schemars::JsonSchema)]
#[schemars(rename = "CertificateProfile", deny_unknown_fields)]
pub struct CertificateProfileSummary {
    /// Identity.
    #[serde(rename = "ID")]
    #[schemars(with = "crate::schema::UpperUuid")]
    pub id: String,
    /// Profile name.
    pub name: String,
}

impl std::fmt::Debug for CertificateProfileInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertificateProfileInput")
            .field("name", &self.name)
            .field("ca_bytes", &self.ca.len())
            .field("client", &"***")
            .field("password", &self.password)
            .finish()
    }
}

impl CertificateProfileInput {
    /// Reads `name`, `ca`, `client` (base64) and `password`.
    pub fn parse(value: &Value) -> Result<Self, Invalid> {
        let f = Fields::of(value, "")?;
        let name = f.string("name")?.ok_or_else(|| Invalid::new("name", "is required"))?.trim().to_owned();
        if name.is_empty() || name.chars().count() > 256 {
            return Err(Invalid::new("name", "must be 1 to 256 characters"));
        }
        let blob = |field: &str| -> Result<Vec<u8>, Invalid> {
            let text = f.string(field)?.ok_or_else(|| Invalid::new(field, "is required"))?;
            let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
            let bytes = STANDARD.decode(compact.as_bytes()).map_err(|_| Invalid::new(field, "is not valid base64"))?;
            if bytes.is_empty() || bytes.len() > MAX_BLOB {
                return Err(Invalid::new(field, format!("must decode to 1 to {MAX_BLOB} bytes")));
            }
            Ok(bytes)
        };
        let ca = blob("ca")?;
        let client = blob("client")?;
        let password = Secret::new(f.string("password")?.unwrap_or(""));
        Ok(Self { name, ca, client, password })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_schema_pattern_accepts_what_decodes() {
        let pattern = regex_automata::meta::Regex::new(BASE64_PATTERN).unwrap();
        for text in
            ["QQ==", "QUI=", "QUJD", "QUJD\nREVG", " QU JD RA== ", "AB==", "QUJ", "QUJD=", "", "    ", "QUJ*", "Q==="]
        {
            let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
            let decodes = STANDARD.decode(compact.as_bytes()).is_ok_and(|b| !b.is_empty());
            assert_eq!(pattern.is_match(text), decodes, "{text:?}");
        }
    }
}
