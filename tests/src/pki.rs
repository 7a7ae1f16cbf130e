//! A real test PKI made with the `openssl` CLI, once per test process: a CA, a client
//! certificate it signed, the client's PKCS#12 bundle in OpenSSL 3's default encryption and in
//! `-legacy` encryption, a server certificate for `localhost`, and a second, unrelated CA.
//! EC P-256 keys keep it fast. Everything is read into memory and the files are removed.
//!
//! [`client_bundles`] adds, on first use, client bundles made every common way with the same CA.

use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

/// Password of both client bundles.
pub const BUNDLE_PASSWORD: &str = "bundle-pass-3f9a-7d21";

/// The generated material, raw bytes.
pub struct Pki {
    /// CA certificate, PEM.
    pub ca_pem: Vec<u8>,
    /// The same CA certificate, DER.
    pub ca_der: Vec<u8>,
    /// Client certificate signed by the CA, PEM.
    pub client_cert_pem: Vec<u8>,
    /// Client private key, PKCS#8 DER (to prove it is never stored in the clear).
    pub client_key_der: Vec<u8>,
    /// Client key, certificate and CA as PKCS#12, OpenSSL 3 default (PBES2/AES) encryption.
    pub client_p12: Vec<u8>,
    /// The same bundle with `-legacy` (RC2/3DES) encryption.
    pub client_p12_legacy: Vec<u8>,
    /// Server certificate for `localhost` / 127.0.0.1 signed by the CA, PEM.
    pub server_cert_pem: Vec<u8>,
    /// Its private key, PEM.
    pub server_key_pem: Vec<u8>,
    /// A second CA that signed nothing here, PEM.
    pub other_ca_pem: Vec<u8>,
    /// The CA's private key, PEM, to sign more client certificates.
    pub ca_key_pem: Vec<u8>,
}

const OPENSSL_CONFIG: &str = "\
[req]
distinguished_name = dn
prompt = no
[dn]
CN = zonecast test
[v3_ca]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[v3_client]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = clientAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
[v3_server]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = DNS:localhost, IP:127.0.0.1
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
";

/// Runs `openssl` in `dir` with the words of `command` and then `more` (for arguments with
/// spaces), panicking with its output when it fails or cannot be run.
fn openssl(dir: &Path, command: &str, more: &[&str]) {
    let args: Vec<&str> = command.split_whitespace().chain(more.iter().copied()).collect();
    let output = Command::new("openssl").args(&args).current_dir(dir).output().unwrap_or_else(|e| {
        panic!("the openssl CLI is needed to make the test PKI but could not be run ({e}); install it (apt-get install openssl)")
    });
    assert!(
        output.status.success(),
        "openssl {} failed ({}): {}",
        args.join(" "),
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
}

fn read(dir: &Path, name: &str) -> Vec<u8> {
    std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("reading generated {name}: {e}"))
}

const NEW_P256_KEY: &str = "-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes";

fn self_signed_ca(dir: &Path, name: &str, subject: &str) {
    let command = format!(
        "req -x509 {NEW_P256_KEY} -keyout {name}.key -out {name}.pem -days 3650 -config openssl.cnf -extensions v3_ca"
    );
    openssl(dir, &command, &["-subj", subject]);
}

fn signed_leaf(dir: &Path, name: &str, subject: &str, extensions: &str, serial: u32) {
    let request = format!("req -new {NEW_P256_KEY} -keyout {name}.key -out {name}.csr -config openssl.cnf");
    openssl(dir, &request, &["-subj", subject]);
    let sign = format!(
        "x509 -req -in {name}.csr -CA ca.pem -CAkey ca.key -set_serial {serial} -days 3650 -out {name}.pem \
         -extfile openssl.cnf -extensions {extensions}"
    );
    openssl(dir, &sign, &[]);
}

fn generate() -> Pki {
    let dir = tempfile::tempdir().expect("a temporary directory for the test PKI");
    let d = dir.path();
    std::fs::write(d.join("openssl.cnf"), OPENSSL_CONFIG).unwrap();
    self_signed_ca(d, "ca", "/CN=zonecast test CA");
    self_signed_ca(d, "other-ca", "/CN=zonecast unrelated test CA");
    signed_leaf(d, "client", "/CN=zonecast test client", "v3_client", 2);
    signed_leaf(d, "server", "/CN=localhost", "v3_server", 3);
    openssl(d, "x509 -in ca.pem -outform DER -out ca.der", &[]);
    openssl(d, "pkey -in client.key -outform DER -out client.key.der", &[]);
    let bundle = |out: &str, options: &str| {
        let command = format!(
            "pkcs12 -export {options} -inkey client.key -in client.pem -certfile ca.pem -name client \
             -passout pass:{BUNDLE_PASSWORD} -out {out}"
        );
        openssl(d, &command, &[]);
    };
    bundle("client.p12", "");
    bundle("client-legacy.p12", "-legacy");
    Pki {
        ca_pem: read(d, "ca.pem"),
        ca_der: read(d, "ca.der"),
        client_cert_pem: read(d, "client.pem"),
        client_key_der: read(d, "client.key.der"),
        client_p12: read(d, "client.p12"),
        client_p12_legacy: read(d, "client-legacy.p12"),
        server_cert_pem: read(d, "server.pem"),
        server_key_pem: read(d, "server.key"),
        other_ca_pem: read(d, "other-ca.pem"),
        ca_key_pem: read(d, "ca.key"),
    }
}

