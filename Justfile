# zonecast tasks. `just --list` shows them.

# Start the all-in-one service on its embedded defaults (SQLite, in-process bus).
run:
    cargo run --release

# Start local PostgreSQL, NATS and Mosquitto if they are not running.
up:
    pg_isready -h 127.0.0.1 -q || pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start
    (exec 3<>/dev/tcp/127.0.0.1/4222) 2>/dev/null || start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log
    (exec 3<>/dev/tcp/127.0.0.1/1883) 2>/dev/null || mosquitto -d -c /etc/mosquitto/mosquitto.conf

# Build every binary and start the distributed services on the local PostgreSQL and NATS.
dist:
    cargo build --release --workspace
    deploy/run-distributed.sh

# The fault suite: each fault under load, checked against an oracle (needs `just up`).
faults *args:
    cargo build --release --workspace
    tools/faults.py {{args}}

# Chaos under load on a three-server NATS cluster with replicas of every service (tools/chaos.py).
chaos *args:
    cargo build --release --workspace
    tools/chaos.py {{args}}

# The README's test command (needs `just up`).
test:
    cargo test --workspace

# Formatting and lints as CI runs them.
lint:
    cargo fmt --all -- --check
    cargo clippy --workspace --all-targets -- -D warnings

# Criterion benchmarks.
bench:
    cargo bench --workspace

# What CI runs.
ci:
    bash .ci/run
