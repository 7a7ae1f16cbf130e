#!/usr/bin/env python3
"""Removes the JetStream streams that earlier test and benchmark runs left on a NATS server.

A test removes its streams when it ends; a test that fails or a run that is killed leaves them.
JetStream reserves each stream's byte bound from the server's storage when the stream is made,
so leftovers add up until no new stream can be made ("insufficient storage resources"). Only
streams named by the tests' and benchmarks' random prefixes are removed:
jt/zt/zc/zd followed by 32 hex digits, and bench followed by digits (and the key-value
buckets of those prefixes, whose streams are named KV_<bucket>).

Usage: nats-leftovers.py [HOST [PORT]]   (default 127.0.0.1 4222)
"""
import json
import re
import socket
import sys

LEFTOVER = re.compile(r"^(?:KV_)?(?:(?:jt|zt|zc|zd)[0-9a-f]{32}|bench[0-9]+)_")
INBOX = "_INBOX.zonecast-ci"


class Nats:
    """Just enough of the NATS client protocol for JetStream API requests."""

    def __init__(self, host, port):
        self.sock = socket.create_connection((host, port), timeout=10)
        self.buf = b""
        info = self.line()
        if not info.startswith("INFO "):
            sys.exit(f"nats-leftovers: not a NATS server on {host}:{port}: {info!r}")
        self.sock.sendall(b'CONNECT {"verbose":false,"pedantic":false}\r\n' + f"SUB {INBOX} 1\r\n".encode())

    def fill(self, size):
        while len(self.buf) < size:
            chunk = self.sock.recv(65536)
            if not chunk:
                sys.exit("nats-leftovers: the server closed the connection")
            self.buf += chunk

    def line(self):
        while b"\r\n" not in self.buf:
            self.fill(len(self.buf) + 1)
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line.decode()

    def request(self, subject, body):
        data = json.dumps(body).encode()
        self.sock.sendall(f"PUB {subject} {INBOX} {len(data)}\r\n".encode() + data + b"\r\n")
        while True:
            line = self.line()
            if line == "PING":
                self.sock.sendall(b"PONG\r\n")
            elif line.startswith("-ERR"):
                sys.exit(f"nats-leftovers: {line}")
            elif line.startswith("MSG "):
                size = int(line.split()[-1])
                self.fill(size + 2)
                payload, self.buf = self.buf[:size], self.buf[size + 2 :]
                answer = json.loads(payload)
                if "error" in answer:
                    sys.exit(f"nats-leftovers: {subject}: {answer['error']}")
                return answer


def main():
    host = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1"
    port = int(sys.argv[2]) if len(sys.argv) > 2 else 4222
    nats = Nats(host, port)
    names, offset = [], 0
    while True:
        page = nats.request("$JS.API.STREAM.NAMES", {"offset": offset})
        streams = page.get("streams") or []
        names += streams
        offset += len(streams)
        if not streams or offset >= page.get("total", 0):
            break
    leftovers = [name for name in names if LEFTOVER.match(name)]
    for name in leftovers:
        nats.request(f"$JS.API.STREAM.DELETE.{name}", {})
    print(f"nats-leftovers: removed {len(leftovers)} of {len(names)} streams")


if __name__ == "__main__":
    main()
