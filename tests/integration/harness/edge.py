"""harness/edge.py — start a real wt-edge on a free loopback port.

    from harness.edge import Edge
    e = Edge(self)            # registers cleanup with a TestCase (or call stop())
    e.start()
    status, body = e.upload(data, format="folded", service="svc")
    status, js = e.query("table", service="svc")
    e.kill9(); e.start()      # restart on the same data dir and port
    e = replicating_edge(self, hub, pki, "edge1", extra_cfg)  # started, replicating to hub

The config is generated from the documented keys (appliance/edge.cfg) in a
temp dir; the data dir lives there too and is removed at cleanup.
"""
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.parse

ROOT = os.environ.get("WT_ROOT") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
BIN = os.environ.get("WT_BIN") or os.path.join(ROOT, os.environ.get("BUILD", "build"), "bin")
CORPUS = os.path.abspath(os.path.join(ROOT, "tests", "corpus"))

UPLOAD_TOKEN = "test-upload-token"
READ_TOKEN = "test-read-token"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Edge:
    def __init__(self, testcase=None, project="demo", sync=True, workers=4, max_body_mb=64,
                 rollup_mode="merge", extra_limits="", extra_edge="", edge_id="edge-test", hub=None,
                 replication="", retention=None, host="127.0.0.1"):
        """host: the address every listener binds ("::1" for IPv6 loopback);
        hub: None (no replication) or {"url" (or "urls": a list),"ca","cert","key"};
        replication: text inside `replication = { ... }` (e.g.
        "backoff_initial_ms = 50;"); retention: {key: value} over the defaults
        below (e.g. {"disk_quota_mb": 1, "interval_s": 1})."""
        self.dir = tempfile.mkdtemp(prefix="wt-edge-test-")
        self.edge_id = edge_id
        h = hub or {"url": "", "ca": "", "cert": "", "key": ""}
        # "urls": several hubs with failover (hub.urls); else "url"
        hub_addr = ("urls = [" + ", ".join(f'"{u}"' for u in h["urls"]) + "];") if h.get("urls") \
            else f'url = "{h["url"]}";'
        ret = {"raw_hours_after_replication": 24, "rollup_days": 7, "disk_quota_mb": 10240}
        ret.update(retention or {})
        ret_text = " ".join(f"{k} = {v};" for k, v in ret.items())
        self.host = host
        lh = f"[{host}]" if ":" in host else host
        self.port = free_port()
        self.otlp_http_port = free_port()  # edge.otlp_http_listen
        self.otlp_grpc_port = free_port()  # edge.otlp_grpc_listen
        self.project = project
        self.proc = None
        self.cfg = os.path.join(self.dir, "edge.cfg")
        self.log = os.path.join(self.dir, "edge.log")
        with open(self.cfg, "w") as f:
            f.write(f"""edge = {{
  id = "{edge_id}";
  listen = "{lh}:{self.port}";
  otlp_http_listen = "{lh}:{self.otlp_http_port}";
  otlp_grpc_listen = "{lh}:{self.otlp_grpc_port}";
  data_dir = "{self.dir}/data";
  default_project = "{project}";
  sync = {"true" if sync else "false"};
  workers = {workers};
  rollup_mode = "{rollup_mode}";
  {extra_edge}
}};
limits = {{ max_body_mb = {max_body_mb}; max_decompressed_mb = 512; max_samples = 5000000; max_stack_depth = 2048; {extra_limits} }};
retention = {{ {ret_text} }};
projects = ( {{ name = "{project}"; upload_tokens = [ "{UPLOAD_TOKEN}" ]; read_tokens = [ "{READ_TOKEN}" ]; }} );
hub = {{ {hub_addr} ca = "{h["ca"]}"; cert = "{h["cert"]}"; key = "{h["key"]}"; }};
replication = {{ {replication} }};
""")
        if testcase is not None:
            testcase.addCleanup(self.cleanup)

    @property
    def url(self):
        return f"http://{'[' + self.host + ']' if ':' in self.host else self.host}:{self.port}"

    def start(self, timeout=15, env=None):
        logf = open(self.log, "ab")
        self.proc = subprocess.Popen([os.path.join(BIN, "wt-edge"), "--config", self.cfg],
                                     stdout=logf, stderr=logf, env=dict(os.environ, **(env or {})))
        logf.close()
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"wt-edge exited with {self.proc.returncode}: {self.read_log()[-2000:]}")
            try:
                st, _ = self.request("GET", "/healthz", timeout=1)
                if st == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("wt-edge did not become healthy: " + self.read_log()[-2000:])

    def read_log(self):
        try:
            with open(self.log, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def stop(self, timeout=20):
        """SIGTERM and wait; returns the exit code (None if it was not running)."""
        if not self.proc or self.proc.poll() is not None:
            rc = self.proc.returncode if self.proc else None
            self.proc = None
            return rc
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            rc = "timeout"
        self.proc = None
        return rc

    def kill9(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def cleanup(self):
        self.kill9()
        shutil.rmtree(self.dir, ignore_errors=True)

    def request(self, method, path, body=None, headers=None, timeout=60):
        c = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            return r.status, r.read()
        finally:
            c.close()

    def upload(self, data, token=UPLOAD_TOKEN, path="/v1/profiles", headers=None, **params):
        qs = urllib.parse.urlencode(params, safe="{}=,")
        h = {"Authorization": f"Bearer {token}"} if token else {}
        h.update(headers or {})
        return self.request("POST", f"{path}?{qs}", body=data, headers=h)

    def query(self, view, token=READ_TOKEN, project=None, **params):
        project = project or self.project
        qs = urllib.parse.urlencode(params)
        path = f"/v1/projects/{project}/profiles/{view}" if view != "services" else f"/v1/projects/{project}/services"
        st, body = self.request("GET", f"{path}?{qs}", headers={"Authorization": f"Bearer {token}"})
        try:
            return st, json.loads(body)
        except ValueError:
            return st, body

    def metrics(self):
        st, body = self.request("GET", "/metrics")
        out = {}
        for line in body.decode().splitlines():
            if line and not line.startswith("#"):
                k, v = line.rsplit(" ", 1)
                out[k] = float(v)
        return out

    def wait_sampler(self, timeout=60):
        """Wait until the eBPF sampler runs (wt_edge_ebpf_enabled 1; the
        verifier with the unwinder takes a while on a loaded machine).
        None when it runs, else the log's tail to fail with: at once when
        the edge logged that the sampler did not start (a program the
        kernel refused is not loaded again on its own)."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.metrics().get("wt_edge_ebpf_enabled") == 1:
                return None
            if "ebpf sampler not started" in self.read_log():
                break
            time.sleep(0.1)
        if self.metrics().get("wt_edge_ebpf_enabled") == 1:
            return None
        return "the eBPF sampler did not start:\n" + self.read_log()[-3000:]

    def wait_flushes(self, n, timeout=30):
        """Wait until the eBPF sampler has flushed n times more than now
        (what ran before is then in the buffer), for up to timeout seconds;
        returns whether it did."""
        key = "wt_edge_ebpf_flushes_total"
        want = self.metrics().get(key, 0) + n
        deadline = time.time() + timeout
        while time.time() < deadline and self.metrics().get(key, 0) < want:
            time.sleep(0.1)
        return self.metrics().get(key, 0) >= want


def replicating_edge(testcase, hub, pki, edge_id, extra_cfg=""):
    """A started Edge that replicates to hub (harness.hub.Hub, started with
    pki: a `wtctl pki init` directory) with quick retries: its certificate
    issued into pki, the edge allowed on the hub's project "demo", and
    extra_cfg (config text, e.g. an ebpf group) appended to its config."""
    subprocess.run([os.path.join(BIN, "wtctl"), "pki", "issue-edge", "--ca", pki, "--edge-id", edge_id],
                   check=True, capture_output=True)
    hub.allow_edge(edge_id)
    e = Edge(testcase, edge_id=edge_id,
             hub={"url": hub.repl_url, "ca": os.path.join(pki, "ca.crt"),
                  "cert": os.path.join(pki, edge_id + ".crt"), "key": os.path.join(pki, edge_id + ".key")},
             replication="backoff_initial_ms = 50; backoff_max_ms = 500; interval_ms = 100;")
    if extra_cfg:
        with open(e.cfg, "a") as f:
            f.write(extra_cfg)
    e.start()
    return e
