#!/usr/bin/env python3
"""Chaos under load on a cluster: a three-server NATS with every stream on all three
(ZONECAST_NATS_REPLICAS=3), 2 APIs, 2 ingestors, 3 evaluators that claim their partitions and 2
forwarders, each its own process on free ports, with a PostgreSQL database and a Mosquitto of
the run's own. Devices walk through zones (the workload of tools/faults.py) at a steady rate,
and one kind of fault is injected per run, several times. An oracle knows every entry and exit
the positions imply, and every event that reached the broker is checked against it.

Per run it prints:

  expected   transitions the positions imply
  lost       expected transitions not delivered (must be 0)
  extra      delivered transitions the positions do not imply (must be 0)
  copies     deliveries of an EventID beyond its first (allowed: same EventID)
  open       ENTERs never closed by an EXIT (must be 0)
  orphan     EXITs without their ENTER (must be 0)
  p50/p99    position accepted -> event at the broker, ms, over the whole run
  max        the longest any event waited, ms: how long the fault held the devices it touched
  over_1s    events that waited more than a second

Usage: tools/chaos.py [--steps N] [--devices N] [--rate N] [--times N] [scenario ...]
       (build first: cargo build --release --workspace; BIN= picks other binaries)
Scenarios: baseline evaluator-kill forwarder-kill ingestor-kill api-kill nats-kill rolling scale
"""

import argparse
import base64
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import faults  # noqa: E402  (the workload, the processes and the oracle's walk)
from faults import Proc, free_port, iso, mac, psql, wait_port, x_of  # noqa: E402

NATS = shutil.which("nats-server") or "/usr/sbin/nats-server"
PARTITIONS = 16
# How long nothing may reach the broker before what has not is taken for lost.
DRAIN_QUIET_S = 30


