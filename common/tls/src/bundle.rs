//! Opening a PKCS#12 client bundle as people make them (any X.509 version of client
//! certificate, with or without the CA chain, OpenSSL 3 default or `-legacy` encryption) and
//! saying exactly why one cannot serve as a client identity.
//!
//! The certificate itself is not judged here beyond its validity period: the broker decides
//! whether it trusts it. rustls' end-entity parser is deliberately not used, since it refuses
//! X.509 v1 certificates, which `openssl x509 -req` makes unless given an extensions file.

use p12_keystore::error::Error as P12Error;
use p12_keystore::{CertificateBag, Pkcs12Archive, PrivateKeyBag};
use ring::signature::{self, KeyPair};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use x509_parser::certificate::X509Certificate;
use x509_parser::time::ASN1Time;

use crate::{ProfileError, err};

const RSA: &str = "1.2.840.113549.1.1.1";
const EC: &str = "1.2.840.10045.2.1";
const ED25519: &str = "1.3.101.112";

/// What rustls with ring can sign with, for the messages that refuse anything else.
pub(crate) const SUPPORTED: &str = "use RSA of 2048 to 4096 bits, ECDSA P-256/P-384 or Ed25519";

/// Names of key types that OpenSSL can put in a bundle but ring cannot sign with.
fn key_type_name(oid: &str) -> &str {
    match oid {
        "1.2.840.10040.4.1" => "DSA",
        "1.2.840.113549.1.1.10" => "RSA-PSS",
        "1.2.840.113549.1.3.1" | "1.2.840.10046.2.1" => "DH",
        "1.3.101.110" => "X25519",
        "1.3.101.111" => "X448",
        "1.3.101.113" => "Ed448",
        other => other,
    }
}

/// The client chain (leaf first) and PKCS#8 key of `client`, checked at `now` (Unix seconds).
pub(crate) fn open(
    client: &[u8],
    password: &str,
    now: i64,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), ProfileError> {
    let archive = Pkcs12Archive::from_pkcs12(client, password).map_err(|e| unreadable(client, &e))?;
    let key = pick_key(&archive).ok_or_else(|| {
        err(
            "client",
            if archive.certs.is_empty() {
                "holds neither a private key nor a certificate"
            } else {
                "holds no private key, only certificates (export the bundle with its key: openssl pkcs12 -export -inkey ...)"
            },
        )
    })?;
    if archive.certs.is_empty() {
        return Err(err("client", "holds no certificate, only a private key (export the bundle with -in client.pem)"));
    }
    let public = public_key(key.key.as_der(), &key.key.oid().to_string())?;
    let parsed = archive
        .certs
        .iter()
        .map(|bag| parse(bag.cert.as_der()).map(|cert| (bag, cert)))
        .collect::<Result<Vec<_>, _>>()?;
    let holds_key =
        |cert: &X509Certificate<'_>| cert.public_key().subject_public_key.data.as_ref() == public.as_slice();
    // The certificate OpenSSL linked to the key (same localKeyId) is the client certificate; a
    // bundle without that link gets the certificate that holds the key's public key.
    let linked = parsed.iter().find(|(bag, _)| linked_to(bag, key));
    let leaf = match linked {
        Some(leaf) if holds_key(&leaf.1) => leaf,
        Some(_) => return Err(mismatch()),
        None => parsed.iter().find(|(_, cert)| holds_key(cert)).ok_or_else(mismatch)?,
    };
    check_validity(&leaf.1, now)?;
    let chain = chain(leaf.0, &archive.certs);
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.key.as_der().to_vec()));
    Ok((chain, key))
}

/// Why the archive could not be read. Only a failed integrity check (MAC) proves a wrong
/// password; a bundle without a MAC opened with a wrong password fails later, as garbage.
fn unreadable(client: &[u8], e: &P12Error) -> ProfileError {
    match e {
        P12Error::MacError(_) => err("client", "cannot be opened: wrong password"),
        P12Error::UnsupportedEncryptionScheme | P12Error::UnsupportedMacAlgorithm => err(
            "client",
            "cannot be opened: its encryption is not supported (use OpenSSL 3's default or -legacy encryption)",
        ),
        _ if !looks_like_pfx(client) => err("client", "is not a PKCS#12 bundle"),
        _ => err("client", "cannot be opened: wrong password, or the bundle is damaged"),
    }
}

