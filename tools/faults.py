#!/usr/bin/env python3
"""The fault suite: runs zonecast under load, injects one fault per run, and compares every zone
event that reached the MQTT broker with an oracle that knows every entry and exit the positions
imply.

Workload: DEVICES devices walk along x, 1 m per step, through ZONES spheres of radius 3 m
centred every 10 m; every device reports once per step, in one POST per step (1 s apart in
position time, sent as fast as they are accepted), each POST tried again until it is accepted.
At the end every device is parked outside every zone, so every ENTER must be closed by an EXIT
(in the all-in-one the parked step is sent once more after the faults: a crash loses the positions
accepted and not yet evaluated, the parked ones too when the last kill comes after them).

Each run starts its own Mosquitto (persistent sessions, so the oracle's subscription survives a
broker restart) and, in distributed mode, its own NATS server, PostgreSQL database, API,
ingestor, two evaluators and a forwarder, all on free ports. It prints one row per fault:

  expected   transitions the positions imply
  delivered  distinct events (by EventID) that reached the broker
  lost       expected transitions not delivered
  extra      delivered transitions the positions do not imply
  copies     deliveries of an EventID beyond its first
  open       ENTERs never closed by an EXIT
  orphan     EXITs without their ENTER

Usage: tools/faults.py [--steps N] [--devices N] [--kills N] [fault ...]   (build first: cargo build --release --workspace)
Faults: aio-kill aio-broker forwarder-kill evaluator-kill store-outage-kill nats-restart broker-stop broker-freeze
"""

