//! Named devices: written whole, read back by MAC, listed by group and search a page at a time
//! in MAC order, deleted.

use std::sync::Arc;

use serde_json::json;
use zonecast_model::{Device, Mac};
use zonecast_store::{DeviceQuery, Store, StoreError};

fn mac(i: u8) -> Mac {
    format!("00:00:00:00:00:{i:02X}").parse().unwrap()
}

fn device(i: u8, name: &str, group: Option<&str>) -> Device {
    Device {
        mac: mac(i),
        name: name.to_owned(),
        group: group.map(str::to_owned),
        kind: Some("person".into()),
        properties: json!({"badge": i, "note": "a\u{0}b"}).as_object().unwrap().clone(),
        offline_seconds: Some(u64::from(i) * 60),
    }
}

fn macs(devices: &[Device]) -> Vec<String> {
    devices.iter().map(|d| d.mac.to_string()).collect()
}

fn all(limit: usize) -> DeviceQuery {
    DeviceQuery { limit, ..DeviceQuery::default() }
}

pub(crate) async fn devices_round_trip_and_a_put_replaces_the_whole_record(store: Arc<dyn Store>) {
    let first = device(1, "Anna", Some("night shift"));
    store.put_devices(std::slice::from_ref(&first)).await.unwrap();
    assert_eq!(store.get_device(&mac(1)).await.unwrap(), first);
    let replaced = Device {
        group: None,
        kind: None,
        properties: Default::default(),
        offline_seconds: None,
        ..device(1, "Anna B.", None)
    };
    store.put_devices(std::slice::from_ref(&replaced)).await.unwrap();
    assert_eq!(store.get_device(&mac(1)).await.unwrap(), replaced);
    assert_eq!(store.list_devices(&all(10)).await.unwrap(), vec![replaced]);
}

pub(crate) async fn unknown_devices_are_not_found_and_a_deleted_one_is_gone(store: Arc<dyn Store>) {
    let missing = store.get_device(&mac(9)).await.unwrap_err();
    assert!(
        matches!(&missing, StoreError::NotFound { what: "device", id } if id == "00:00:00:00:00:09"),
        "{missing:?}"
    );
    store.put_devices(&[device(1, "a", None), device(2, "b", None)]).await.unwrap();
    store.delete_device(&mac(1)).await.unwrap();
    assert!(matches!(store.get_device(&mac(1)).await, Err(StoreError::NotFound { .. })));
    assert!(matches!(store.delete_device(&mac(1)).await, Err(StoreError::NotFound { .. })));
    assert_eq!(macs(&store.list_devices(&all(10)).await.unwrap()), ["00:00:00:00:00:02"]);
}

pub(crate) async fn a_batch_of_devices_is_written_whole_and_the_last_of_a_mac_wins(store: Arc<dyn Store>) {
    let batch = [device(3, "c", None), device(1, "a", None), device(3, "c again", Some("g"))];
    store.put_devices(&batch).await.unwrap();
    let listed = store.list_devices(&all(10)).await.unwrap();
    assert_eq!(listed, vec![batch[1].clone(), batch[2].clone()]);
    store.put_devices(&[]).await.unwrap();
    assert_eq!(store.list_devices(&all(10)).await.unwrap().len(), 2);
}

pub(crate) async fn devices_are_listed_in_mac_order_a_page_at_a_time(store: Arc<dyn Store>) {
    let devices: Vec<Device> = [5, 1, 4, 2, 3].into_iter().map(|i| device(i, &format!("d{i}"), None)).collect();
    store.put_devices(&devices).await.unwrap();
    let first = store.list_devices(&all(2)).await.unwrap();
    assert_eq!(macs(&first), ["00:00:00:00:00:01", "00:00:00:00:00:02"]);
    let next = DeviceQuery { after: Some(first[1].mac.clone()), ..all(2) };
    assert_eq!(macs(&store.list_devices(&next).await.unwrap()), ["00:00:00:00:00:03", "00:00:00:00:00:04"]);
    let last = DeviceQuery { after: Some(mac(4)), ..all(2) };
    assert_eq!(macs(&store.list_devices(&last).await.unwrap()), ["00:00:00:00:00:05"]);
    let past = DeviceQuery { after: Some(mac(5)), ..all(2) };
    assert!(store.list_devices(&past).await.unwrap().is_empty());
}

pub(crate) async fn devices_are_selected_by_group_and_by_name_or_mac_text(store: Arc<dyn Store>) {
    let devices = [
        device(1, "Forklift Ölfass", Some("fleet")),
        device(2, "Anna", Some("staff")),
        device(0xAB, "Bob", None),
        device(4, "forklift 2", Some("fleet")),
    ];
    store.put_devices(&devices).await.unwrap();
    let select = |query: DeviceQuery| {
        let store = store.clone();
        async move { macs(&store.list_devices(&query).await.unwrap()) }
    };
    let fleet = DeviceQuery { group: Some(Some("fleet".into())), ..all(10) };
    assert_eq!(select(fleet).await, ["00:00:00:00:00:01", "00:00:00:00:00:04"]);
    assert_eq!(select(DeviceQuery { group: Some(None), ..all(10) }).await, ["00:00:00:00:00:AB"]);
    let other_case = DeviceQuery { group: Some(Some("Fleet".into())), ..all(10) };
    assert!(select(other_case).await.is_empty(), "groups match exactly");
    let text = |t: &str| DeviceQuery { search: Some(DeviceQuery::search(t)), ..all(10) };
    assert_eq!(select(text("FORKLIFT")).await, ["00:00:00:00:00:01", "00:00:00:00:00:04"]);
    assert_eq!(select(text("ölfass")).await, ["00:00:00:00:00:01"], "names fold beyond ASCII");
    assert_eq!(select(text("00-ab")).await, ["00:00:00:00:00:AB"], "a MAC is found in any spelling");
    assert_eq!(select(text("%")).await, Vec::<String>::new(), "no wildcards");
    let both = DeviceQuery { group: Some(Some("fleet".into())), search: Some(DeviceQuery::search("2")), ..all(10) };
    assert_eq!(select(both).await, ["00:00:00:00:00:04"]);
    let paged = DeviceQuery { group: Some(Some("fleet".into())), after: Some(mac(1)), ..all(1) };
    assert_eq!(select(paged).await, ["00:00:00:00:00:04"]);
}
