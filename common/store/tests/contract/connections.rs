//! The connection, certificate profile and status contract, and the service views of one store.

use std::sync::Arc;

use uuid::Uuid;
use zonecast_model::{CollidingDevice, format_id};
use zonecast_store::{
    ApiStore, ConnectionStatus, EvaluatorStore, ForwarderStore, Store, StoreError, StoredCertificate,
};

use super::fixtures::{assert_not_found, at, certificate, collision, connection, status, zone};

pub(crate) async fn connections_round_trip_in_creation_order(store: Arc<dyn Store>) {
    let profile = certificate("ca");
    store.insert_certificate(&profile).await.unwrap();
    let tls = connection(Some(profile.id), "broker-b.example");
    let mut plain = connection(None, "broker-a.example");
    plain.password_sealed = None;
    plain.connection.has_password = false;
    plain.connection.username = None;
    store.insert_connection(&tls, 100).await.unwrap();
    store.insert_connection(&plain, 100).await.unwrap();
    assert_eq!(store.list_connections().await.unwrap(), vec![tls.clone(), plain.clone()]);
    assert_eq!(store.get_connection(tls.connection.id).await.unwrap(), tls);

    let mut changed = tls.clone();
    changed.connection.tls = false;
    changed.connection.certificate_profile_id = None;
    changed.connection.port = 1883;
    changed.password_sealed = Some(vec![1, 2, 3]);
    assert_eq!(store.update_connection(&changed, false).await.unwrap(), changed);
    assert_eq!(store.get_connection(tls.connection.id).await.unwrap(), changed);
    assert_eq!(store.list_connections().await.unwrap(), vec![changed.clone(), plain.clone()]);

    // An update that keeps the password keeps the one stored at that moment, even if it read
    // none (a concurrent write set it): the password is not part of what it replaces.
    let mut renamed = changed.clone();
    renamed.connection.host = "renamed".to_owned();
    renamed.password_sealed = None;
    renamed.connection.has_password = false;
    let kept = store.update_connection(&renamed, true).await.unwrap();
    assert_eq!((kept.password_sealed.as_deref(), kept.connection.has_password), (Some(&[1u8, 2, 3][..]), true));
    assert_eq!(kept.connection.host, "renamed");
    let changed = kept;

    let missing = connection(None, "nowhere");
    let id = format_id(&missing.connection.id);
    assert_not_found(store.get_connection(missing.connection.id).await, "connection", &id);
    assert_not_found(store.update_connection(&missing, false).await, "connection", &id);
    assert_not_found(store.delete_connection(missing.connection.id).await, "connection", &id);
    assert!(store.insert_connection(&plain, 100).await.is_err(), "duplicate id");

    store.delete_connection(plain.connection.id).await.unwrap();
    assert_eq!(store.list_connections().await.unwrap(), vec![changed]);
    // Debug shows the size of the sealed password, never its bytes.
    let debug = format!("{tls:?}");
    assert!(debug.contains("password_sealed_len: Some(5)") && !debug.contains("[9, 8, 7"), "{debug}");
}

pub(crate) async fn a_connection_must_name_an_existing_certificate_profile(store: Arc<dyn Store>) {
    let missing = Uuid::new_v4();
    let c = connection(Some(missing), "broker");
    match store.insert_connection(&c, 100).await {
        Err(StoreError::Reference { field, what, id }) => {
            assert_eq!((field, what, id), ("CertificateProfileID", "certificate profile", format_id(&missing)));
        }
        other => panic!("expected Reference, got {other:?}"),
    }
    let err = store.insert_connection(&c, 100).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("CertificateProfileID: certificate profile {} does not exist", format_id(&missing))
    );
    assert!(store.list_connections().await.unwrap().is_empty());

    let profile = certificate("ca");
    store.insert_certificate(&profile).await.unwrap();
    let ok = connection(Some(profile.id), "broker");
    store.insert_connection(&ok, 100).await.unwrap();
    let mut bad = ok.clone();
    bad.connection.certificate_profile_id = Some(missing);
    bad.connection.host = "elsewhere".to_owned();
    assert!(matches!(
        store.update_connection(&bad, false).await,
        Err(StoreError::Reference { field: "CertificateProfileID", .. })
    ));
    assert_eq!(store.get_connection(ok.connection.id).await.unwrap(), ok);
}

pub(crate) async fn a_certificate_profile_in_use_cannot_be_deleted(store: Arc<dyn Store>) {
    let profile = certificate("ca");
    store.insert_certificate(&profile).await.unwrap();
    let user = connection(Some(profile.id), "broker");
    store.insert_connection(&user, 100).await.unwrap();
    store.put_connection_status(&status(user.connection.id, "fwd-1", 3, 0)).await.unwrap();
    match store.delete_certificate(profile.id).await {
        Err(StoreError::InUse { what, id, by }) => {
            assert_eq!(what, "certificate profile");
            assert_eq!(id, format_id(&profile.id));
            assert_eq!(by, format!("connection {}", format_id(&user.connection.id)));
        }
        other => panic!("expected InUse, got {other:?}"),
    }
    assert_eq!(store.get_certificate(profile.id).await.unwrap(), profile);
    store.delete_connection(user.connection.id).await.unwrap();
    assert!(store.connection_status(user.connection.id).await.unwrap().is_empty());
    store.delete_certificate(profile.id).await.unwrap();
    assert!(store.list_certificates().await.unwrap().is_empty());
}