/// The test PKI, generated on first use in this process.
pub fn pki() -> &'static Pki {
    static PKI: OnceLock<Pki> = OnceLock::new();
    PKI.get_or_init(generate)
}

/// A client bundle signed by the test CA, password [`BUNDLE_PASSWORD`].
pub struct ClientBundle {
    /// How it was made, e.g. `v1-rsa-chain-legacy`; usable as an MQTT topic level.
    pub name: String,
    /// The PKCS#12 bytes.
    pub p12: Vec<u8>,
}

/// Client bundles made the ways people make them, all signed by [`pki`]'s CA: an X.509 v1
/// certificate (`openssl x509 -req` without an extensions file, as the Mosquitto manual shows)
/// and a v3 one, each with an RSA 2048 and an EC P-256 key, exported with and without the CA
/// chain, in OpenSSL 3's default and in `-legacy` encryption. Made on first use.
pub fn client_bundles() -> &'static [ClientBundle] {
    static BUNDLES: OnceLock<Vec<ClientBundle>> = OnceLock::new();
    BUNDLES.get_or_init(generate_client_bundles)
}

fn generate_client_bundles() -> Vec<ClientBundle> {
    let dir = tempfile::tempdir().expect("a temporary directory for the client bundles");
    let d = dir.path();
    std::fs::write(d.join("openssl.cnf"), OPENSSL_CONFIG).unwrap();
    std::fs::write(d.join("ca.pem"), &pki().ca_pem).unwrap();
    std::fs::write(d.join("ca.key"), &pki().ca_key_pem).unwrap();
    let mut bundles = Vec::new();
    for (key, new_key) in [("rsa", "-newkey rsa:2048 -nodes"), ("ec", NEW_P256_KEY)] {
        for version in [1, 3] {
            let name = format!("v{version}-{key}");
            let request = format!("req -new {new_key} -keyout {name}.key -out {name}.csr -config openssl.cnf");
            openssl(d, &request, &["-subj", &format!("/CN=zonecast test client {name}")]);
            let extensions = if version == 3 { "-extfile openssl.cnf -extensions v3_client" } else { "" };
            let sign = format!(
                "x509 -req -in {name}.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 3650 -out {name}.pem {extensions}"
            );
            openssl(d, &sign, &[]);
            openssl(d, &format!("x509 -in {name}.pem -noout -text -out {name}.txt"), &[]);
            let text = String::from_utf8(read(d, &format!("{name}.txt"))).unwrap();
            let expected = format!("Version: {version} (0x{})", version - 1);
            assert!(text.contains(&expected), "{name}.pem should be X.509 v{version}:\n{text}");
            for (chain, with_chain) in [("chain", "-certfile ca.pem"), ("alone", "")] {
                for (encryption, option) in [("default", ""), ("legacy", "-legacy")] {
                    let out = format!("{name}-{chain}-{encryption}.p12");
                    let command = format!(
                        "pkcs12 -export {option} -inkey {name}.key -in {name}.pem {with_chain} -name client \
                         -passout pass:{BUNDLE_PASSWORD} -out {out}"
                    );
                    openssl(d, &command, &[]);
                    bundles.push(ClientBundle { name: format!("{name}-{chain}-{encryption}"), p12: read(d, &out) });
                }
            }
        }
    }
    bundles
}

/// Standard base64, as the API takes `ca` and `client`.
pub fn b64(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

impl Pki {
    /// `ca` for the API: base64 of the CA's PEM.
    pub fn ca(&self) -> String {
        b64(&self.ca_pem)
    }

    /// `ca` for the API: base64 of the CA's DER.
    pub fn ca_der(&self) -> String {
        b64(&self.ca_der)
    }

    /// `ca` for the API: base64 of the unrelated CA's PEM.
    pub fn other_ca(&self) -> String {
        b64(&self.other_ca_pem)
    }

    /// `client` for the API: base64 of the default-encrypted bundle.
    pub fn client(&self) -> String {
        b64(&self.client_p12)
    }

    /// `client` for the API: base64 of the `-legacy` bundle.
    pub fn client_legacy(&self) -> String {
        b64(&self.client_p12_legacy)
    }

    /// A complete CertificateProfileInput named `name` (PEM CA, default bundle, right password).
    pub fn profile(&self, name: &str) -> Value {
        json!({"name": name, "ca": self.ca(), "client": self.client(), "password": BUNDLE_PASSWORD})
    }
}
