//! PKCS#12 client bundles made with the `openssl` CLI every common way (X.509 v1 and v3, RSA,
//! EC and Ed25519 keys, with and without the CA chain, default and `-legacy` encryption) are
//! opened, and every kind of unusable bundle is refused with its own message naming `client`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

use rustls_pki_types::pem::PemObject;
use zonecast_tls::{ProfileError, client_config, open_bundle, open_profile};

const PASSWORD: &str = "bundle-pass-unit-6c1e";

/// Makes a CA the way `openssl ca` expects it; `ca` is used for certificates with chosen dates.
const CA_CONFIG: &str = "\
[req]
distinguished_name = dn
prompt = no
[dn]
CN = zonecast unit test
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
[ca]
default_ca = dated
[dated]
database = index.txt
new_certs_dir = .
certificate = ca.pem
private_key = ca.key
serial = serial
default_md = sha256
policy = anything
[anything]
commonName = supplied
";

fn openssl(dir: &Path, command: &str, more: &[&str]) {
    let args: Vec<&str> = command.split_whitespace().chain(more.iter().copied()).collect();
    let output = Command::new("openssl")
        .args(&args)
        .current_dir(dir)
        .output()
        .expect("the openssl CLI runs (apt-get install openssl)");
    assert!(output.status.success(), "openssl {} failed: {}", args.join(" "), String::from_utf8_lossy(&output.stderr));
}

/// The CA's certificate and key (PEM), made once per test process.
fn ca() -> &'static (Vec<u8>, Vec<u8>) {
    static CA: OnceLock<(Vec<u8>, Vec<u8>)> = OnceLock::new();
    CA.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("openssl.cnf"), CA_CONFIG).unwrap();
        openssl(
            dir.path(),
            "req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem -days 3650 \
             -config openssl.cnf -extensions v3_ca",
            &["-subj", "/CN=zonecast unit test CA"],
        );
        (std::fs::read(dir.path().join("ca.pem")).unwrap(), std::fs::read(dir.path().join("ca.key")).unwrap())
    })
}

/// A working directory holding the shared CA, in which a test makes its keys and bundles.
struct Workbench(tempfile::TempDir);

impl Workbench {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("openssl.cnf"), CA_CONFIG).unwrap();
        std::fs::write(d.join("ca.pem"), &ca().0).unwrap();
        std::fs::write(d.join("ca.key"), &ca().1).unwrap();
        std::fs::write(d.join("index.txt"), "").unwrap();
        std::fs::write(d.join("serial"), "1000\n").unwrap();
        Self(dir)
    }

    fn run(&self, command: &str) {
        openssl(self.0.path(), command, &[]);
    }

    fn read(&self, name: &str) -> Vec<u8> {
        std::fs::read(self.0.path().join(name)).unwrap()
    }

    /// `<name>.key` with `genpkey` options, e.g. `-algorithm ed25519`.
    fn key(&self, name: &str, options: &str) {
        self.run(&format!("genpkey {options} -out {name}.key"));
    }

    /// `<name>.csr` for `<name>.key`.
    fn request(&self, name: &str) {
        openssl(
            self.0.path(),
            &format!("req -new -key {name}.key -out {name}.csr"),
            &["-subj", &format!("/CN={name}")],
        );
    }

    /// `<name>.pem` signed by the CA as the OpenSSL manuals show it: `x509 -req`, which makes
    /// an X.509 v1 certificate, or v3 with an extensions file.
    fn certificate(&self, name: &str, v3: bool) {
        self.request(name);
        let extensions = if v3 { "-extfile openssl.cnf -extensions v3_client" } else { "" };
        self.run(&format!(
            "x509 -req -in {name}.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 30 -out {name}.pem {extensions}"
        ));
    }

    /// `<name>.pem` signed by the CA, valid from `start` to `end` (`YYYYMMDDHHMMSSZ`).
    fn dated_certificate(&self, name: &str, start: &str, end: &str) {
        self.request(name);
        self.run(&format!(
            "ca -batch -config openssl.cnf -notext -startdate {start} -enddate {end} -in {name}.csr -out {name}.pem"
        ));
    }

    /// A PKCS#12 export; `options` holds what differs, e.g. `-inkey a.key -in a.pem -legacy`.
    fn bundle(&self, options: &str) -> Vec<u8> {
        self.run(&format!("pkcs12 -export {options} -passout pass:{PASSWORD} -out out.p12"));
        self.read("out.p12")
    }

    /// A key of `options`, its certificate (v1) and their bundle.
    fn bundle_of_key(&self, name: &str, options: &str) -> Vec<u8> {
        self.key(name, options);
        self.certificate(name, false);
        self.bundle(&format!("-inkey {name}.key -in {name}.pem"))
    }
}

