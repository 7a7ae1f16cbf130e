//! The crypto provider every TLS configuration of zonecast is built with (ring), and the
//! configurations built on it for connections that trust the operating system's roots. Each
//! configuration names its provider, so no process-wide default provider is installed or needed.

use std::sync::{Arc, LazyLock};

use rustls::crypto::CryptoProvider;
use rustls::{ClientConfig, ConfigBuilder, RootCertStore, WantsVerifier};
use rustls_platform_verifier::BuilderVerifierExt;

static RING: LazyLock<Arc<CryptoProvider>> = LazyLock::new(|| Arc::new(rustls::crypto::ring::default_provider()));

/// The operating system's trust roots, read once per process.
static NATIVE_ROOTS: LazyLock<RootCertStore> = LazyLock::new(|| {
    let mut roots = RootCertStore::empty();
    roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
    roots
});

/// ring, the one crypto provider of every TLS configuration zonecast builds.
pub fn provider() -> Arc<CryptoProvider> {
    Arc::clone(&RING)
}

/// A client configuration builder on [`provider`] with rustls' safe default protocol versions
/// (TLS 1.3 and 1.2), waiting for its server verification.
pub fn client_builder() -> Result<ConfigBuilder<ClientConfig, WantsVerifier>, rustls::Error> {
    ClientConfig::builder_with_provider(provider()).with_safe_default_protocol_versions()
}

/// The TLS configuration of zonecast's HTTP clients: TLS 1.3 and 1.2, servers verified against
/// the operating system's trust roots (rustls-platform-verifier), no client certificate, and
/// HTTP/1.1 offered by ALPN. This is what reqwest would build itself on a default provider.
pub fn https_config() -> Result<ClientConfig, rustls::Error> {
    let mut config = client_builder()?.with_platform_verifier()?.with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// A reqwest client builder whose TLS is [`https_config`]. Every HTTP client of zonecast starts
/// here: a builder from `reqwest::Client::builder()` would look for a process-wide provider.
pub fn http_client() -> Result<reqwest::ClientBuilder, rustls::Error> {
    Ok(reqwest::Client::builder().tls_backend_preconfigured(https_config()?))
}

/// The TLS configuration for NATS connections: TLS 1.3 and 1.2, servers verified against the
/// operating system's trust roots, no client certificate. The NATS client uses it whenever the
/// URL (`tls://`) or the server asks for TLS.
pub fn native_roots_config() -> Result<ClientConfig, rustls::Error> {
    Ok(client_builder()?.with_root_certificates(NATIVE_ROOTS.clone()).with_no_client_auth())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn configurations_need_no_process_default() {
        assert!(CryptoProvider::get_default().is_none());
        let https = https_config().unwrap();
        assert_eq!(https.alpn_protocols, vec![b"http/1.1".to_vec()]);
        assert!(Arc::ptr_eq(https.crypto_provider(), &provider()));
        let nats = native_roots_config().unwrap();
        assert!(Arc::ptr_eq(nats.crypto_provider(), &provider()));
        http_client().unwrap().build().unwrap();
        assert!(CryptoProvider::get_default().is_none(), "nothing installed a process-wide provider");
    }
}
