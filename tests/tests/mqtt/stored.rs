//! What the store holds of connections and profiles: no password or private key in the clear.

use zonecast_tests::pki::{BUNDLE_PASSWORD, b64, pki};
use zonecast_tests::{Mode, Server, json};

use super::{PASSWORD, create_connection, create_profile, tls_connection};

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Every non-null value of every column of every table of the database, with where it is.
/// Binary columns come as their bytes, everything else as its text form. The schema is read
/// from `information_schema`, so this sees tables the test does not know of.
async fn every_stored_value(database_url: &str) -> Vec<(String, Vec<u8>)> {
    let (client, connection) = tokio_postgres::connect(database_url, tokio_postgres::NoTls).await.expect("PostgreSQL");
    let connection = tokio::spawn(connection);
    let columns = client
        .query(
            "SELECT table_schema::text, table_name::text, column_name::text, data_type::text
             FROM information_schema.columns c
             WHERE table_schema NOT IN ('pg_catalog', 'information_schema')
               AND EXISTS (SELECT 1 FROM information_schema.tables t WHERE t.table_schema = c.table_schema
                           AND t.table_name = c.table_name AND t.table_type = 'BASE TABLE')",
            &[],
        )
        .await
        .unwrap();
    assert!(!columns.is_empty(), "the database has no tables");
    let mut values = Vec::new();
    for column in columns {
        let (schema, table, name, kind): (String, String, String, String) =
            (column.get(0), column.get(1), column.get(2), column.get(3));
        let place = format!("{schema}.{table}.{name}");
        let from = format!("\"{schema}\".\"{table}\"");
        if kind == "bytea" {
            let sql = format!("SELECT \"{name}\" FROM {from} WHERE \"{name}\" IS NOT NULL");
            for row in client.query(&sql, &[]).await.unwrap() {
                values.push((place.clone(), row.get::<_, Vec<u8>>(0)));
            }
        } else {
            let sql = format!("SELECT \"{name}\"::text FROM {from} WHERE \"{name}\" IS NOT NULL");
            for row in client.query(&sql, &[]).await.unwrap() {
                values.push((place.clone(), row.get::<_, String>(0).into_bytes()));
            }
        }
    }
    drop(client);
    connection.await.unwrap().unwrap();
    values
}

pub(crate) async fn no_password_or_private_key_is_stored_in_the_clear(mode: Mode) {
    let server = Server::start(mode).await;
    let p = pki();
    let profile = create_profile(&server, pki().profile("vault-check-profile")).await;
    let mut legacy = pki().profile("vault-check-legacy");
    legacy["client"] = json!(p.client_legacy());
    create_profile(&server, legacy).await;
    let connection = create_connection(&server, tls_connection("vault-check.example", &profile)).await;

    let secrets: Vec<(&str, Vec<u8>)> = vec![
        ("connection password", PASSWORD.into()),
        ("bundle password", BUNDLE_PASSWORD.into()),
        ("PKCS#12 bundle", p.client_p12.clone()),
        ("PKCS#12 bundle, base64", p.client().into_bytes()),
        ("PKCS#12 bundle, hex", hex(&p.client_p12).into_bytes()),
        ("legacy PKCS#12 bundle", p.client_p12_legacy.clone()),
        ("legacy PKCS#12 bundle, base64", p.client_legacy().into_bytes()),
        ("client private key", p.client_key_der.clone()),
        ("client private key, base64", b64(&p.client_key_der).into_bytes()),
        ("client private key, hex", hex(&p.client_key_der).into_bytes()),
    ];
    let lower_id = connection.to_lowercase();
    match mode {
        Mode::Distributed => {
            let values = every_stored_value(server.database_url.as_deref().unwrap()).await;
            // The scan must have seen what was written, or it proves nothing.
            assert!(values.iter().any(|(_, v)| contains(v, lower_id.as_bytes())), "the connection row was not seen");
            assert!(values.iter().any(|(_, v)| contains(v, b"vault-check-profile")), "the profile row was not seen");
            for (place, value) in &values {
                for (what, secret) in &secrets {
                    assert!(!contains(value, secret), "the {what} is stored in the clear in {place}");
                }
            }
        }
        Mode::AllInOne => {
            let file = server.data_dir.path().join(zonecast::DATABASE_FILE);
            let mut bytes = std::fs::read(&file).expect("the SQLite file exists");
            let wal = file.with_file_name(format!("{}-wal", zonecast::DATABASE_FILE));
            if wal.exists() {
                bytes.extend(std::fs::read(&wal).unwrap());
            }
            assert!(contains(&bytes, lower_id.as_bytes()), "the connection was not found in the SQLite files");
            assert!(contains(&bytes, b"vault-check-profile"), "the profile was not found in the SQLite files");
            for (what, secret) in &secrets {
                assert!(!contains(&bytes, secret), "the {what} is stored in the clear in the SQLite files");
            }
        }
    }
    server.stop().await;
}
