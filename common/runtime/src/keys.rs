//! Key material: one 32-byte master secret from which the key that seals stored secrets
//! (AES-256-GCM) and the key that signs bearer tokens (HMAC-SHA256) are derived with HKDF, so
//! a database dump alone reveals no password or private key.

use std::io::Write;
use std::path::{Path, PathBuf};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::rand::{SecureRandom, SystemRandom};
use ring::{hkdf, hmac};
use zonecast_model::Secret;

/// Why keys could not be had or a sealed value could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The configured secret is not base64 of 32 bytes.
    #[error("ZONECAST_SECRET_KEY must be base64 of 32 random bytes")]
    BadSecret,
    /// Reading or writing the key file failed.
    #[error("key file {path}: {reason}")]
    File {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// A sealed value is corrupt or was sealed with another key.
    #[error("sealed value cannot be opened (corrupt, or sealed with another key)")]
    Open,
    /// The system random source failed.
    #[error("system random source failed")]
    Random,
}

/// The derived keys.
pub struct Keys {
    seal: LessSafeKey,
    sign: hmac::Key,
    rng: SystemRandom,
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Keys(***)")
    }
}

/// Name of the generated master key inside the data directory.
pub const KEY_FILE: &str = "secret.key";

/// `n` random bytes, base64.
pub fn random_base64(n: usize) -> Result<String, KeyError> {
    let mut bytes = vec![0u8; n];
    SystemRandom::new().fill(&mut bytes).map_err(|_| KeyError::Random)?;
    Ok(STANDARD.encode(bytes))
}

/// Writes `text` to `path` readable by the owner only (mode 0600), creating parent folders.
pub fn write_private(path: &Path, text: &str) -> Result<(), KeyError> {
    let err = |e: std::io::Error| KeyError::File { path: path.to_owned(), reason: e.to_string() };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(err)?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path).map_err(err)?;
    file.write_all(text.as_bytes()).map_err(err)?;
    file.write_all(b"\n").map_err(err)
}

impl Keys {
    /// Keys from a configured master secret (base64 of 32 bytes).
    pub fn from_secret(secret: &Secret) -> Result<Self, KeyError> {
        let master = STANDARD.decode(secret.expose().trim()).map_err(|_| KeyError::BadSecret)?;
        if master.len() != 32 {
            return Err(KeyError::BadSecret);
        }
        let prk = hkdf::Salt::new(hkdf::HKDF_SHA256, b"zonecast").extract(&master);
        let seal_okm = prk.expand(&[b"seal"], &AES_256_GCM).map_err(|_| KeyError::BadSecret)?;
        let sign_okm = prk.expand(&[b"sign"], hmac::HMAC_SHA256).map_err(|_| KeyError::BadSecret)?;
        Ok(Self {
            seal: LessSafeKey::new(UnboundKey::from(seal_okm)),
            sign: hmac::Key::from(sign_okm),
            rng: SystemRandom::new(),
        })
    }

    /// Keys from `<data_dir>/secret.key`, generating that file (mode 0600) on first start.
    /// Returns whether the file was created.
    pub fn load_or_generate(data_dir: &Path) -> Result<(Self, bool), KeyError> {
        let path = data_dir.join(KEY_FILE);
        match std::fs::read_to_string(&path) {
            Ok(text) => Ok((Self::from_secret(&Secret::new(text.trim()))?, false)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let secret = random_base64(32)?;
                write_private(&path, &secret)?;
                Ok((Self::from_secret(&Secret::new(secret))?, true))
            }
            Err(e) => Err(KeyError::File { path, reason: e.to_string() }),
        }
    }

