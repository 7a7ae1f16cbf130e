//! zonecast's black-box tests, as one test binary so the workspace is linked once for them:
//! each module drives the real services (in process, or as the binaries) through their public
//! surfaces (HTTP, NATS, MQTT) against this machine's PostgreSQL, NATS and Mosquitto.
//! `cargo test -p zonecast-tests --test blackbox -- <module>::` runs one module. The browser
//! console's tests are the `console` binary (`tests/console/`), run after this one.

mod alarms;
mod auth;
mod bad_input;
mod cluster;
mod cluster_status;
mod concurrency;
mod configuration;
mod conformance;
mod demo;
mod deploy;
mod devices;
mod durability;
mod evaluator;
mod event_stream;
mod failover;
mod fault_suite;
mod forwarder;
mod history;
mod http_actions;
mod http_connections;
mod ingestor;
mod limits;
mod local_cluster;
mod metrics;
mod mqtt;
mod nats_input;
mod openapi;
mod order;
mod pinned;
mod position_stream;
mod read_your_writes;
mod replicated;
mod smoke;
mod zones;