fn refused(bundle: &[u8], password: &str) -> ProfileError {
    let error = open_bundle(bundle, password).expect_err("the bundle should be refused");
    assert_eq!(error.field, "client");
    error
}

const EC_P256: &str = "-algorithm EC -pkeyopt ec_paramgen_curve:P-256";
const RSA_2048: &str = "-algorithm RSA -pkeyopt rsa_keygen_bits:2048";

#[test]
fn bundles_of_v1_and_v3_certificates_with_rsa_and_ec_keys_open_in_every_export_form() {
    let w = Workbench::new();
    for (key, options) in [("ec", EC_P256), ("rsa", RSA_2048)] {
        w.key(key, options);
        for v3 in [false, true] {
            let name = format!("{key}-v{}", if v3 { 3 } else { 1 });
            std::fs::copy(w.0.path().join(format!("{key}.key")), w.0.path().join(format!("{name}.key"))).unwrap();
            w.certificate(&name, v3);
            let leaf = w.read(&format!("{name}.pem"));
            let leaf_der = rustls_pki_types::CertificateDer::from_pem_slice(&leaf).unwrap();
            for (with_ca, chain_length) in [("", 1), ("-certfile ca.pem", 2)] {
                for encryption in ["", "-legacy"] {
                    let case = format!("{name} {with_ca} {encryption}");
                    let bundle = w.bundle(&format!("-inkey {name}.key -in {name}.pem {with_ca} {encryption}"));
                    let identity = open_profile(&ca().0, &bundle, PASSWORD).unwrap_or_else(|e| panic!("{case}: {e}"));
                    assert_eq!(identity.chain.len(), chain_length, "{case}");
                    assert_eq!(identity.chain[0], leaf_der, "{case}: the client certificate comes first");
                    client_config(identity).unwrap_or_else(|e| panic!("{case}: {e}"));
                }
            }
        }
    }
}

#[test]
fn a_bundle_of_an_ed25519_key_opens() {
    let w = Workbench::new();
    let bundle = w.bundle_of_key("ed25519", "-algorithm ed25519");
    open_profile(&ca().0, &bundle, PASSWORD).unwrap();
}

#[test]
fn a_wrong_password_is_named_as_such() {
    let w = Workbench::new();
    let bundle = w.bundle_of_key("client", EC_P256);
    assert_eq!(refused(&bundle, "not-the-password").to_string(), "client: cannot be opened: wrong password");
    let legacy = w.bundle("-inkey client.key -in client.pem -legacy");
    assert_eq!(refused(&legacy, "not-the-password").to_string(), "client: cannot be opened: wrong password");
    // Without a MAC nothing proves the password wrong: the bundle merely fails to decrypt.
    let unchecked = w.bundle("-inkey client.key -in client.pem -nomac");
    open_bundle(&unchecked, PASSWORD).expect("a bundle without MAC opens with its password");
    assert_eq!(
        refused(&unchecked, "not-the-password").to_string(),
        "client: cannot be opened: wrong password, or the bundle is damaged"
    );
}

#[test]
fn data_that_is_not_pkcs12_is_named_as_such() {
    let w = Workbench::new();
    w.key("client", EC_P256);
    w.certificate("client", true);
    for (what, data) in [("a PEM certificate", w.read("client.pem")), ("text", b"hello".to_vec()), ("nothing", vec![])]
    {
        assert_eq!(refused(&data, PASSWORD).to_string(), "client: is not a PKCS#12 bundle", "{what}");
    }
}

#[test]
fn a_bundle_of_certificates_only_holds_no_private_key() {
    let w = Workbench::new();
    w.key("client", EC_P256);
    w.certificate("client", false);
    let bundle = w.bundle("-nokeys -in client.pem -certfile ca.pem");
    let message = refused(&bundle, PASSWORD).to_string();
    assert!(message.starts_with("client: holds no private key, only certificates"), "{message}");
}

