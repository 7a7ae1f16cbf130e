//! Who is calling and what they may do: API keys (`X-API-Key`) and bearer tokens issued for
//! client credentials. Shared by every HTTP listener that takes credentials (config API,
//! ingestor). Tokens are HMAC-signed with a key derived from the shared secret, so
//! any API replica accepts a token any other replica issued.

use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use warp::http::HeaderMap;

use zonecast_runtime::{ApiKey, Authority, Client, Keys};

/// A request without the needed credentials.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// 401: missing or bad credentials.
    #[error("{0}")]
    Unauthorized(String),
    /// 403: valid credentials, too little authority.
    #[error("{0}")]
    Forbidden(String),
    /// 500: the token could not be made.
    #[error("token could not be issued")]
    Internal,
}

const TOKEN_PREFIX: &str = "zc1.";

/// The authenticated caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// Who, as changes they make are signed: the client id of a token, or for an API key
    /// `api-key:` and 8 hex digits of the key's keyed digest (the same for a key on every
    /// replica sharing the secret key, and telling nothing of the key).
    pub subject: String,
    /// What the caller may do.
    pub authority: Authority,
}

#[derive(Serialize, Deserialize)]
struct Claims {
    sub: String,
    auth: String,
    exp: i64,
}

/// Credential checks. Configured secrets are kept only as HMAC tags, compared in constant time.
pub struct Auth {
    keys: Arc<Keys>,
    api_keys: Vec<(Vec<u8>, Authority)>,
    clients: Vec<(String, Vec<u8>, Authority)>,
    token_ttl_seconds: u64,
}

impl Auth {
    /// Checks against `api_keys` and `clients`; tokens live `token_ttl_seconds`.
    pub fn new(keys: Arc<Keys>, api_keys: &[ApiKey], clients: &[Client], token_ttl_seconds: u64) -> Self {
        Self {
            api_keys: api_keys.iter().map(|k| (keys.sign(k.key.expose().as_bytes()), k.authority)).collect(),
            clients: clients
                .iter()
                .map(|c| (c.id.clone(), keys.sign(c.secret.expose().as_bytes()), c.authority))
                .collect(),
            keys,
            token_ttl_seconds,
        }
    }

    fn api_key(&self, presented: &str) -> Option<Principal> {
        // Check every key so that timing does not tell which one matched.
        let mut found = None;
        for (tag, authority) in &self.api_keys {
            if self.keys.verify(presented.as_bytes(), tag) {
                let digest: String = tag.iter().take(4).map(|b| format!("{b:02x}")).collect();
                found = Some(Principal { subject: format!("api-key:{digest}"), authority: *authority });
            }
        }
        found
    }

    /// The caller of a request: `X-API-Key`, or `Authorization: Bearer` with a token (an API
    /// key is accepted as a bearer credential too, for scrapers that only send that header).
    pub fn authenticate(&self, headers: &HeaderMap) -> Result<Principal, AuthError> {
        if let Some(value) = headers.get("x-api-key") {
            let key = value.to_str().unwrap_or_default().trim();
            return self.api_key(key).ok_or_else(|| AuthError::Unauthorized("X-API-Key is not valid".into()));
        }
        if let Some(value) = headers.get(warp::http::header::AUTHORIZATION) {
            let value = value.to_str().unwrap_or_default().trim();
            let Some(credential) = value.strip_prefix("Bearer ").or_else(|| value.strip_prefix("bearer ")) else {
                return Err(AuthError::Unauthorized("Authorization must be 'Bearer <token>'".into()));
            };
            let credential = credential.trim();
            if credential.starts_with(TOKEN_PREFIX) {
                return self.verify_token(credential);
            }
            return self.api_key(credential).ok_or_else(|| AuthError::Unauthorized("bearer token is not valid".into()));
        }
        Err(AuthError::Unauthorized(
            "credentials required: X-API-Key or Authorization: Bearer <token> from POST /v3/auth/token".into(),
        ))
    }

