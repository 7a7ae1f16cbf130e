//! The fault suite (`tools/faults.py`) in short runs: every fault it injects, in the mode it
//! applies to, against the binaries of this build, with the oracle that knows every entry and
//! exit the positions imply. The suite exits non-zero when an event is lost or made up (outside
//! the all-in-one's crash, whose unevaluated positions are gone), when a stay is left open, or
//! when an exit comes without its entry; its table is shown on failure.
#![allow(clippy::unwrap_used)]

use std::process::Command;

#[test]
fn short_runs_of_every_fault_lose_nothing_and_leave_no_stay_open() {
    let zonecast = zonecast_tests::process::binary("zonecast");
    let bin = zonecast.parent().unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tools/faults.py");
    let out = Command::new("python3")
        .arg(script)
        .args(["--steps", "60", "--devices", "20"])
        .env("BIN", bin)
        .env("ZONECAST_TEST_DATABASE_URL", zonecast_tests::database_admin_url())
        .output()
        .expect("python3 runs");
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{table}\n{}", String::from_utf8_lossy(&out.stderr));
    // One row per fault, each with every expected transition delivered.
    let rows: Vec<&str> = table.lines().skip(2).collect();
    assert_eq!(rows.len(), 8, "{table}");
}