#[test]
fn a_bundle_of_a_key_only_holds_no_certificate() {
    let w = Workbench::new();
    w.key("client", EC_P256);
    let bundle = w.bundle("-nocerts -inkey client.key");
    let message = refused(&bundle, PASSWORD).to_string();
    assert!(message.starts_with("client: holds no certificate, only a private key"), "{message}");
}

/// OpenSSL refuses to export a key with a certificate that is not its own, other tools do
/// not: this bundle is written with p12-keystore, the key linked to the wrong certificate.
#[test]
fn a_key_of_another_certificate_is_a_mismatch() {
    use p12_keystore::{Certificate, KeyStore, KeyStoreEntry, PrivateKey, PrivateKeyChain};
    let w = Workbench::new();
    w.key("mine", EC_P256);
    w.key("theirs", EC_P256);
    w.certificate("theirs", false);
    let their_cert = rustls_pki_types::CertificateDer::from_pem_slice(&w.read("theirs.pem")).unwrap();
    let my_key = rustls_pki_types::PrivatePkcs8KeyDer::from_pem_slice(&w.read("mine.key")).unwrap();
    let key = PrivateKey::from_der(my_key.secret_pkcs8_der()).unwrap();
    let chain = PrivateKeyChain::new(vec![1u8; 20], key, [Certificate::from_der(&their_cert).unwrap()]);
    let mut store = KeyStore::new();
    store.add_entry("client", KeyStoreEntry::PrivateKeyChain(chain));
    let bundle = store.writer(PASSWORD).write().unwrap();
    assert_eq!(
        refused(&bundle, PASSWORD).to_string(),
        "client: certificate and private key do not match (the certificate holds another public key)"
    );
}

#[test]
fn an_expired_certificate_is_named_with_its_end() {
    let w = Workbench::new();
    w.key("old", EC_P256);
    w.dated_certificate("old", "20200101000000Z", "20210101000000Z");
    let bundle = w.bundle("-inkey old.key -in old.pem -certfile ca.pem");
    assert_eq!(refused(&bundle, PASSWORD).to_string(), "client: certificate expired on 2021-01-01T00:00:00Z");
}

#[test]
fn a_certificate_not_valid_yet_is_named_with_its_start() {
    let w = Workbench::new();
    w.key("future", EC_P256);
    w.dated_certificate("future", "20990101000000Z", "20991231000000Z");
    let bundle = w.bundle("-inkey future.key -in future.pem");
    assert_eq!(
        refused(&bundle, PASSWORD).to_string(),
        "client: certificate is not valid yet: it starts on 2099-01-01T00:00:00Z"
    );
}

#[test]
fn key_types_ring_cannot_sign_with_are_named() {
    let w = Workbench::new();
    w.run("genpkey -genparam -algorithm DSA -pkeyopt dsa_paramgen_bits:2048 -out dsa.params");
    let supported = "(use RSA of 2048 to 4096 bits, ECDSA P-256/P-384 or Ed25519)";
    let cases = [
        (
            "dsa",
            "-paramfile dsa.params".to_owned(),
            format!("client: private key type DSA is not supported {supported}"),
        ),
        (
            "ed448",
            "-algorithm ed448".to_owned(),
            format!("client: private key type Ed448 is not supported {supported}"),
        ),
        (
            "pss",
            "-algorithm RSA-PSS -pkeyopt rsa_keygen_bits:2048".to_owned(),
            format!("client: private key type RSA-PSS is not supported {supported}"),
        ),
        (
            "rsa1024",
            "-algorithm RSA -pkeyopt rsa_keygen_bits:1024".to_owned(),
            "client: private key is not supported: RSA keys must have 2048 to 4096 bits".to_owned(),
        ),
        (
            "p521",
            "-algorithm EC -pkeyopt ec_paramgen_curve:P-521".to_owned(),
            "client: private key is not supported: EC keys must be on curve P-256 or P-384".to_owned(),
        ),
    ];
    for (name, options, expected) in cases {
        let bundle = w.bundle_of_key(name, &options);
        assert_eq!(refused(&bundle, PASSWORD).to_string(), expected, "{name}");
    }
}
