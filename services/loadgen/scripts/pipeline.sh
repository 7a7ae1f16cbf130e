#!/usr/bin/env bash
# End-to-end benchmark of the distributed pipeline on this machine: one API, one ingestor, two
# evaluators (half the partitions each: 0-7 and 8-15) and one forwarder as release processes on
# the local NATS (4222), PostgreSQL (5432) and a Mosquitto of its own; zones and an MQTT
# connection set up through the API; then zonecast-loadgen at the given rate, reporting
# throughput and latency percentiles.
#   services/loadgen/scripts/pipeline.sh <rate> [seconds] [input: ingest|positions|http]
#   MODE=all-in-one services/loadgen/scripts/pipeline.sh 0 10 http    # the all-in-one instead
#   BURST=1000 BURST_AT=5 services/loadgen/scripts/pipeline.sh 20000 20  # 1,000 zone creates
#     through the API (8 at a time) from second 5 of the run, while positions flow
#   BURST_KIND=radii BURST=10000 ...                                    # device radius writes instead
#   BIN=/path/to/release/binaries ...                                   # another build's binaries
#   STAGES=1 BATCH=20 services/loadgen/scripts/pipeline.sh 20000 10 ingest  # also the latency to
#     the partitions' batches (the ingest stage alone) beside the latency to events and to MQTT
#   PARTITIONS=4 ...  # distributed: 4 position partitions instead of 16 (the evaluators take
#     half each)
#   NATS_URL=nats://127.0.0.1:4333 ...  # another nats-server than the machine's, e.g. one started
#     with GOGC=400 GOMEMLIMIT=1GiB as docs/operations.md recommends for latency
#   SAMPLES=dir ...   # every latency sample written to dir/{batched,events,mqtt}.tsv (measurement
#     time and latency in microseconds), to see when the slow ones happened
#   MQTT=1 MODE=all-in-one CIRCLES=30 STEP=1 SENDERS=3 services/loadgen/scripts/pipeline.sh 0 30 http
#     # the fenced workload: 1,000 circles of 30 m, devices walking 1 m per position, every zone
#     # event to MQTT; reports positions per CPU-second of zonecast, peak memory and the drain
#   STREAMS=100 MODE=all-in-one services/loadgen/scripts/pipeline.sh 0 20 http  # with 100 live
#     streams open on the API (50 event streams, 50 position streams), read as fast as they come;
#     STREAM_KIND=events or positions opens only one kind
#   RUST_LOG=info ...  # the services' log filter (warn by default)
#   MQTT=1 MODE=all-in-one SENDERS=8 services/loadgen/scripts/pipeline.sh 0 30 http  # overload: every
#     zone event to MQTT and measured there; the HTTP input pushes back, the sent rate is the
#     sustainable one, and each process's peak memory is reported
set -euo pipefail
rate=${1:-20000}; secs=${2:-10}; input=${3:-ingest}
root=$(cd "$(dirname "$0")/../../.." && pwd); bin=${BIN:-$root/target/release}
for b in zonecast zonecast-api zonecast-ingestor zonecast-evaluator zonecast-forwarder zonecast-loadgen; do
  [ -x "$bin/$b" ] || { echo "build first: cargo build --release --workspace" >&2; exit 1; }