pub(crate) async fn certificate_profiles_round_trip_in_creation_order(store: Arc<dyn Store>) {
    let (b, a) = (certificate("b"), certificate("a"));
    store.insert_certificate(&b).await.unwrap();
    store.insert_certificate(&a).await.unwrap();
    assert_eq!(store.list_certificates().await.unwrap(), vec![(b.id, "b".to_owned()), (a.id, "a".to_owned())]);
    assert_eq!(store.get_certificate(a.id).await.unwrap(), a);
    assert!(store.insert_certificate(&a).await.is_err(), "duplicate id");

    let b2 = StoredCertificate { name: "b2".to_owned(), sealed: vec![42; 3000], ..b.clone() };
    store.update_certificate(&b2).await.unwrap();
    assert_eq!(store.get_certificate(b.id).await.unwrap(), b2);
    let debug = format!("{b2:?}");
    assert!(debug.contains("sealed_len: 3000") && !debug.contains("42, 42"), "{debug}");

    let ghost = certificate("ghost");
    let id = format_id(&ghost.id);
    assert_not_found(store.get_certificate(ghost.id).await, "certificate profile", &id);
    assert_not_found(store.update_certificate(&ghost).await, "certificate profile", &id);
    assert_not_found(store.delete_certificate(ghost.id).await, "certificate profile", &id);

    store.delete_certificate(b.id).await.unwrap();
    assert_eq!(store.list_certificates().await.unwrap(), vec![(a.id, "a".to_owned())]);
}

pub(crate) async fn connection_status_is_kept_per_replica(store: Arc<dyn Store>) {
    let c = connection(None, "broker");
    store.insert_connection(&c, 100).await.unwrap();
    let id = c.connection.id;
    assert!(store.connection_status(id).await.unwrap().is_empty());

    let r2 = status(id, "fwd-2", 10, 1);
    let r1 = ConnectionStatus {
        connected: false,
        last_error: Some("connection refused".to_owned()),
        ..status(id, "fwd-1", 0, 2)
    };
    store.put_connection_status(&r2).await.unwrap();
    store.put_connection_status(&r1).await.unwrap();
    assert_eq!(store.connection_status(id).await.unwrap(), vec![r1.clone(), r2.clone()]);

    let r1b = ConnectionStatus { connected: true, last_error: None, forwarded: 5, queued: 0, updated_at: at(3), ..r1 };
    store.put_connection_status(&r1b).await.unwrap();
    assert_eq!(store.connection_status(id).await.unwrap(), vec![r1b, r2]);

    // Huge counters saturate instead of wrapping.
    let huge = ConnectionStatus { forwarded: u64::MAX, ..status(id, "fwd-3", 0, 4) };
    store.put_connection_status(&huge).await.unwrap();
    let rows = store.connection_status(id).await.unwrap();
    assert_eq!(rows.last().map(|s| s.forwarded), Some(i64::MAX as u64));

    // A status for a deleted connection is ignored.
    let gone = Uuid::new_v4();
    store.put_connection_status(&status(gone, "fwd-1", 1, 5)).await.unwrap();
    assert!(store.connection_status(gone).await.unwrap().is_empty());
}

/// The compositions hand one opened store to every service as that service's view.
pub(crate) async fn each_service_view_of_one_store_sees_what_the_others_wrote(store: Arc<dyn Store>) {
    let api: Arc<dyn ApiStore> = store.clone();
    let evaluator: Arc<dyn EvaluatorStore> = store.clone();
    let forwarder: Arc<dyn ForwarderStore> = store;
    assert_eq!([evaluator.kind(), forwarder.kind()], [api.kind(); 2]);
    api.ping().await.unwrap();
    evaluator.ping().await.unwrap();
    forwarder.ping().await.unwrap();

    let z = zone("seen by all");
    api.insert_zones(std::slice::from_ref(&z)).await.unwrap();
    assert_eq!(evaluator.list_zones().await.unwrap(), vec![z.clone()]);
    let inside = collision(z.id, "00:AA:BB:CC:DD:01", 1);
    evaluator.write_collisions(std::slice::from_ref(&inside), &[], &[], &Default::default()).await.unwrap();
    assert_eq!(api.colliding_devices(z.id).await.unwrap(), vec![CollidingDevice::from(inside)]);

    let c = connection(None, "broker");
    api.insert_connection(&c, 100).await.unwrap();
    assert_eq!(forwarder.list_connections().await.unwrap(), vec![c.clone()]);
    let row = status(c.connection.id, "fwd-1", 3, 2);
    forwarder.put_connection_status(&row).await.unwrap();
    assert_eq!(api.connection_status(c.connection.id).await.unwrap(), vec![row]);
}

// ---------------------------------------------------------------------------------------------
// Dialect-specific behaviour
