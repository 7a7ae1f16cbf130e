//! Certificate profiles turned into TLS material: the CA (PEM or DER) as trust roots and the
//! PKCS#12 client bundle (OpenSSL 3 default or `-legacy` encryption) as a certificate chain
//! and private key that rustls (ring provider) can use. The API validates uploads with it;
//! the forwarder builds its client configurations with it.
//!
//! Every TLS configuration zonecast builds (MQTT, HTTP and NATS clients) names its crypto
//! provider, [`provider`]: the binaries and tests install no process-wide default.

mod bundle;
mod provider;

pub use provider::{client_builder, http_client, https_config, native_roots_config, provider};

use std::sync::Arc;

use rustls::client::ResolvesClientCert;
use rustls::sign::CertifiedKey;
use rustls::{RootCertStore, SignatureScheme};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

/// Why a profile cannot be used; `field` is the input field at fault (`ca`, `client`, `password`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct ProfileError {
    /// Input field at fault.
    pub field: &'static str,
    /// What is wrong, without secret material.
    pub message: String,
}

fn err(field: &'static str, message: impl Into<String>) -> ProfileError {
    ProfileError { field, message: message.into() }
}

/// The usable contents of a certificate profile.
#[derive(Debug)]
pub struct TlsIdentity {
    /// Trust roots from the profile's CA.
    pub roots: RootCertStore,
    /// Client certificate chain, leaf first.
    pub chain: Vec<CertificateDer<'static>>,
    /// Client private key (PKCS#8).
    pub key: PrivateKeyDer<'static>,
}

/// Parses the CA certificate(s), PEM (one or more) or DER, into trust roots.
pub fn parse_ca(ca: &[u8]) -> Result<RootCertStore, ProfileError> {
    let ders: Vec<CertificateDer<'static>> = if ca.trim_ascii_start().starts_with(b"-----BEGIN") {
        CertificateDer::pem_slice_iter(ca)
            .collect::<Result<_, _>>()
            .map_err(|_| err("ca", "is not a readable PEM certificate"))?
    } else {
        vec![CertificateDer::from(ca.to_vec())]
    };
    if ders.is_empty() {
        return Err(err("ca", "holds no certificate"));
    }
    let mut roots = RootCertStore::empty();
    for der in ders {
        roots.add(der).map_err(|_| err("ca", "is not a readable X.509 certificate"))?;
    }
    Ok(roots)
}

/// Opens the PKCS#12 bundle with `password` and checks that it can serve as a client identity
/// now: it holds a private key rustls (ring) can sign with, the certificate of that key (any
/// X.509 version), and that certificate is within its validity period. Each failure has its own
/// message naming `client`.
pub fn open_bundle(
    client: &[u8],
    password: &str,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), ProfileError> {
    bundle::open(client, password, x509_parser::time::ASN1Time::now().timestamp())
}

/// Opens a whole profile: the CA as trust roots and the bundle as [`open_bundle`] checks it.
/// [`client_config`] turns the result into what a connection uses.
pub fn open_profile(ca: &[u8], client: &[u8], password: &str) -> Result<TlsIdentity, ProfileError> {
    let roots = parse_ca(ca)?;
    let (chain, key) = open_bundle(client, password)?;
    Ok(TlsIdentity { roots, chain, key })
}

/// Presents the profile's chain whenever a server asks for a client certificate. The broker
/// judges the certificate, not rustls: `with_client_auth_cert` would parse it as an end-entity
/// certificate first, which refuses X.509 v1 certificates.
#[derive(Debug)]
struct ProfileCertificate(Arc<CertifiedKey>);

impl ResolvesClientCert for ProfileCertificate {
    fn resolve(&self, _root_hint_subjects: &[&[u8]], _sigschemes: &[SignatureScheme]) -> Option<Arc<CertifiedKey>> {
        Some(Arc::clone(&self.0))
    }

    fn has_certs(&self) -> bool {
        true
    }
}

/// A rustls client configuration that trusts only the profile's CA and presents its client
/// certificate (ring provider). The chain and key are taken as [`open_bundle`] checked them.
pub fn client_config(identity: TlsIdentity) -> Result<Arc<rustls::ClientConfig>, ProfileError> {
    if identity.chain.is_empty() {
        return Err(err("client", "holds no certificate"));
    }
    let key = rustls::crypto::ring::sign::any_supported_type(&identity.key)
        .map_err(|_| err("client", format!("private key type is not supported ({})", bundle::SUPPORTED)))?;
    let certified = CertifiedKey::new(identity.chain, key);
    let config = client_builder()
        .map_err(|e| err("client", e.to_string()))?
        .with_root_certificates(identity.roots)
        .with_client_cert_resolver(Arc::new(ProfileCertificate(Arc::new(certified))));
    Ok(Arc::new(config))
}

/// What a stored certificate profile holds once unsealed: the upload as given. The API seals
/// it with `Keys::seal(&profile.to_bytes())`; the forwarder opens it with [`SealedProfile::from_bytes`].
#[derive(Clone, serde::Serialize, serde::Deserialize)]
pub struct SealedProfile {
    /// CA certificate, PEM or DER, base64.
    pub ca: String,
    /// PKCS#12 bundle, base64.
    pub client: String,
    /// Bundle password.
    pub password: String,
}

impl std::fmt::Debug for SealedProfile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SealedProfile(***)")
    }
}

impl SealedProfile {
    /// From the decoded upload.
    pub fn new(ca: &[u8], client: &[u8], password: &str) -> Self {
        use base64::Engine;
        let b64 = base64::engine::general_purpose::STANDARD;
        Self { ca: b64.encode(ca), client: b64.encode(client), password: password.to_owned() }
    }

    /// The plaintext to seal.
    pub fn to_bytes(&self) -> Vec<u8> {
        // A struct of three strings always serialises.
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// Reads unsealed bytes back.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, ProfileError> {
        serde_json::from_slice(bytes).map_err(|_| err("client", "stored profile is unreadable"))
    }

    /// Opens the profile into TLS material.
    pub fn open(&self) -> Result<TlsIdentity, ProfileError> {
        use base64::Engine;
        let b64 = base64::engine::general_purpose::STANDARD;
        let ca = b64.decode(&self.ca).map_err(|_| err("ca", "stored profile is unreadable"))?;
        let client = b64.decode(&self.client).map_err(|_| err("client", "stored profile is unreadable"))?;
        open_profile(&ca, &client, &self.password)
    }
}