    /// Encrypts `plain`: a random nonce followed by the ciphertext and tag.
    pub fn seal(&self, plain: &[u8]) -> Result<Vec<u8>, KeyError> {
        let mut nonce = [0u8; NONCE_LEN];
        self.rng.fill(&mut nonce).map_err(|_| KeyError::Random)?;
        let mut out = plain.to_vec();
        self.seal
            .seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::empty(), &mut out)
            .map_err(|_| KeyError::Random)?;
        let mut sealed = nonce.to_vec();
        sealed.extend_from_slice(&out);
        Ok(sealed)
    }

    /// Decrypts what [`Keys::seal`] produced.
    pub fn open(&self, sealed: &[u8]) -> Result<Vec<u8>, KeyError> {
        if sealed.len() < NONCE_LEN {
            return Err(KeyError::Open);
        }
        let (nonce, body) = sealed.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| KeyError::Open)?;
        let mut buf = body.to_vec();
        let plain = self.seal.open_in_place(nonce, Aad::empty(), &mut buf).map_err(|_| KeyError::Open)?;
        Ok(plain.to_vec())
    }

    /// [`Keys::seal`] of a text, as base64: how a secret is kept inside stored JSON.
    pub fn seal_text(&self, plain: &str) -> Result<String, KeyError> {
        self.seal(plain.as_bytes()).map(|sealed| STANDARD.encode(sealed))
    }

    /// Opens what [`Keys::seal_text`] produced.
    pub fn open_text(&self, sealed: &str) -> Result<Secret, KeyError> {
        let bytes = STANDARD.decode(sealed).map_err(|_| KeyError::Open)?;
        String::from_utf8(self.open(&bytes)?).map(Secret::new).map_err(|_| KeyError::Open)
    }

    /// HMAC-SHA256 tag of `data`.
    pub fn sign(&self, data: &[u8]) -> Vec<u8> {
        hmac::sign(&self.sign, data).as_ref().to_vec()
    }

    /// Whether `tag` is the tag of `data` (constant time).
    pub fn verify(&self, data: &[u8], tag: &[u8]) -> bool {
        hmac::verify(&self.sign, data, tag).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys() -> Keys {
        Keys::from_secret(&Secret::new(random_base64(32).unwrap())).unwrap()
    }

    #[test]
    fn sealed_values_open_with_the_same_key_only() {
        let (a, b) = (keys(), keys());
        let sealed = a.seal(b"hunter2").unwrap();
        assert!(!sealed.windows(7).any(|w| w == b"hunter2"));
        assert_eq!(a.open(&sealed).unwrap(), b"hunter2");
        assert!(matches!(b.open(&sealed), Err(KeyError::Open)));
        let mut tampered = sealed.clone();
        *tampered.last_mut().unwrap() ^= 1;
        assert!(matches!(a.open(&tampered), Err(KeyError::Open)));
    }

    #[test]
    fn sealed_texts_open_with_the_same_key_only() {
        let (a, b) = (keys(), keys());
        let sealed = a.seal_text("a receiver's secret").unwrap();
        assert!(!sealed.contains("secret"));
        assert_eq!(a.open_text(&sealed).unwrap().expose(), "a receiver's secret");
        assert!(matches!(b.open_text(&sealed), Err(KeyError::Open)));
        assert!(matches!(a.open_text("not base64!"), Err(KeyError::Open)));
    }

    #[test]
    fn signatures_verify_with_the_same_key_only() {
        let (a, b) = (keys(), keys());
        let tag = a.sign(b"payload");
        assert!(a.verify(b"payload", &tag));
        assert!(!a.verify(b"payload2", &tag));
        assert!(!b.verify(b"payload", &tag));
    }

    #[test]
    fn secrets_that_are_not_32_bytes_of_base64_are_refused() {
        assert!(matches!(Keys::from_secret(&Secret::new("short")), Err(KeyError::BadSecret)));
        assert!(matches!(Keys::from_secret(&Secret::new(STANDARD.encode([0u8; 16]))), Err(KeyError::BadSecret)));
    }

    #[test]
    fn generated_key_file_is_private_and_reused() {
        let dir = tempfile::tempdir().unwrap();
        let (k1, created) = Keys::load_or_generate(dir.path()).unwrap();
        assert!(created);
        let (k2, created) = Keys::load_or_generate(dir.path()).unwrap();
        assert!(!created);
        assert_eq!(k2.open(&k1.seal(b"x").unwrap()).unwrap(), b"x");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join(KEY_FILE)).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
