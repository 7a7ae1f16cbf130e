#!/usr/bin/env bash
# Starts the distributed zonecast on this machine, on the local PostgreSQL and NATS (with
# JetStream): the config API, an ingestor, evaluators (two by default, sharing the position
# partitions among themselves) and a forwarder, as the release binaries
# (`cargo build --release --workspace`).
#
#   deploy/run-distributed.sh            # Ctrl-C (or SIGTERM) stops every service
#
# Before it starts anything it creates the PostgreSQL role and database of ZONECAST_DATABASE_URL
# when they are missing (as the `postgres` superuser: over TCP where the server trusts local
# connections, else through `sudo -u postgres` / `runuser -u postgres`). A secret key and an
# admin API key are made once in the state directory and reused; logs go there too. It prints
# where each service listens, then waits.
#
# Every setting has a default and can be given in the environment:
#   ZONECAST_DATABASE_URL   postgres://zonecast:zonecast@127.0.0.1:5432/zonecast
#   ZONECAST_NATS_URL       nats://127.0.0.1:4222
#   ZONECAST_SECRET_KEY     made once in $STATE_DIR/secret.key
#   ZONECAST_API_KEYS       "<key>:admin" with the key made once in $STATE_DIR/admin.key
#   STATE_DIR               ./zonecast-distributed
#   BIN                     target/release (the directory of the binaries)
#   API_ADDR INGEST_ADDR EVALUATOR_ADDRS FORWARDER_ADDR   the listeners: 127.0.0.1:8080,
#                           127.0.0.1:8081, "127.0.0.1:8082 127.0.0.1:8084", 127.0.0.1:8083;
#                           one evaluator starts for each address of EVALUATOR_ADDRS
# Any other ZONECAST_* variable (ZONECAST_SUBJECT_PREFIX, ZONECAST_PARTITIONS, ...) reaches every
# service as it is.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bin=${BIN:-$root/target/release}
state=${STATE_DIR:-$PWD/zonecast-distributed}
api_addr=${API_ADDR:-127.0.0.1:8080}
ingest_addr=${INGEST_ADDR:-127.0.0.1:8081}
read -r -a evaluator_addrs <<<"${EVALUATOR_ADDRS:-127.0.0.1:8082 127.0.0.1:8084}"
[ "${#evaluator_addrs[@]}" -gt 0 ] || { echo "EVALUATOR_ADDRS: give at least one address" >&2; exit 1; }
forwarder_addr=${FORWARDER_ADDR:-127.0.0.1:8083}
export ZONECAST_DATABASE_URL=${ZONECAST_DATABASE_URL:-postgres://zonecast:zonecast@127.0.0.1:5432/zonecast}
export ZONECAST_NATS_URL=${ZONECAST_NATS_URL:-nats://127.0.0.1:4222}

for b in zonecast-api zonecast-ingestor zonecast-evaluator zonecast-forwarder; do
  [ -x "$bin/$b" ] || { echo "$bin/$b is missing: build every binary first with: cargo build --release --workspace" >&2; exit 1; }
done
command -v psql >/dev/null || { echo "psql is missing: apt-get install postgresql-client" >&2; exit 1; }
mkdir -p "$state"
chmod 700 "$state"

# The role and database of ZONECAST_DATABASE_URL: postgres://user[:password]@host[:port]/database
url=${ZONECAST_DATABASE_URL%%\?*}
[[ $url =~ ^postgres(ql)?://([^:@/]+)(:([^@/]*))?@([^:/]+)(:([0-9]+))?/([^/]+)$ ]] ||
  { echo "ZONECAST_DATABASE_URL: expected postgres://user[:password]@host[:port]/database, got $url" >&2; exit 1; }
db_user=${BASH_REMATCH[2]}; db_password=${BASH_REMATCH[4]}; db_host=${BASH_REMATCH[5]}
db_port=${BASH_REMATCH[7]:-5432}; db_name=${BASH_REMATCH[8]}
superuser() { # psql as the postgres superuser, reading SQL from standard input
  if psql -h "$db_host" -p "$db_port" -U postgres -d postgres -w -Atc 'select 1' >/dev/null 2>&1; then
    psql -h "$db_host" -p "$db_port" -U postgres -d postgres -w -q -v ON_ERROR_STOP=1 "$@"
  elif command -v sudo >/dev/null && [ "$(id -u)" != 0 ]; then
    sudo -u postgres psql -p "$db_port" -d postgres -q -v ON_ERROR_STOP=1 "$@"
  elif command -v runuser >/dev/null && [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- psql -p "$db_port" -d postgres -q -v ON_ERROR_STOP=1 "$@"
  else
    echo "cannot reach PostgreSQL as its superuser to create role $db_user and database $db_name;" \
      "create them yourself (CREATE ROLE $db_user LOGIN PASSWORD '…'; CREATE DATABASE $db_name OWNER $db_user)" >&2
    return 1
  fi
}
if ! PGPASSWORD=$db_password psql -h "$db_host" -p "$db_port" -U "$db_user" -d "$db_name" -w -Atc 'select 1' >/dev/null 2>&1; then
  echo "creating PostgreSQL role $db_user and database $db_name"
  superuser -v user="$db_user" -v password="$db_password" -v db="$db_name" <<'SQL'
SELECT format('CREATE ROLE %I LOGIN PASSWORD %L', :'user', :'password')
  WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = :'user') \gexec
SELECT format('CREATE DATABASE %I OWNER %I', :'db', :'user')
  WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = :'db') \gexec
SQL
  PGPASSWORD=$db_password psql -h "$db_host" -p "$db_port" -U "$db_user" -d "$db_name" -w -Atc 'select 1' >/dev/null ||
    { echo "role $db_user cannot connect to database $db_name with the password of ZONECAST_DATABASE_URL" >&2; exit 1; }
fi

# One secret key and one admin key for every service, kept across runs.
[ -s "$state/secret.key" ] || (umask 077 && head -c 32 /dev/urandom | base64 >"$state/secret.key")
[ -s "$state/admin.key" ] || (umask 077 && od -An -N16 -tx1 /dev/urandom | tr -d ' \n' >"$state/admin.key")
export ZONECAST_SECRET_KEY=${ZONECAST_SECRET_KEY:-$(cat "$state/secret.key")}
export ZONECAST_API_KEYS=${ZONECAST_API_KEYS:-$(cat "$state/admin.key"):admin}

pids=()
stop() {
  trap - INT TERM EXIT
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap 'stop; exit 0' INT TERM
trap stop EXIT

ready() { # name address: waits for /readyz
  for _ in $(seq 1 300); do
    curl -fs -o /dev/null "http://$2/readyz" && return 0
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null || { echo "$1 stopped; its log:" >&2; tail -20 "$state/$1.log" >&2; exit 1; }; done
    sleep 0.1
  done
  echo "$1 did not become ready on $2 within 30 s; its log is $state/$1.log" >&2
  exit 1
}
start() { # name address binary [VAR=value ...]: starts a service and waits until it is ready
  local name=$1 addr=$2 binary=$3
  shift 3
  env "$@" "$bin/$binary" >"$state/$name.log" 2>&1 &
  pids+=($!)
  ready "$name" "$addr"
}

# The API first: it creates the tables the others read.
start api "$api_addr" zonecast-api ZONECAST_HTTP_ADDR="$api_addr"
# The evaluators divide the partitions among themselves as they come up.
for i in "${!evaluator_addrs[@]}"; do
  start "evaluator-$((i + 1))" "${evaluator_addrs[i]}" zonecast-evaluator ZONECAST_HTTP_ADDR="${evaluator_addrs[i]}"
done
# The ingestor is ready once the evaluators follow every partition.
start ingestor "$ingest_addr" zonecast-ingestor ZONECAST_INGEST_HTTP_ADDR="$ingest_addr"
start forwarder "$forwarder_addr" zonecast-forwarder ZONECAST_HTTP_ADDR="$forwarder_addr"

echo "zonecast is running (logs and keys in $state):"
echo "  config API and console  http://$api_addr/"
echo "  positions in            http://$ingest_addr/v3/positions"
for i in "${!evaluator_addrs[@]}"; do
  printf '  %-23s http://%s/metrics\n' "evaluator $((i + 1))" "${evaluator_addrs[i]}"
done
echo "  forwarder               http://$forwarder_addr/metrics"
echo "  admin API key           $state/admin.key"
echo "Ctrl-C stops them all."
# Waits until a service stops or a signal arrives; a service that stops takes the others down.
wait -n "${pids[@]}" || true
echo "a service stopped; stopping the others (logs in $state)" >&2
exit 1
