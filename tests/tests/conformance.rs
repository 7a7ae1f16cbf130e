//! The OpenAPI document is as strict as the server and the server keeps to it: schemathesis
//! generates requests from `GET /v3/openapi.json` (valid ones and ones the document forbids)
//! against a running all-in-one and checks every answer: no server error, every status and
//! content type documented, every body matching its schema, forbidden input refused, valid
//! input not refused as malformed, credentials enforced.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use zonecast_tests::{ADMIN_KEY, Mode, Server};

/// The schemathesis release the run is written for (its command line changed between 3 and 4).
const VERSION: &str = "4.32.5";

/// Where CI installs it, and how.
const INSTALL: &str = "python3 -m venv \"$HOME/.cache/zonecast-ci/venv\" && \
                       \"$HOME/.cache/zonecast-ci/venv/bin/pip\" install 'schemathesis==4.32.5'";

/// Seconds of generated requests, after the examples and coverage phases.
const BUDGET_SECONDS: u64 = 150;

/// The schemathesis executable: `ZONECAST_SCHEMATHESIS`, else the CI virtualenv, else `PATH`.
fn schemathesis() -> PathBuf {
    let missing = |why: String| -> ! {
        panic!(
            "schemathesis {VERSION} is needed for the OpenAPI conformance test ({why}); install it with: {INSTALL} \
             (or point ZONECAST_SCHEMATHESIS at its executable)"
        )
    };
    if let Ok(path) = std::env::var("ZONECAST_SCHEMATHESIS") {
        let path = PathBuf::from(path);
        if !path.is_file() {
            missing(format!("ZONECAST_SCHEMATHESIS={} is not a file", path.display()));
        }
        return path;
    }
    let venv =
        std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache/zonecast-ci/venv/bin/schemathesis"));
    if let Some(path) = venv.filter(|p| p.is_file()) {
        return path;
    }
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .map(|dir| dir.join("schemathesis"))
        .find(|p| p.is_file());
    on_path.unwrap_or_else(|| missing("not found".into()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schemathesis_finds_no_difference_between_the_document_and_the_server() {
    let tool = schemathesis();
    let version = std::process::Command::new(&tool).arg("--version").output().expect("schemathesis runs");
    let version = String::from_utf8_lossy(&version.stdout).into_owned();
    assert!(version.contains(" 4."), "schemathesis 4 is needed, found {version:?}; install it with: {INSTALL}");

    // An import of as many devices as the limit lets through would pass the test server's body
    // limit (256 KiB), which the document cannot state: the run keeps imports smaller.
    let server = Server::start_configured(Mode::AllInOne, |c| c.limits.devices_per_import = 1_000).await;
    let (status, doc) = server.call(Method::GET, "/v3/openapi.json", Some(ADMIN_KEY), None).await;
    assert_eq!(status, StatusCode::OK, "{doc}");
    let work = tempfile::tempdir().unwrap();
    let schema = work.path().join("openapi.json");
    std::fs::write(&schema, serde_json::to_vec(&doc).unwrap()).unwrap();

    let run = tokio::process::Command::new(&tool)
        .current_dir(work.path())
        .arg("--config-file")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/schemathesis.toml"))
        .args(["run", "--no-color", "--checks", "all", "--max-examples", "25"])
        .args(["--max-time", &BUDGET_SECONDS.to_string(), "--request-timeout", "10"])
        .args(["--generation-database", "none"])
        // A live stream never ends, so no answer to it is complete within the request timeout;
        // tests/tests/event_stream.rs and position_stream.rs hold them to their document instead.
        .args(["--exclude-operation-id", "streamEvents"])
        .args(["--exclude-operation-id", "streamPositions"])
        .args(["--header", &format!("X-API-Key: {ADMIN_KEY}"), "--url", &server.base])
        .arg(&schema)
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(BUDGET_SECONDS + 240), run)
        .await
        .expect("schemathesis finished within its budget")
        .expect("schemathesis runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let cases = stdout.lines().skip_while(|l| !l.starts_with("Test cases:")).nth(1).unwrap_or("(no count)");
    println!("schemathesis: {}", cases.trim());
    assert!(
        output.status.success(),
        "schemathesis found differences between the document and the server ({}):\n{stdout}\n{stderr}",
        output.status
    );
    assert!(stdout.contains("Tested: "), "schemathesis tested no operation:\n{stdout}");
    server.stop().await;
}