class Cluster:
    """The processes of one run and the broker's subscriber, which writes `arrival json` lines."""

    def __init__(self, work, evaluators=3):
        self.work, self.procs, self.next_evaluator = work, {}, 1
        self.broker_port, self.broker, self.capture, self.sub = faults.start_broker(
            work, "events.txt", "chaos-oracle", "%U %p")
        # Three NATS servers, routed to each other, each with a store of its own.
        self.nats_ports = [free_port() for _ in range(3)]
        routes = [free_port() for _ in range(3)]
        for i in range(3):
            others = ",".join(f"nats://127.0.0.1:{routes[j]}" for j in range(3) if j != i)
            self.procs[f"nats-{i + 1}"] = Proc(
                f"nats-{i + 1}",
                [NATS, "-a", "127.0.0.1", "-p", str(self.nats_ports[i]), "-js", "-sd", os.path.join(work, f"nats-{i + 1}"),
                 "-n", f"node-{i + 1}", "--cluster_name", "chaos", "--cluster", f"nats://127.0.0.1:{routes[i]}",
                 "--routes", others], {}, None, work)
        for i, port in enumerate(self.nats_ports):
            wait_port(port, f"nats-{i + 1}")
        self.db = "zc_chaos_" + uuid.uuid4().hex
        psql(f'CREATE DATABASE "{self.db}"')
        self.base_env = {
            "ZONECAST_DATABASE_URL": faults.ADMIN_URL.rsplit("/", 1)[0] + "/" + self.db,
            "ZONECAST_NATS_URL": ",".join(f"nats://127.0.0.1:{p}" for p in self.nats_ports),
            "ZONECAST_NATS_REPLICAS": "3",
            "ZONECAST_SECRET_KEY": base64.b64encode(os.urandom(32)).decode(),
            "ZONECAST_API_KEYS": f"{faults.KEY}:admin",
            "ZONECAST_PARTITIONS": str(PARTITIONS),
        }
        self.apis, self.ingestors = [], []
        for i in (1, 2):
            port = free_port()
            self.service(f"api-{i}", "zonecast-api", {"ZONECAST_HTTP_ADDR": f"127.0.0.1:{port}"}, port)
            self.apis.append(port)
        # The evaluators before the ingestors: an ingestor is ready once every partition is
        # followed.
        for _ in range(evaluators):
            self.add_evaluator()
        for i in (1, 2):
            port = free_port()
            self.service(f"ingestor-{i}", "zonecast-ingestor", {"ZONECAST_INGEST_HTTP_ADDR": f"127.0.0.1:{port}",
                                                                "ZONECAST_HTTP_ADDR": f"127.0.0.1:{free_port()}"}, port)
            self.ingestors.append(port)
        for i in (1, 2):
            port = free_port()
            self.service(f"forwarder-{i}", "zonecast-forwarder", {"ZONECAST_HTTP_ADDR": f"127.0.0.1:{port}"}, port)
        zones = [{"Name": f"strip-{k}", "GeometryType": "sphere",
                  "GeometryData": [[k * faults.SPACING, 0, 0], [faults.RADIUS, 0, 0]]} for k in range(faults.ZONES)]
        self.zone_ids = [z["ZoneID"] for z in self.call("POST", "/v3/modules/zones/batch", zones)]
        conn = self.call("POST", "/v3/modules/mqtt/connections",
                         {"host": "127.0.0.1", "port": self.broker_port, "TLS": False,
                          "topics": [{"topic": "zc/events", "FilterChain": [{"FilterTemplate": "zone_events"}]}]})
        self.connection = conn["ConnectionID"]
        self.until(lambda: self.status()["connected"], "the connection up")
        self.until(self.balanced, "the evaluators sharing the partitions")

    def service(self, name, binary, env, port):
        self.procs[name] = Proc(name, [os.path.join(faults.BIN, binary)], {**self.base_env, **env}, port, self.work)

    def add_evaluator(self):
        name = f"evaluator-{self.next_evaluator}"
        self.next_evaluator += 1
        port = free_port()
        self.service(name, "zonecast-evaluator", {"ZONECAST_HTTP_ADDR": f"127.0.0.1:{port}"}, port)
        return name

    def evaluators(self):
        return [n for n, p in self.procs.items() if n.startswith("evaluator-") and p.p.poll() is None]

    def owned(self, name):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.procs[name].port}/metrics", timeout=2) as r:
            for line in r.read().decode().splitlines():
                if line.startswith("zonecast_evaluator_partitions_owned{"):
                    return int(float(line.rsplit(" ", 1)[1]))
        return 0

    def balanced(self):
        owned = [self.owned(n) for n in self.evaluators()]
        return sum(owned) == PARTITIONS and max(owned) - min(owned) <= 1

    def call(self, method, path, body=None):
        """Calls the first API that answers (a killed one is passed over)."""
        last = None
        for port in self.apis:
            try:
                return faults.call(f"http://127.0.0.1:{port}", method, path, body)
            except (urllib.error.URLError, OSError) as e:
                last = e
        raise last

    def status(self):
        return self.call("GET", f"/v3/modules/mqtt/connections/{self.connection}/status")

    def until(self, pred, what, timeout=300):
        faults.until(pred, what, timeout)

    def post(self, body, turn):
        """Posts one step to an ingestor, the other one while it does not answer, until accepted."""
        data = json.dumps(body).encode()
        k = turn
        while True:
            port = self.ingestors[k % len(self.ingestors)]
            req = urllib.request.Request(f"http://127.0.0.1:{port}/v3/positions", data=data, method="POST",
                                         headers={"X-API-Key": faults.KEY, "Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=10) as r:
                    answer = json.loads(r.read())
            except (urllib.error.URLError, OSError):
                k += 1
                time.sleep(0.02)
                continue
            if answer.get("accepted") != len(body):
                sys.exit(f"positions refused: {answer}")
            return

    def restart(self, name, sig=signal.SIGKILL):
        """Stops a process (killed, or with SIGTERM as an orchestrator does) and starts it again."""
        proc = self.procs[name]
        if sig == signal.SIGKILL:
            proc.kill()
        else:
            proc.stop()
        proc.start()
        if name.startswith("nats-"):
            wait_port(proc_port(self, name), name)

    def close(self):
        self.sub.terminate()
        for p in reversed(list(self.procs.values())):
            p.stop()
        self.broker.stop()
        psql(f'DROP DATABASE IF EXISTS "{self.db}" WITH (FORCE)')


def proc_port(cluster, name):
    return cluster.nats_ports[int(name.split("-")[1]) - 1]


def inject(scenario, c, progress, steps, times):
    """Injects the scenario's faults while the load runs, spread over its middle half."""
    at = [steps // 4 + k * (steps // 2) // max(times, 1) for k in range(times)]
    if scenario == "baseline":
        return
    if scenario == "scale":
        wait(progress, at[0])
        c.add_evaluator()
        c.add_evaluator()
        c.until(c.balanced, "five evaluators sharing the partitions")
        wait(progress, steps // 2)
        for name in c.evaluators()[:3]:
            c.procs[name].stop()
        c.until(c.balanced, "two evaluators sharing the partitions")
        return
    if scenario == "rolling":
        names = [n for n in c.procs if not n.startswith("nats-")] + [n for n in c.procs if n.startswith("nats-")]
        wait(progress, at[0])
        for name in names:
            c.restart(name, signal.SIGTERM)
            if name.startswith("evaluator-") or name.startswith("nats-"):
                c.until(c.balanced, f"the partitions shared again after {name}")
        return
    target = {"evaluator-kill": "evaluator-1", "forwarder-kill": "forwarder-1", "ingestor-kill": "ingestor-1",
              "api-kill": "api-1", "nats-kill": "nats-1"}.get(scenario)
    if target is None:
        sys.exit(f"unknown scenario {scenario}")
    for step in at:
        wait(progress, step)
        c.restart(target)
        if target.startswith("evaluator-") or target.startswith("nats-"):
            c.until(c.balanced, f"the partitions shared again after {target}")


def wait(progress, step):
    while progress["step"] < step:
        time.sleep(0.05)


def run(scenario, steps, devices, rate, times):
    work = tempfile.mkdtemp(prefix=f"zonecast-chaos-{scenario}-")
    os.chmod(work, 0o777)  # Mosquitto drops to its own user and writes its sessions here.
    c = Cluster(work)
    t0 = int(time.time() * 1000) - (steps + 10) * 1000
    sent, progress = [], {"step": 0}

    def load():
        period = devices / rate
        start = time.time()
        for step in range(steps + 1):
            parked = step == steps
            body = []
            for d in range(devices):
                x = 5.0 if parked else x_of(d, step)
                body.append({"MAC": mac(d), "Position": [x, 0, 0], "Timestamp": iso(t0 + step * 1000)})
                sent.append((d, step, x))
            c.post(body, step)
            progress["step"] = step
            # Paced to the rate; a step that came late is not made up for by a burst.
            delay = start + (step + 1) * period - time.time()
            if delay > 0:
                time.sleep(delay)
            else:
                start -= delay

    loader = threading.Thread(target=load)
    loader.start()
    inject(scenario, c, progress, steps, times)
    loader.join()
    # Drained: every transition the positions imply has reached the broker, or nothing more
    # has come for a while (what is missing then is lost).
    events = os.path.join(work, "events.txt")
    expected = sum(faults.transitions(sent, t0).values())
    last, since = -1, time.time()
    while time.time() - since < DRAIN_QUIET_S and delivered(events) < expected:
        size = os.path.getsize(events)
        if size != last:
            last, since = size, time.time()
        time.sleep(0.2)
    faults.quiet(events)
    c.close()
    row = judge(events, sent, t0)
    if not os.environ.get("KEEP"):
        shutil.rmtree(work, ignore_errors=True)
    return row


def delivered(path):
    """Distinct zone transitions that reached the broker so far."""
    seen = set()
    with open(path, "rb") as f:
        for line in f:
            e = line.partition(b" ")[2]
            if b'"ZONE_ENTER"' in e or b'"ZONE_EXIT"' in e:
                seen.add(e.split(b'"EventID":"', 1)[-1][:36])
    return len(seen)


def judge(path, sent, t0):
    """The oracle's transitions against the events that reached the broker, and their waits."""
    expected = faults.transitions(sent, t0)
    seen, copies, got, enters, exits, waits = set(), 0, {}, set(), set(), []
    with open(path, "rb") as f:
        for line in f:
            arrival, _, payload = line.partition(b" ")
            try:
                e = json.loads(payload)
            except ValueError:
                continue
            if e.get("Type") not in ("ZONE_ENTER", "ZONE_EXIT"):
                continue
            if e["EventID"] in seen:
                copies += 1
                continue
            seen.add(e["EventID"])
            # The EventID is a version 7 UUID: its first 48 bits are when the position was accepted.
            accepted = int(e["EventID"].replace("-", "")[:12], 16)
            waits.append(float(arrival) * 1000 - accepted)
            c = e["Content"]
            key = (e["Source"]["MAC"], int(c["ZoneName"].split("-")[1]), e["Type"],
                   int(faults.parse_ms(e["Timestamp"])))
            got[key] = got.get(key, 0) + 1
            (enters if e["Type"] == "ZONE_ENTER" else exits).add(c["CollisionID"])
    waits.sort()
    pct = lambda q: round(waits[min(len(waits) - 1, int(q * len(waits)))]) if waits else 0  # noqa: E731
    return {"expected": sum(expected.values()),
            "lost": sum(max(0, n - got.get(k, 0)) for k, n in expected.items()),
            "extra": sum(max(0, n - expected.get(k, 0)) for k, n in got.items()),
            "copies": copies, "open": len(enters - exits), "orphan": len(exits - enters),
            "p50": pct(0.5), "p99": pct(0.99), "max": round(waits[-1]) if waits else 0,
            "over_1s": sum(1 for w in waits if w > 1000)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--devices", type=int, default=200)
    ap.add_argument("--rate", type=int, default=5000, help="positions per second")
    ap.add_argument("--times", type=int, default=3, help="times each fault is injected")
    ap.add_argument("scenarios", nargs="*", default=["baseline", "evaluator-kill", "forwarder-kill", "ingestor-kill",
                                                     "api-kill", "nats-kill", "rolling", "scale"])
    args = ap.parse_args()
    cols = ["expected", "lost", "extra", "copies", "open", "orphan", "p50", "p99", "max", "over_1s"]
    print("| scenario | " + " | ".join(cols) + " |")
    print("|---" * (len(cols) + 1) + "|")
    failed = False
    for scenario in args.scenarios:
        row = run(scenario, args.steps, args.devices, args.rate, args.times)
        print(f"| {scenario} | " + " | ".join(str(row[k]) for k in cols) + " |", flush=True)
        failed |= any(row[k] > 0 for k in ("lost", "extra", "open", "orphan"))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
