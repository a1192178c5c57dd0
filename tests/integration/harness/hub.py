"""harness/hub.py — start a real wt-hub on a free loopback port.

    from harness.clickhouse import ClickHouse
    from harness.hub import Hub
    ch = ClickHouse(self).start()
    hub = Hub(self, ch)                 # generated hub.cfg in a temp dir
    hub.start()                         # waits for /healthz to answer 200
    hub.create_project("demo")          # -> (status, json)
    tok = hub.create_token("demo", "upload")
    status, js = hub.upload(data, token=tok, service="svc", format="pprof")
    status, js = hub.query("demo", "table", token=rtok, service="svc")

The config uses the documented keys of appliance/hub.cfg; extra lines can
be added per section with hub_extra / clickhouse_extra / object_store.
"""
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse

from harness.clickhouse import free_port

ROOT = os.environ.get("WT_ROOT") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
BIN = os.environ.get("WT_BIN") or os.path.join(ROOT, os.environ.get("BUILD", "build"), "bin")
CORPUS = os.path.abspath(os.path.join(ROOT, "tests", "corpus"))
ADMIN_TOKEN = "test-admin-token-0123456789abcdef"


class Hub:
    def __init__(self, testcase, ch, database="watchtower", workers=4, hub_extra="",
                 clickhouse_extra="", object_store=None, pki=None, repl_extra="", ch_timeout_ms=30000,
                 extra_cfg=""):
        """pki: None (replication listener off) or a directory made by
        `wtctl pki init` (ca.crt, hub.crt, hub.key): the replication
        listener then runs on self.repl_port with mutual TLS; repl_extra:
        more lines for its section (e.g. "claim_ttl_s = 8;", which must
        exceed twice ch_timeout_ms + claim_settle_ms)."""
        self.dir = tempfile.mkdtemp(prefix="wt-hub-test-")
        self.port = free_port()
        self.repl_port = free_port() if pki else 0
        self.proc = None
        self.cfg = os.path.join(self.dir, "hub.cfg")
        self.log = os.path.join(self.dir, "hub.log")
        self.admin_token = ADMIN_TOKEN
        if object_store is None:
            object_store = f'backend = "fs"; path = "{self.dir}/data/objects";'
        with open(self.cfg, "w") as f:
            f.write(f"""hub = {{
  listen = "127.0.0.1:{self.port}";
  data_dir = "{self.dir}/data";
  admin_token = "{ADMIN_TOKEN}";
  workers = {workers};
  health_interval_ms = 200;
  token_cache_ttl_ms = 1000;
  {hub_extra}
}};
clickhouse = {{
  url = "{ch.url}";
  database = "{database}";
  user = "default";
  password = "";
  timeout_ms = {ch_timeout_ms};
  connect_timeout_ms = 1000;
  retries = 1;
  backoff_ms = 50;
  {clickhouse_extra}
}};
object_store = {{ {object_store} }};
""")
            if pki:
                f.write(f'replication = {{ listen = "127.0.0.1:{self.repl_port}"; ca = "{pki}/ca.crt"; '
                        f'cert = "{pki}/hub.crt"; key = "{pki}/hub.key"; {repl_extra} }};\n')
            else:
                f.write('replication = { listen = ""; };\n')
            f.write(extra_cfg + "\n")  # more top-level sections, e.g. "analysis = { ... };"
        if testcase is not None:
            testcase.addCleanup(self.cleanup)

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    @property
    def repl_url(self):
        return f"https://127.0.0.1:{self.repl_port}"

    def start(self, timeout=30, wait_ready=True, env=None):
        logf = open(self.log, "ab")
        self.proc = subprocess.Popen([os.path.join(BIN, "wt-hub"), "--config", self.cfg],
                                     stdout=logf, stderr=logf, env=dict(os.environ, **(env or {})))
        logf.close()
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"wt-hub exited with {self.proc.returncode}: {self.read_log()[-2000:]}")
            try:
                st, _ = self.request("GET", "/healthz")
                if (st == 200 or (st == 503 and not wait_ready)) and self._repl_listening():
                    return self
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("wt-hub did not become ready: " + self.read_log()[-2000:])

    def _repl_listening(self):
        """The replication listener starts after the API one: accepting?"""
        if not self.repl_port:
            return True
        try:
            socket.create_connection(("127.0.0.1", self.repl_port), timeout=1).close()
            return True
        except OSError:
            return False

    def stop(self):
        if self.proc and self.proc.poll() is not None and self.proc.returncode != 0:
            # died under the test: its log's end is the only trace left
            sys.stderr.write(f"\nwt-hub exited with {self.proc.returncode} before stop; log tail:\n"
                             f"{self.read_log()[-6000:]}\n")
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def cleanup(self):
        try:
            self.stop()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

    def read_log(self):
        try:
            with open(self.log, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def metric(self, name):
        """the value of an unlabelled sample of /metrics (float), or None"""
        st, text = self.request("GET", "/metrics")
        if st != 200:
            return None
        for line in (text.decode() if isinstance(text, bytes) else str(text)).splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
        return None

    def request(self, method, path, body=None, token=None, headers=None, timeout=60):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        h = dict(headers or {})
        if token:
            h["Authorization"] = "Bearer " + token
        try:
            c.request(method, path, body=body, headers=h)
            r = c.getresponse()
            data = r.read()
        finally:
            c.close()
        try:
            return r.status, json.loads(data) if data else None
        except ValueError:
            return r.status, data

    def create_project(self, name, retention_days=30):
        return self.request("POST", "/v1/admin/projects",
                            json.dumps({"name": name, "retention_days": retention_days}),
                            token=self.admin_token)

    def create_token(self, project, role):
        st, js = self.request("POST", "/v1/admin/tokens", json.dumps({"project": project, "role": role}),
                              token=self.admin_token)
        if st != 201:
            raise RuntimeError(f"token create: {st} {js}")
        return js["token"]

    def allow_edge(self, edge_id, project="demo"):
        """Register an edge to a project (the hub refuses its batches and
        config for projects it is not registered to)."""
        st, js = self.request("POST", f"/v1/admin/edges/{edge_id}/projects", json.dumps({"project": project}),
                              token=self.admin_token)
        if st not in (200, 201):
            raise RuntimeError(f"edge allow: {st} {js}")
        return js

    def upload(self, data, token, service, idempotency_key=None, **params):
        """POST /v1/profiles; retried (as a client does on its Retry-After)
        when the hub deferred it because writing its replication claim took
        longer than replication.claim_settle_ms: a loaded machine's
        ClickHouse (docs/operations.md). Any other answer is returned.
        Without idempotency_key the same bytes and parameters are stored
        once (docs/api.md)."""
        q = {"service": service}
        q.update(params)
        h = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        for _ in range(5):
            st, js = self.request("POST", "/v1/profiles?" + urllib.parse.urlencode(q), data, token=token,
                                  headers=h)
            if not (st == 503 and "claim" in str(js)):
                break
            time.sleep(1)
        return st, js

    def query(self, project, view, token, **params):
        return self.request("GET", f"/v1/projects/{project}/profiles/{view}?" + urllib.parse.urlencode(params),
                            token=token)