done
work=$(mktemp -d); pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
prefix=bench$RANDOM; key=bench-$RANDOM
nats=${NATS_URL:-nats://127.0.0.1:4222}; partitions=${PARTITIONS:-16}
[ "$partitions" -ge 2 ] || { echo "PARTITIONS: at least 2, one range per evaluator" >&2; exit 1; }
# A broker of the benchmark's own, without Nagle delays towards subscribers.
mqtt_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
printf 'listener %s 127.0.0.1\nallow_anonymous true\nset_tcp_nodelay true\n' "$mqtt_port" > "$work/mosquitto.conf"
chmod 755 "$work"; chmod 644 "$work/mosquitto.conf"
mosquitto -c "$work/mosquitto.conf" 2>"$work/mosquitto.log" & pids+=($!)
export ZONECAST_SECRET_KEY=$(head -c 32 /dev/urandom | base64) ZONECAST_API_KEYS="$key:admin" \
  ZONECAST_SUBJECT_PREFIX=$prefix RUST_LOG=${RUST_LOG:-warn}
# The run's JetStream streams stay small on the shared server, and are removed at the end.
export ZONECAST_EVENT_RETENTION_SECS=${ZONECAST_EVENT_RETENTION_SECS:-600} \
  ZONECAST_EVENT_RETENTION_BYTES=${ZONECAST_EVENT_RETENTION_BYTES:-268435456}
wait_http() { for _ in $(seq 1 200); do curl -fs "$1" >/dev/null && return 0; sleep 0.05; done; echo "no answer from $1" >&2; exit 1; }
if [ "${MODE:-distributed}" = all-in-one ]; then
  ZONECAST_DATA_DIR=$work/data ZONECAST_HTTP_ADDR=127.0.0.1:18180 "$bin/zonecast" 2>"$work/zonecast.log" & pids+=($!); measured=(--pid $!)
  api=http://127.0.0.1:18180; ingest=$api
  wait_http $api/healthz
else
  db=zc_bench_$RANDOM
  psql -q -h 127.0.0.1 -U postgres -d postgres -c "CREATE DATABASE $db" >/dev/null
  export ZONECAST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/$db ZONECAST_NATS_URL=$nats \
    ZONECAST_PARTITIONS=$partitions
  ZONECAST_HTTP_ADDR=127.0.0.1:18180 "$bin/zonecast-api" 2>"$work/api.log" & pids+=($!)
  wait_http http://127.0.0.1:18180/healthz
  ZONECAST_INGEST_HTTP_ADDR=127.0.0.1:18181 "$bin/zonecast-ingestor" 2>"$work/ingestor.log" & pids+=($!)
  half=$((partitions / 2))
  ZONECAST_HTTP_ADDR=127.0.0.1:18182 ZONECAST_EVALUATOR_PARTITIONS=0-$((half - 1)) "$bin/zonecast-evaluator" 2>"$work/eval-a.log" & pids+=($!)
  ZONECAST_HTTP_ADDR=127.0.0.1:18183 ZONECAST_EVALUATOR_PARTITIONS=$half-$((partitions - 1)) "$bin/zonecast-evaluator" 2>"$work/eval-b.log" & pids+=($!)
  ZONECAST_HTTP_ADDR=127.0.0.1:18184 "$bin/zonecast-forwarder" 2>"$work/forwarder.log" & pids+=($!)
  for p in 18181 18182 18183 18184; do wait_http http://127.0.0.1:$p/healthz; done
  measured=(); for p in "${pids[@]:1}"; do measured+=(--pid "$p"); done
  api=http://127.0.0.1:18180; ingest=http://127.0.0.1:18181
fi
curl -fs -H "X-API-Key: $key" "$api/v3/modules/mqtt/connections" --json \
  "{\"host\": \"127.0.0.1\", \"port\": $mqtt_port, \"TLS\": false, \"topics\": [{\"topic\": \"$prefix/zones\", \"FilterChain\": [{\"FilterTemplate\": \"zone_events\"}]}]}" >/dev/null
mqtt=(); [ "${MODE:-distributed}" = all-in-one ] || mqtt=(--mqtt 127.0.0.1:$mqtt_port --mqtt-topic "$prefix/#" --remove-streams)
[ -n "${MQTT:-}" ] && [ "${MODE:-distributed}" = all-in-one ] && mqtt=(--mqtt 127.0.0.1:$mqtt_port --mqtt-topic "$prefix/#")
events=(--events); [ "${MODE:-distributed}" = all-in-one ] && events=()
if [ "${MODE:-distributed}" = all-in-one ]; then
  evaluated=(--evaluated-from $api/metrics)
else
  evaluated=(--evaluated-from http://127.0.0.1:18182/metrics --evaluated-from http://127.0.0.1:18183/metrics)
fi
if [ -n "${BURST:-}" ]; then
  # Zone creates while positions flow: spheres far outside the site, so the events measured
  # are those of the loadgen's own zones.
  (
    sleep "${BURST_AT:-5}"
    started=$(date +%s.%N)
    if [ "${BURST_KIND:-zones}" = radii ]; then
      # One radius write per request, for MACs of no simulated device.
      seq 1 "$BURST" | xargs -P 8 -I{} sh -c 'curl -fs -o /dev/null -X PUT -H "X-API-Key: $1" "$2/v3/modules/zones/devices/radius" \
        --json "{\"EE:EE:EE:$(printf %02X:%02X:%02X $(($3 >> 16)) $((($3 >> 8) & 255)) $(($3 & 255)))\": 0.5}"' _ "$key" "$api" {}
    else
      seq 1 "$BURST" | xargs -P 8 -I{} curl -fs -o /dev/null -H "X-API-Key: $key" "$api/v3/modules/zones" \
        --json '{"Name": "burst {}", "GeometryType": "sphere", "GeometryData": [[-5000, {}, 0], [1, 0, 0]]}'
    fi
    echo "burst: $BURST ${BURST_KIND:-zones} writes answered in $(echo "$(date +%s.%N) - $started" | bc) s" >&2
  ) & pids+=($!)
fi
"$bin/zonecast-loadgen" --input "$input" --api "$api" --ingest-url "$ingest" --key "$key" --prefix "$prefix" \
  --nats "$nats" --partitions "$partitions" \
  --zones "${ZONES:-1000}" --devices "${DEVICES:-10000}" --rate "$rate" --duration "$secs" --batch "${BATCH:-1000}" \
  ${CIRCLES:+--circles "$CIRCLES"} --step "${STEP:-0.5}" ${STAGES:+--count-positions} ${SAMPLES:+--samples "$SAMPLES"} \
  --senders "${SENDERS:-2}" --streams "${STREAMS:-0}" --stream-kind "${STREAM_KIND:-both}" "${events[@]}" "${mqtt[@]}" "${evaluated[@]}" "${measured[@]}" --drain "${DRAIN:-5}"
if [ "${MODE:-distributed}" = all-in-one ]; then
  curl -fs -H "X-API-Key: $key" "$api/metrics" | grep -E '^zonecast_(evaluator_positions|ingest_accepted|ingest_refused|forwarder_forwarded|forwarder_dropped)_total' || true
else
  for p in 18182 18183; do curl -fs http://127.0.0.1:$p/metrics | grep -E '^zonecast_evaluator_positions(_out_of_order)?_total' | sed "s/^/evaluator :$p /"; done
  curl -fs http://127.0.0.1:18181/metrics | grep -E '^zonecast_(ingest_(accepted|dropped|holds)_total\{input="nats"\}|bus_slow_consumer_total)' | sed "s/^/ingestor /" || true
  echo "ingestor log: $(wc -l < "$work/ingestor.log") lines"
fi