import argparse
import base64
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from datetime import datetime, timezone

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("BIN", os.path.join(ROOT, "target", "release"))
ZONES = 50
SPACING = 10.0
RADIUS = 3.0
KEY = "faults-" + secrets.token_hex(8)
KILLS = 5
ADMIN_URL = os.environ.get("ZONECAST_TEST_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, what, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    sys.exit(f"{what} did not come up on port {port}")


def call(base, method, path, body=None, timeout=10):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, method=method, headers={"X-API-Key": KEY, "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read() or b"null")


class Proc:
    """A service started from its binary, which can be killed, stopped and started again."""

    def __init__(self, name, argv, env, port, logs):
        self.name, self.argv, self.env, self.port = name, argv, env, port
        self.log = open(os.path.join(logs, name + ".log"), "ab")
        self.p = None
        self.start()

    def start(self):
        self.p = subprocess.Popen(self.argv, env={**os.environ, **self.env}, stdout=self.log, stderr=self.log)
        if self.port:
            ready(self.port, self.name, self.p)

    def kill(self):
        self.p.kill()
        self.p.wait()

    def stop(self):
        if self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()

    def signal(self, sig):
        self.p.send_signal(sig)


def ready(port, name, proc, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            sys.exit(f"{name} exited with {proc.returncode}; see its log")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1)
            return
        except (urllib.error.URLError, OSError):
            time.sleep(0.1)
    sys.exit(f"{name} was not ready on port {port} within {timeout} s")


def x_of(device, step):
    """The device's x at a step: it starts at its own offset and walks 1 m per step, always on a
    half metre so that no position lies on a zone's boundary."""
    return (device * 7 + step) % (ZONES * SPACING) + 0.5


def inside(x):
    """The zone a position at x is inside (at most one: the spheres are 10 m apart), or None."""
    k = round(x / SPACING)
    return k if k < ZONES and abs(x - k * SPACING) <= RADIUS else None


def mac(device):
    return "02:FA:00:00:%02X:%02X" % (device >> 8, device & 0xFF)


class Site:
    """Mosquitto with a subscriber writing every message to a file, and the services of one mode."""

    def __init__(self, mode, work):
        self.mode, self.work = mode, work
        self.procs = {}
        self.broker_port, self.broker, self.capture, self.sub = start_broker(work, "events.jsonl", "faults-oracle", "%p")
        if mode == "aio":
            self.http = free_port()
            env = {"ZONECAST_DATA_DIR": os.path.join(work, "data"), "ZONECAST_HTTP_ADDR": f"127.0.0.1:{self.http}",
                   "ZONECAST_API_KEYS": f"{KEY}:admin"}
            self.procs["zonecast"] = Proc("zonecast", [os.path.join(BIN, "zonecast")], env, self.http, work)
            self.ingest = self.http
        else:
            self.nats_port = free_port()
            self.procs["nats"] = Proc("nats", [shutil.which("nats-server") or "/usr/sbin/nats-server", "-a", "127.0.0.1", "-p", str(self.nats_port), "-js", "-sd",
                                               os.path.join(work, "nats")], {}, None, work)
            wait_port(self.nats_port, "nats-server")
            self.db = "zc_faults_" + uuid.uuid4().hex
            psql(f'CREATE DATABASE "{self.db}"')
            base_env = {"ZONECAST_DATABASE_URL": ADMIN_URL.rsplit("/", 1)[0] + "/" + self.db,
                        "ZONECAST_NATS_URL": f"nats://127.0.0.1:{self.nats_port}",
                        "ZONECAST_SECRET_KEY": base64.b64encode(os.urandom(32)).decode(), "ZONECAST_API_KEYS": f"{KEY}:admin",
                        "ZONECAST_PARTITIONS": "8"}
            self.http, self.ingest = free_port(), free_port()
            self.service("api", "zonecast-api", {"ZONECAST_HTTP_ADDR": f"127.0.0.1:{self.http}"}, self.http, base_env)
            # The evaluators before the ingestor: it is ready once every partition is followed.
            for name, parts in (("evaluator-1", "0-3"), ("evaluator-2", "4-7")):
                port = free_port()
                self.service(name, "zonecast-evaluator", {"ZONECAST_HTTP_ADDR": f"127.0.0.1:{port}",
                                                          "ZONECAST_EVALUATOR_PARTITIONS": parts}, port, base_env)
            self.service("ingestor", "zonecast-ingestor", {"ZONECAST_INGEST_HTTP_ADDR": f"127.0.0.1:{self.ingest}",
                                                           "ZONECAST_HTTP_ADDR": f"127.0.0.1:{free_port()}"}, self.ingest, base_env)
            port = free_port()
            self.service("forwarder", "zonecast-forwarder", {"ZONECAST_HTTP_ADDR": f"127.0.0.1:{port}"}, port, base_env)
        self.api = f"http://127.0.0.1:{self.http}"
        zones = [{"Name": f"strip-{k}", "GeometryType": "sphere", "GeometryData": [[k * SPACING, 0, 0], [RADIUS, 0, 0]]}
                 for k in range(ZONES)]
        self.zone_ids = [z["ZoneID"] for z in call(self.api, "POST", "/v3/modules/zones/batch", zones)]
        conn = call(self.api, "POST", "/v3/modules/mqtt/connections",
                    {"host": "127.0.0.1", "port": self.broker_port, "TLS": False,
                     "topics": [{"topic": "zc/events", "FilterChain": [{"FilterTemplate": "zone_events"}]}]})
        self.connection = conn["ConnectionID"]
        self.until(lambda: self.status()["connected"], "the connection up")

    def service(self, name, binary, env, port, base_env):
        self.procs[name] = Proc(name, [os.path.join(BIN, binary)], {**base_env, **env}, port, self.work)

    def status(self):
        return call(self.api, "GET", f"/v3/modules/mqtt/connections/{self.connection}/status")

    def until(self, pred, what, timeout=300):
        until(pred, what, timeout)

    def post(self, body):
        """Posts one step until it is accepted."""
        data = json.dumps(body).encode()
        while True:
            req = urllib.request.Request(f"http://127.0.0.1:{self.ingest}/v3/positions", data=data, method="POST",
                                         headers={"X-API-Key": KEY, "Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=10) as r:
                    answer = json.loads(r.read())
            except (urllib.error.URLError, OSError):
                time.sleep(0.05)
                continue
            if answer.get("accepted") != len(body):
                sys.exit(f"positions refused: {answer}")
            return

    def close(self):
        self.sub.terminate()
        for p in reversed(list(self.procs.values())):
            p.stop()
        self.broker.stop()
        if self.mode == "dist":
            psql(f'DROP DATABASE IF EXISTS "{self.db}" WITH (FORCE)')


def start_broker(work, capture, client_id, fmt):
    """A Mosquitto of the run's own (persistent sessions, so the oracle's subscription survives a
    broker restart) and a subscriber to zc/# writing every message to `capture` in `fmt`.
    Returns the port, the broker, the capture file and the subscriber."""
    port = free_port()
    conf = os.path.join(work, "mosquitto.conf")
    with open(conf, "w") as f:
        f.write(f"listener {port} 127.0.0.1\nallow_anonymous true\npersistence true\n"
                f"persistence_location {work}/\nmax_queued_messages 0\n")
    broker = Proc("mosquitto", ["mosquitto", "-c", conf], {}, None, work)
    wait_port(port, "mosquitto")
    out = open(os.path.join(work, capture), "ab")
    sub = subprocess.Popen(["stdbuf", "-oL", "mosquitto_sub", "-h", "127.0.0.1", "-p", str(port), "-t", "zc/#",
                            "-q", "1", "-c", "-i", client_id, "-F", fmt], stdout=out)
    return port, broker, out, sub


def until(pred, what, timeout=300):
    """Waits until `pred()` holds (a failed request counts as not yet), or exits naming `what`."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if pred():
                return
        except (urllib.error.URLError, OSError, KeyError, ValueError):
            pass
        time.sleep(0.2)
    sys.exit(f"gave up waiting for {what}")


def psql(sql):
    subprocess.run(["psql", ADMIN_URL, "-q", "-v", "ON_ERROR_STOP=1", "-c", sql], check=True, stdout=subprocess.DEVNULL)


def run(fault, steps, devices):
    mode = "aio" if fault.startswith("aio") else "dist"
    work = tempfile.mkdtemp(prefix=f"zonecast-faults-{fault}-")
    os.chmod(work, 0o777)  # Mosquitto drops to its own user and writes its sessions here.
    site = Site(mode, work)
    t0 = int(time.time() * 1000) - (steps + 10) * 1000
    sent = []
    progress = {"step": 0}

    def post_step(step):
        """Every device's position at `step` (the last parks them outside every zone)."""
        body = []
        for d in range(devices):
            x = 5.0 if step == steps else x_of(d, step)
            body.append({"MAC": mac(d), "Position": [x, 0, 0], "Timestamp": iso(t0 + step * 1000)})
            sent.append((d, step, x))
        site.post(body)

    def load():
        for step in range(steps + 1):
            post_step(step)
            progress["step"] = step

    # Whatever ends the run, its processes go with it: one left running (the oracle's
    # subscriber holds this script's standard error) would keep the caller waiting.
    try:
        loader = threading.Thread(target=load, daemon=True)
        loader.start()
        inject(fault, site, progress, steps)
        loader.join()
        if mode == "aio":
            # A crash of the all-in-one loses the positions it accepted and had not evaluated
            # yet, and the last kill can come after the parked step was accepted: the devices
            # report it once more, as a gateway's next report would (the same position again,
            # no transition of its own).
            post_step(steps)
        # Drained: every zone empty, nothing waiting for the broker, and nothing new for 3 s.
        site.until(lambda: all(not call(site.api, "GET", f"/v3/modules/zones/{z}")["CollidingDevices"]
                               for z in site.zone_ids), "every zone empty")
        site.until(lambda: site.status()["queued"] == 0, "the connection's queue empty")
        quiet(os.path.join(work, "events.jsonl"))
    finally:
        site.close()
    row = judge(os.path.join(work, "events.jsonl"), sent, t0, devices)
    if not os.environ.get("KEEP"):
        shutil.rmtree(work, ignore_errors=True)
    return row


def at_step(progress, step):
    while progress["step"] < step:
        time.sleep(0.05)


def inject(fault, site, progress, steps):
    """Injects the fault while the load runs, at fixed steps of the walk."""
    a, b = steps // 4, steps // 2
    p = site.procs
    if fault == "aio-kill":
        for k in range(KILLS):
            at_step(progress, a + k * (steps // 2) // KILLS)
            p["zonecast"].kill()
            p["zonecast"].start()
    elif fault == "aio-broker" or fault == "broker-stop":
        at_step(progress, a)
        site.broker.stop()
        at_step(progress, b)
        site.broker.start()
    elif fault == "broker-freeze":
        at_step(progress, a)
        site.broker.signal(signal.SIGSTOP)
        at_step(progress, b)
        site.broker.signal(signal.SIGCONT)
    elif fault == "forwarder-kill":
        for k in range(3):
            at_step(progress, a + k * (steps // 8))
            p["forwarder"].kill()
            p["forwarder"].start()
    elif fault == "evaluator-kill":
        for k in range(3):
            at_step(progress, a + k * (steps // 8))
            p["evaluator-1"].kill()
            p["evaluator-1"].start()
    elif fault == "store-outage-kill":
        at_step(progress, a)
        psql(f'ALTER DATABASE "{site.db}" WITH ALLOW_CONNECTIONS false')
        psql(f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{site.db}'")
        at_step(progress, a + steps // 8)
        p["evaluator-1"].kill()
        psql(f'ALTER DATABASE "{site.db}" WITH ALLOW_CONNECTIONS true')
        p["evaluator-1"].start()
    elif fault == "nats-restart":
        at_step(progress, a)
        p["nats"].kill()
        p["nats"].start()
        wait_port(site.nats_port, "nats-server")
    else:
        sys.exit(f"unknown fault {fault}")


def quiet(path, for_s=3.0):
    last, since = -1, time.time()
    while time.time() - since < for_s:
        size = os.path.getsize(path)
        if size != last:
            last, since = size, time.time()
        time.sleep(0.2)


def transitions(sent, t0):
    """The oracle: every entry and exit the positions sent imply, counted by (MAC, zone, type,
    Timestamp in ms)."""
    expected = {}
    state = {}
    for d, step, x in sent:
        # A step posted twice (its answer lost) is the same position again: no transition.
        zone = inside(x)
        was = state.get(d)
        if zone != was:
            ts = t0 + step * 1000
            if was is not None:
                expected[(mac(d), was, "ZONE_EXIT", ts)] = expected.get((mac(d), was, "ZONE_EXIT", ts), 0) + 1
            if zone is not None:
                expected[(mac(d), zone, "ZONE_ENTER", ts)] = expected.get((mac(d), zone, "ZONE_ENTER", ts), 0) + 1
            state[d] = zone
    return expected


def judge(path, sent, t0, devices):
    expected = transitions(sent, t0)
    names = {}
    seen, copies, got = {}, 0, {}
    enters, exits = {}, {}
    with open(path, "rb") as f:
        for line in f:
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if e.get("Type") not in ("ZONE_ENTER", "ZONE_EXIT"):
                continue
            if e["EventID"] in seen:
                copies += 1
                continue
            seen[e["EventID"]] = e
            c = e["Content"]
            zone = int(c["ZoneName"].split("-")[1])
            names[c["ZoneID"]] = zone
            key = (e["Source"]["MAC"], zone, e["Type"], int(parse_ms(e["Timestamp"])))
            got[key] = got.get(key, 0) + 1
            (enters if e["Type"] == "ZONE_ENTER" else exits)[c["CollisionID"]] = e
    lost = sum(max(0, n - got.get(k, 0)) for k, n in expected.items())
    extra = sum(max(0, n - expected.get(k, 0)) for k, n in got.items())
    return {"expected": sum(expected.values()), "delivered": len(seen), "lost": lost, "extra": extra,
            "copies": copies, "open": sum(1 for c in enters if c not in exits),
            "orphan": sum(1 for c in exits if c not in enters)}


def iso(ms):
    return datetime.fromtimestamp(ms / 1000, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_ms(ts):
    if isinstance(ts, (int, float)):
        return ts
    return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp() * 1000


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--devices", type=int, default=200)
    ap.add_argument("--kills", type=int, default=5, help="times the all-in-one is killed in aio-kill")
    ap.add_argument("faults", nargs="*", default=["aio-kill", "aio-broker", "forwarder-kill", "evaluator-kill",
                                                   "store-outage-kill", "nats-restart", "broker-stop", "broker-freeze"])
    args = ap.parse_args()
    global KILLS
    KILLS = args.kills
    cols = ["expected", "delivered", "lost", "extra", "copies", "open", "orphan"]
    print("| fault | " + " | ".join(cols) + " |")
    print("|---" * (len(cols) + 1) + "|")
    failed = False
    for fault in args.faults:
        row = run(fault, args.steps, args.devices)
        print(f"| {fault} | " + " | ".join(str(row[c]) for c in cols) + " |", flush=True)
        failed |= row["open"] > 0 or row["orphan"] > 0 or ((row["lost"] > 0 or row["extra"] > 0) and fault != "aio-kill")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
