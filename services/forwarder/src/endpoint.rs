//! From a stored connection to MQTT client options: client id, credentials (unsealed with the
//! service keys) and TLS (the certificate profile's CA as the only trust root, its client
//! certificate as identity, the connection's host as the server name).

use std::time::Duration;

use uuid::Uuid;
use zonecast_runtime::Keys;
use zonecast_store::{StoredCertificate, StoredConnection};
use zonecast_tls::SealedProfile;

use crate::mqtt;

/// Largest event forwarded; larger ones are dropped and counted rather than sent: a broker
/// would close the whole connection on them.
pub const MAX_PAYLOAD: usize = 1024 * 1024;

/// Keep-alive the client asks the broker for.
const KEEP_ALIVE: Duration = Duration::from_secs(30);

/// The MQTT client id of one connection in one replica: `zonecast-<replica>-<connection id>`.
pub fn client_id(replica: &str, connection: Uuid) -> String {
    format!("zonecast-{replica}-{}", connection.simple())
}

/// What a client is made of. When it changes on reload the client is restarted; when only the
/// topics change it is left alone. Sealed blobs are compared as stored.
#[derive(Clone, PartialEq, Eq)]
pub struct Key {
    host: String,
    port: u16,
    tls: bool,
    certificate_profile_id: Option<Uuid>,
    username: Option<String>,
    password_sealed: Option<Vec<u8>>,
    certificate_sealed: Option<Vec<u8>>,
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Key({}:{}, tls: {})", self.host, self.port, self.tls)
    }
}

impl Key {
    /// The key of `stored` with its certificate profile, if it has one that exists.
    pub fn of(stored: &StoredConnection, certificate: Option<&StoredCertificate>) -> Self {
        let c = &stored.connection;
        Self {
            host: c.host.clone(),
            port: c.port,
            tls: c.tls,
            certificate_profile_id: c.certificate_profile_id,
            username: c.username.clone(),
            password_sealed: stored.password_sealed.clone(),
            certificate_sealed: certificate.filter(|_| c.tls).map(|cert| cert.sealed.clone()),
        }
    }
}

/// Client options for `stored`, or why it cannot be connected (a message without secrets).
pub fn options(
    stored: &StoredConnection,
    certificate: Option<&StoredCertificate>,
    keys: &Keys,
    client_id: String,
) -> Result<mqtt::Options, String> {
    let c = &stored.connection;
    let mut options =
        mqtt::Options { client_id, host: c.host.clone(), port: c.port, keep_alive: KEEP_ALIVE, login: None, tls: None };
    if let Some(username) = &c.username {
        let password = match &stored.password_sealed {
            None => String::new(),
            Some(sealed) => keys
                .open(sealed)
                .ok()
                .and_then(|plain| String::from_utf8(plain).ok())
                .ok_or("the stored password cannot be unsealed (is ZONECAST_SECRET_KEY the one the API uses?)")?,
        };
        options.login = Some((username.clone(), password));
    }
    if c.tls {
        let profile = c.certificate_profile_id.ok_or("TLS is on but no certificate profile is set")?;
        let certificate = certificate.ok_or_else(|| format!("certificate profile {} does not exist", profile))?;
        let plain = keys.open(&certificate.sealed).map_err(|_| {
            "the certificate profile cannot be unsealed (is ZONECAST_SECRET_KEY the one the API uses?)".to_owned()
        })?;
        let config = SealedProfile::from_bytes(&plain)
            .and_then(|p| p.open())
            .and_then(zonecast_tls::client_config)
            .map_err(|e| format!("certificate profile {profile} cannot be used: {e}"))?;
        options.tls = Some(config);
    }
    Ok(options)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use zonecast_model::{Connection, Secret};

    use super::*;

    fn keys() -> Keys {
        Keys::from_secret(&Secret::new(zonecast_runtime::keys::random_base64(32).unwrap())).unwrap()
    }

    fn stored(keys: &Keys, tls: bool, password: Option<&str>) -> StoredConnection {
        StoredConnection {
            connection: Connection {
                id: Uuid::new_v4(),
                host: "broker.example".into(),
                port: 1883,
                tls,
                certificate_profile_id: tls.then(Uuid::new_v4),
                username: Some("zonecast".into()),
                has_password: password.is_some(),
                topics: Vec::new(),
            },
            password_sealed: password.map(|p| keys.seal(p.as_bytes()).unwrap()),
        }
    }

    #[test]
    fn client_ids_name_the_replica_and_the_connection() {
        let id = Uuid::parse_str("6f1c3c1e-0b7a-4c1e-9d55-0a1b2c3d4e5f").unwrap();
        assert_eq!(client_id("r1", id), "zonecast-r1-6f1c3c1e0b7a4c1e9d550a1b2c3d4e5f");
    }

    #[test]
    fn the_password_is_unsealed_into_the_credentials() {
        let keys = keys();
        let s = stored(&keys, false, Some("hunter2"));
        let options = options(&s, None, &keys, "c".into()).unwrap();
        assert_eq!(options.login, Some(("zonecast".to_owned(), "hunter2".to_owned())));
        assert_eq!((options.host.as_str(), options.port), ("broker.example", 1883));
        assert!(!format!("{options:?}").contains("hunter2"), "the password is never shown");
    }

    #[test]
    fn problems_are_reported_without_secrets() {
        let keys = keys();
        let s = stored(&keys, false, Some("hunter2"));
        let error = options(&s, None, &self::keys(), "c".into()).unwrap_err();
        assert!(error.contains("cannot be unsealed") && !error.contains("hunter2"), "{error}");
        let s = stored(&keys, true, None);
        let error = options(&s, None, &keys, "c".into()).unwrap_err();
        assert!(error.contains("does not exist"), "{error}");
        let junk = StoredCertificate { id: Uuid::new_v4(), name: "x".into(), sealed: keys.seal(b"{}").unwrap() };
        let error = options(&s, Some(&junk), &keys, "c".into()).unwrap_err();
        assert!(error.contains("cannot be used"), "{error}");
    }

    #[test]
    fn keys_differ_when_what_makes_the_client_differs() {
        let keys = keys();
        let a = stored(&keys, false, Some("p"));
        let mut b = a.clone();
        b.connection.topics.push(zonecast_model::Topic { topic: "t".into(), filter_chain: serde_json::json!([]) });
        assert_eq!(Key::of(&a, None), Key::of(&b, None), "topics alone do not restart a client");
        b.connection.port = 1884;
        assert_ne!(Key::of(&a, None), Key::of(&b, None));
        let mut c = a.clone();
        c.password_sealed = Some(keys.seal(b"p").unwrap());
        assert_ne!(Key::of(&a, None), Key::of(&c, None));
    }
}
