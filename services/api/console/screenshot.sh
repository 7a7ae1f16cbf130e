#!/usr/bin/env bash
# Takes the console's picture for the documentation (docs/console.png) from the console as it is
# now: starts the release all-in-one with its demo site on a scratch data directory and a free
# port, opens the console in headless Chromium (driven through chromedriver), signs in with the
# admin key the all-in-one generated, waits until the demo's zones and devices are drawn, both
# streams are open, events come in and a zone is occupied, and saves the window as a PNG.
#
#   cargo build --release -p zonecast
#   services/api/console/screenshot.sh              # writes docs/console.png
#   services/api/console/screenshot.sh /tmp/x.png   # writes elsewhere
#
# Needs chromium and chromedriver (apt-get install -y chromium chromium-driver), curl and jq.
# ZONECAST_BIN names another binary than target/release/zonecast. Fails, saving nothing, when the
# page had an error (as the console's browser tests do).
set -euo pipefail

root=$(cd "$(dirname "$0")/../../.." && pwd)
out=${1:-$root/docs/console.png}
zonecast=${ZONECAST_BIN:-$root/target/release/zonecast}
width=1440
height=1000
chromium=/usr/bin/chromium
chromedriver=/usr/bin/chromedriver

fail() {
  echo "screenshot: $*" >&2
  exit 1
}
[ -x "$zonecast" ] || fail "$zonecast is missing: build it with cargo build --release -p zonecast"
for program in "$chromium" "$chromedriver"; do
  [ -x "$program" ] || fail "$program is missing: apt-get install -y chromium chromium-driver"
done
for program in curl jq; do
  command -v "$program" >/dev/null || fail "$program is missing"
done

# The demo writes to the store it runs on: none of the caller's settings (a database URL, a
# data directory) may point it at a real site.
while IFS= read -r name; do unset "$name"; done < <(compgen -e | grep '^ZONECAST_' || true)

work=$(mktemp -d)
server=""
driver=""
session=""
cleanup() {
  [ -n "$session" ] && curl -s -X DELETE "$session" >/dev/null || true
  # chromedriver leads a process group of its own, with the browser it started.
  [ -n "$driver" ] && kill -- "-$driver" 2>/dev/null || true
  [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# Runs `check` (a command) every 100 ms until it succeeds, for at most `seconds`.
wait_for() {
  local what=$1 seconds=$2
  shift 2
  local deadline=$((SECONDS + seconds))
  until "$@"; do
    [ "$SECONDS" -lt "$deadline" ] || fail "$what: not within ${seconds}s"
    sleep 0.1
  done
}

# A TCP port of 127.0.0.1 nothing listens on.
free_port() {
  local port
  while :; do
    port=$((20000 + RANDOM % 40000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "$port"
      return
    fi
  done
}

# The all-in-one on a free port (it picks one and prints it), with the demo site.
ZONECAST_DATA_DIR="$work/data" ZONECAST_HTTP_ADDR=127.0.0.1:0 "$zonecast" --demo >"$work/zonecast.log" 2>&1 &
server=$!
listening() {
  kill -0 "$server" 2>/dev/null || { cat "$work/zonecast.log" >&2; fail "zonecast stopped"; }
  grep -qs '^zonecast: listening on ' "$work/zonecast.log"
}
wait_for "zonecast listening" 60 listening
base=$(sed -n 's/^zonecast: listening on //p' "$work/zonecast.log" | head -n 1)
key=$(cat "$work/data/admin.key")

port=$(free_port)
setsid "$chromedriver" --port="$port" >"$work/chromedriver.log" 2>&1 &
driver=$!
wait_for "chromedriver ready" 20 bash -c "curl -sf http://127.0.0.1:$port/status | jq -e .value.ready >/dev/null"

# A WebDriver command: METHOD PATH [JSON body]; prints its value, fails on an error.
wd() {
  local answer
  answer=$(curl -s -X "$1" "$session$2" -H 'Content-Type: application/json' ${3:+-d "$3"})
  if jq -e '.value.error? // empty' <<<"$answer" >/dev/null; then
    fail "WebDriver $1 $2: $(jq -c .value <<<"$answer")"
  fi
  jq -c .value <<<"$answer"
}
# The value of the JavaScript expression $1 in the page.
js() {
  wd POST /execute/sync "$(jq -nc --arg e "$1" '{script: "try { return (\($e)); } catch (e) { return null; }", args: []}')"
}
truthy() {
  case $(js "$1") in '' | null | false | 0 | '""') return 1 ;; *) return 0 ;; esac
}
element() {
  wd POST /element "$(jq -nc --arg css "$1" '{using: "css selector", value: $css}')" | jq -r '.[]'
}

capabilities=$(jq -nc --arg binary "$chromium" --arg size "--window-size=$width,$height" '{capabilities: {alwaysMatch: {
  browserName: "chrome",
  "goog:chromeOptions": {binary: $binary, args: ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", $size]},
  "goog:loggingPrefs": {browser: "SEVERE"}}}}')
session="http://127.0.0.1:$port/session/$(curl -s -X POST "http://127.0.0.1:$port/session" \
  -H 'Content-Type: application/json' -d "$capabilities" | jq -r .value.sessionId)"

# Signed in through the form, as a user does; the page keeps the key in sessionStorage.
wd POST /url "$(jq -nc --arg url "$base/" '{url: $url}')" >/dev/null
wait_for "the sign-in form" 20 truthy "!document.getElementById('signin').hidden"
field=$(element "#api-key")
wd POST "/element/$field/value" "$(jq -nc --arg key "$key" '{text: $key}')" >/dev/null
wd POST "/element/$(element "#signin-submit")/click" '{}' >/dev/null

# The demo site live: its 36 zones, its people walking, events in the timeline, a zone occupied,
# labels drawn, the camera at rest.
ready="(() => { const s = window.zonecastConsole.stats(); return s.zonesDrawn >= 36 && s.devices >= 250
  && s.streams.events === 'open' && s.streams.positions === 'open' && s.timeline >= 10 && s.occupied > 0
  && s.labels >= 24 && s.detail === 'full'; })()"
wait_for "the demo site drawn and live" 120 truthy "$ready"

errors=$(wd POST /se/log '{"type": "browser"}' |
  jq -r '.[] | select(.level == "SEVERE") | select(.source != "network" or (.message | test("^https?://[^/]+/v3/") | not)) | .message')
[ -z "$errors" ] || fail "the page had errors:"$'\n'"$errors"

wd GET /screenshot | jq -r . | base64 -d >"$work/console.png"
mv "$work/console.png" "$out"
echo "screenshot: $out ($(js "window.zonecastConsole.stats().zonesDrawn") zones, $(js "window.zonecastConsole.stats().devices") devices)"
