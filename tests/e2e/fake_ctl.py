#!/usr/bin/env python3
"""fake_ctl.py - the controller's agent protocol, as small as the agent's
instance tests need it (tests/e2e/test_instance_agent.sh): the test drives the
desired state by writing DIR/instances.json (or DIR/instances-NODE.json for
one node), and reads what the agent reports from DIR/heartbeat.json (the last
heartbeat body; DIR/heartbeat-NODE.json per node). Job work items come from
DIR/work.json (every node; none when absent), the ranks' shipped output goes
to DIR/logs/JOB.RANK (what `job logs` would show). Migration parts are stored
under DIR/migrations/ID/PART like the real controller does (contract
instances.md). Not a controller: no auth, no store, loopback only.

    fake_ctl.py DIR     prints "port=N" once listening on 127.0.0.1
"""
import hashlib
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

DIR = sys.argv[1]
lock = threading.Lock()


def wanted(node):
    """DIR/instances-NODE.json when there is one, else DIR/instances.json."""
    p = os.path.join(DIR, f"instances-{node}.json")
    return p if node and os.path.exists(p) else os.path.join(DIR, "instances.json")


def version(node=""):
    v = 1
    for p in (wanted(node), os.path.join(DIR, "work.json")):
        try:
            v = max(v, os.stat(p).st_mtime_ns // 1000)
        except FileNotFoundError:
            pass
    return v


def work():
    try:
        with open(os.path.join(DIR, "work.json")) as f:
            return json.load(f)
    except (FileNotFoundError, ValueError):
        return []


def instances(node=""):
    try:
        with open(wanted(node)) as f:
            return json.load(f)
    except (FileNotFoundError, ValueError):
        return []


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send(self, code, obj=None, body=None, headers=()):
        data = body if body is not None else json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/octet-stream" if body is not None
                         else "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def node(self):
        # the credential names the node: "Bearer sl_NODE"
        a = self.headers.get("Authorization") or ""
        return a[len("Bearer sl_"):] if a.startswith("Bearer sl_") else ""

    def part(self, u):
        # /v1/agent/migrations/ID/PART[/done]
        p = u.path.split("/")
        return p[4], p[5], len(p) > 6 and p[6] == "done"

    def do_POST(self):
        u = urlparse(self.path)
        q = parse_qs(u.query)
        data = self.body()
        if u.path == "/v1/agent/register":
            b = json.loads(data)
            self.send(200, {"node": b["node"], "state": "ready",
                            "credential": "sl_" + b["node"], "heartbeat_s": 1,
                            "work_version": version(b["node"])})
        elif u.path == "/v1/agent/heartbeat":
            n = self.node()
            with lock:
                for name in ("heartbeat.json", f"heartbeat-{n}.json"):
                    tmp = os.path.join(DIR, name + ".tmp")
                    with open(tmp, "wb") as f:
                        f.write(data)
                    os.rename(tmp, os.path.join(DIR, name))
            self.send(200, {"node": n, "state": "ready", "heartbeat_s": 1,
                            "work_version": version(n)})
        elif u.path == "/v1/agent/logs":
            job, rank, off = q["job"][0], int(q["rank"][0]), int(q["offset"][0])
            os.makedirs(os.path.join(DIR, "logs"), exist_ok=True)
            path = os.path.join(DIR, "logs", f"{os.path.basename(job)}.{rank}")
            with lock:
                size = os.path.getsize(path) if os.path.exists(path) else 0
                if off == size:
                    with open(path, "ab") as f:
                        f.write(data)
                    size += len(data)
            self.send(200, {"size": size})
        elif u.path.startswith("/v1/agent/migrations/"):
            inst, part, done = self.part(u)
            d = os.path.join(DIR, "migrations", inst)
            os.makedirs(d, exist_ok=True)
            path = os.path.join(d, part)
            size = os.path.getsize(path) if os.path.exists(path) else 0
            if done:
                b = json.loads(data)
                with open(path, "rb") as f:
                    h = hashlib.sha256(f.read()).hexdigest()
                if b["size"] != size or b["sha256"] != h:
                    self.send(409, {"error": {"code": "mismatch", "message": "size or sha256"},
                                    "size": size})
                    return
                with open(path + ".sha256", "w") as f:
                    f.write(h)
                self.send(200, {"size": size, "sha256": h})
                return
            off = int(q.get("offset", ["0"])[0])
            if off != size:
                self.send(409, {"error": {"code": "offset", "message": "wrong offset"},
                                "size": size})
                return
            with open(path, "ab") as f:
                f.write(data)
            self.send(200, {"size": size + len(data)})
        else:
            self.send(404, {"error": {"code": "not_found", "message": u.path}})

    def do_GET(self):
        u = urlparse(self.path)
        q = parse_qs(u.query)
        if u.path == "/v1/agent/work":
            n = self.node()
            have = int(q.get("version", ["0"])[0])
            wait = min(int(q.get("wait", ["0"])[0]), 5)
            end = time.time() + wait
            while version(n) == have and time.time() < end:
                time.sleep(0.1)
            self.send(200, {"version": version(n), "work": work(), "instances": instances(n)})
        elif u.path.startswith("/v1/agent/migrations/"):
            inst, part, _ = self.part(u)
            path = os.path.join(DIR, "migrations", inst, part)
            if not os.path.exists(path + ".sha256"):
                self.send(404, {"error": {"code": "not_found", "message": "no such part"}})
                return
            size = os.path.getsize(path)
            with open(path + ".sha256") as f:
                h = f.read().strip()
            if os.path.exists(os.path.join(DIR, "corrupt-" + part)):
                h = "0" * 64
            off = int(q.get("offset", ["0"])[0])
            n = int(q.get("len", [str(1 << 20)])[0])
            with open(path, "rb") as f:
                f.seek(off)
                chunk = f.read(n)
            self.send(200, body=chunk, headers=(("X-Suanli-Size", str(size)),
                                                ("X-Suanli-Sha256", h)))
        else:
            self.send(404, {"error": {"code": "not_found", "message": u.path}})


srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
print(f"port={srv.server_address[1]}", flush=True)
srv.serve_forever()