    /// The caller of a request that sent no credential header but a token in its
    /// `access_token` query parameter (a browser's `EventSource` cannot set headers): only
    /// tokens from `POST /v3/auth/token` are taken there, never API keys, which would stay in
    /// logs and histories for good. It must hold `needed`.
    pub fn require_query_token(&self, token: &str, needed: Authority) -> Result<Principal, AuthError> {
        let principal = if token.starts_with(TOKEN_PREFIX) {
            self.verify_token(token).map_err(|e| match e {
                AuthError::Unauthorized(m) => AuthError::Unauthorized(m.replacen("bearer token", "access_token", 1)),
                other => other,
            })?
        } else {
            return Err(AuthError::Unauthorized(
                "access_token is not valid: it takes a token from POST /v3/auth/token".into(),
            ));
        };
        Self::authorize(&principal, needed)?;
        Ok(principal)
    }

    /// Whether a request carries a credential header (`X-API-Key` or `Authorization`).
    pub fn has_credential_header(headers: &HeaderMap) -> bool {
        headers.contains_key("x-api-key") || headers.contains_key(warp::http::header::AUTHORIZATION)
    }

    /// The caller, who must hold `needed`: 401 or 403 otherwise.
    pub fn require(&self, headers: &HeaderMap, needed: Authority) -> Result<Principal, AuthError> {
        let principal = self.authenticate(headers)?;
        Self::authorize(&principal, needed)?;
        Ok(principal)
    }

    /// 403 unless `principal` holds `needed`.
    pub fn authorize(principal: &Principal, needed: Authority) -> Result<(), AuthError> {
        if principal.authority >= needed {
            Ok(())
        } else {
            Err(AuthError::Forbidden(format!(
                "this operation needs {} authority; the credentials have {}",
                needed.as_str(),
                principal.authority.as_str()
            )))
        }
    }

    /// Issues a token for client credentials, or 401.
    pub fn issue_token(&self, auth_id: &str, auth_secret: &str) -> Result<(String, u64), AuthError> {
        let mut found = None;
        for (id, tag, authority) in &self.clients {
            if self.keys.verify(auth_secret.as_bytes(), tag) && id == auth_id {
                found = Some(*authority);
            }
        }
        let authority = found.ok_or_else(|| AuthError::Unauthorized("auth_id or auth_secret is not valid".into()))?;
        let claims = Claims {
            sub: auth_id.to_owned(),
            auth: authority.as_str().to_owned(),
            exp: chrono::Utc::now().timestamp() + i64::try_from(self.token_ttl_seconds).unwrap_or(i64::MAX / 2),
        };
        let payload = serde_json::to_vec(&claims).map_err(|_| AuthError::Internal)?;
        let body = format!("{TOKEN_PREFIX}{}", URL_SAFE_NO_PAD.encode(payload));
        let tag = URL_SAFE_NO_PAD.encode(self.keys.sign(body.as_bytes()));
        Ok((format!("{body}.{tag}"), self.token_ttl_seconds))
    }

    fn verify_token(&self, token: &str) -> Result<Principal, AuthError> {
        let invalid = || AuthError::Unauthorized("bearer token is not valid".into());
        let (body, tag) = token.rsplit_once('.').ok_or_else(invalid)?;
        let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| invalid())?;
        if !self.keys.verify(body.as_bytes(), &tag) {
            return Err(invalid());
        }
        let payload = body.strip_prefix(TOKEN_PREFIX).ok_or_else(invalid)?;
        let payload = URL_SAFE_NO_PAD.decode(payload).map_err(|_| invalid())?;
        let claims: Claims = serde_json::from_slice(&payload).map_err(|_| invalid())?;
        if claims.exp <= chrono::Utc::now().timestamp() {
            return Err(AuthError::Unauthorized("bearer token has expired".into()));
        }
        let authority = claims.auth.parse().map_err(|_| invalid())?;
        Ok(Principal { subject: claims.sub, authority })
    }
}
