//! Certificate profiles: create, update, list and delete. Uploads are opened (PKCS#12 with
//! its password, CA parsed) before anything is stored, and stored sealed.

use bytes::Bytes;
use uuid::Uuid;
use warp::reply::Response;
use zonecast_model::{CertificateProfileInput, CertificateProfileSummary, ConfigKind, format_id};
use zonecast_store::StoredCertificate;

use crate::body;
use crate::context::Context;
use crate::error::ApiError;
use crate::reply;

fn seal(ctx: &Context, id: Uuid, body: &Bytes) -> Result<StoredCertificate, ApiError> {
    let input = CertificateProfileInput::parse(&body::object(body, &ctx.limits)?)?;
    // The whole way a forwarder takes it, so that a profile it could not use is refused here.
    zonecast_tls::open_profile(&input.ca, &input.client, input.password.expose())
        .and_then(zonecast_tls::client_config)
        .map_err(|e| ApiError::Invalid(e.to_string()))?;
    let plain = zonecast_tls::SealedProfile::new(&input.ca, &input.client, input.password.expose()).to_bytes();
    let sealed = ctx.keys.seal(&plain).map_err(|e| ApiError::Internal(e.to_string()))?;
    Ok(StoredCertificate { id, name: input.name, sealed })
}

fn summary(c: &StoredCertificate) -> CertificateProfileSummary {
    CertificateProfileSummary { id: format_id(&c.id), name: c.name.clone() }
}

/// Lists profiles, ID and name only.
pub async fn list(ctx: &Context) -> Result<Response, ApiError> {
    let out: Vec<_> = ctx
        .store
        .list_certificates()
        .await?
        .iter()
        .map(|(id, name)| CertificateProfileSummary { id: format_id(id), name: name.clone() })
        .collect();
    Ok(reply::ok(&out))
}

/// `POST /v3/modules/mqtt/certificates`: creates a profile.
pub async fn create(ctx: &Context, body: &Bytes) -> Result<Response, ApiError> {
    let c = seal(ctx, Uuid::new_v4(), body)?;
    ctx.store.insert_certificate(&c).await?;
    let applied = ctx.announce(ConfigKind::Certificates, vec![format_id(&c.id)], None).await;
    Ok(applied.stamp(reply::ok(&summary(&c))))
}

/// `PUT /v3/modules/mqtt/certificates/{ID}`: replaces a profile.
pub async fn update(ctx: &Context, id: Uuid, body: &Bytes) -> Result<Response, ApiError> {
    ctx.store.get_certificate(id).await?;
    let c = seal(ctx, id, body)?;
    ctx.store.update_certificate(&c).await?;
    let applied = ctx.announce(ConfigKind::Certificates, vec![format_id(&id)], None).await;
    Ok(applied.stamp(reply::ok(&summary(&c))))
}

/// Deletes a profile no connection uses (422 otherwise).
pub async fn delete(ctx: &Context, id: Uuid) -> Result<Response, ApiError> {
    ctx.store.delete_certificate(id).await?;
    let applied = ctx.announce(ConfigKind::Certificates, vec![format_id(&id)], None).await;
    Ok(applied.stamp(reply::ack()))
}