/// Whether `data` starts as a PKCS#12 PFX does: a SEQUENCE whose first element is INTEGER 3.
fn looks_like_pfx(data: &[u8]) -> bool {
    let [0x30, length, rest @ ..] = data else { return false };
    let skip = if *length < 0x80 { 0 } else { usize::from(length & 0x7f) };
    rest.get(skip..skip + 3) == Some(&[0x02, 0x01, 0x03][..])
}

/// The key with a linked certificate if there is one, else the first key.
fn pick_key(archive: &Pkcs12Archive) -> Option<&PrivateKeyBag> {
    archive.keys.iter().find(|key| archive.certs.iter().any(|bag| linked_to(bag, key))).or_else(|| archive.keys.first())
}

fn linked_to(bag: &CertificateBag, key: &PrivateKeyBag) -> bool {
    match (&bag.local_key_id, &key.local_key_id) {
        (Some(cert_id), Some(key_id)) => *cert_id == key_id.0,
        _ => false,
    }
}

/// The public key of a PKCS#8 private key, as the subjectPublicKey bits of its certificate
/// hold it, or why ring cannot sign with the key.
fn public_key(pkcs8: &[u8], oid: &str) -> Result<Vec<u8>, ProfileError> {
    match oid {
        RSA => signature::RsaKeyPair::from_pkcs8(pkcs8).map(|k| k.public_key().as_ref().to_vec()).map_err(|e| match e
            .to_string()
            .as_str()
        {
            "TooSmall" | "TooLarge" => {
                err("client", "private key is not supported: RSA keys must have 2048 to 4096 bits")
            }
            reason => err("client", format!("private key is an RSA key that cannot be used ({reason})")),
        }),
        EC => {
            let rng = ring::rand::SystemRandom::new();
            [&signature::ECDSA_P256_SHA256_ASN1_SIGNING, &signature::ECDSA_P384_SHA384_ASN1_SIGNING]
                .into_iter()
                .find_map(|alg| signature::EcdsaKeyPair::from_pkcs8(alg, pkcs8, &rng).ok())
                .map(|k| k.public_key().as_ref().to_vec())
                .ok_or_else(|| err("client", "private key is not supported: EC keys must be on curve P-256 or P-384"))
        }
        ED25519 => signature::Ed25519KeyPair::from_pkcs8_maybe_unchecked(pkcs8)
            .map(|k| k.public_key().as_ref().to_vec())
            .map_err(|e| err("client", format!("private key is an Ed25519 key that cannot be used ({e})"))),
        other => {
            Err(err("client", format!("private key type {} is not supported ({SUPPORTED})", key_type_name(other))))
        }
    }
}

fn parse(der: &[u8]) -> Result<X509Certificate<'_>, ProfileError> {
    x509_parser::parse_x509_certificate(der)
        .map(|(_, cert)| cert)
        .map_err(|_| err("client", "holds a certificate that is not readable X.509"))
}

fn mismatch() -> ProfileError {
    err("client", "certificate and private key do not match (the certificate holds another public key)")
}

fn check_validity(cert: &X509Certificate<'_>, now: i64) -> Result<(), ProfileError> {
    let validity = cert.validity();
    if now > validity.not_after.timestamp() {
        return Err(err("client", format!("certificate expired on {}", utc(validity.not_after))));
    }
    if now < validity.not_before.timestamp() {
        return Err(err("client", format!("certificate is not valid yet: it starts on {}", utc(validity.not_before))));
    }
    Ok(())
}

/// `time` as RFC 3339 in UTC, e.g. `2021-01-01T00:00:00Z`.
fn utc(time: ASN1Time) -> String {
    let t = time.to_datetime();
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

/// `leaf`, then its issuers as far as the bundle holds them (a self-signed root ends it).
fn chain(leaf: &CertificateBag, certs: &[CertificateBag]) -> Vec<CertificateDer<'static>> {
    let mut chain = vec![&leaf.cert];
    let mut current = &leaf.cert;
    while current.subject() != current.issuer()
        && let Some(issuer) =
            certs.iter().map(|bag| &bag.cert).find(|c| c.subject() == current.issuer() && !chain.contains(c))
    {
        chain.push(issuer);
        current = issuer;
    }
    chain.into_iter().map(|c| CertificateDer::from(c.as_der().to_vec())).collect()
}
