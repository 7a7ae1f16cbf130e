//! Certificate profiles (operations 21–22): the upload, decoded. Opening the bundle and
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
#[derive(Clone)]
pub struct CertificateProfileInput {
    /// Profile name, shown in listings.
    pub name: String,
    /// CA certificate, PEM or DER.
    pub ca: Vec<u8>,
    /// PKCS#12 bundle with the client certificate chain and private key.
    pub client: Vec<u8>,
    /// Password of the bundle (may be empty).
    pub password: Secret,
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
