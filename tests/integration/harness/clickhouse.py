"""harness/clickhouse.py — a private clickhouse-server on free loopback ports.

    from harness.clickhouse import ClickHouse
    ch = ClickHouse(self)       # registers cleanup with a TestCase (or call cleanup())
    ch.start()
    ch.query("SELECT 1")        # -> str (TabSeparated), raises on HTTP errors
    ch.stop(); ch.start()       # restart on the same data dir and ports

Uses appliance/clickhouse/start-private and stop (the same scripts the
local cluster uses); the data dir is a temp dir removed at cleanup.
"""
import os
import shutil
import socket
import subprocess
import tempfile
import urllib.error
import urllib.parse
import urllib.request

ROOT = os.environ.get("WT_ROOT") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SCRIPTS = os.path.join(ROOT, "appliance", "clickhouse")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class ClickHouse:
    def __init__(self, testcase=None):
        self.dir = tempfile.mkdtemp(prefix="wt-ch-test-")
        self.http_port = free_port()
        self.tcp_port = free_port()
        self.inter_port = free_port()
        self.pid = None
        self.extra_config = None  # XML appended to config.xml (harness/cluster.py)
        if testcase is not None:
            testcase.addCleanup(self.cleanup)

    @property
    def url(self):
        return f"http://127.0.0.1:{self.http_port}"

    def start(self):
        out = subprocess.run([os.path.join(SCRIPTS, "start-private"), "--dir", self.dir,
                              "--http-port", str(self.http_port), "--tcp-port", str(self.tcp_port),
                              "--interserver-port", str(self.inter_port)]
                             + (["--extra-config", self.extra_config] if self.extra_config else []),
                             capture_output=True, text=True, timeout=60)
        if out.returncode != 0:
            raise RuntimeError(f"clickhouse start failed: {out.stderr}")
        self.pid = int(out.stdout.strip().splitlines()[-1])
        return self

    def stop(self, kill=False):
        args = [os.path.join(SCRIPTS, "stop"), "--dir", self.dir] + (["--kill"] if kill else [])
        subprocess.run(args, capture_output=True, timeout=60)
        self.pid = None

    def query(self, sql, database=None, timeout=60):
        url = self.url + "/"
        if database:
            url += "?" + urllib.parse.urlencode({"database": database})
        req = urllib.request.Request(url, data=sql.encode(), method="POST")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.read().decode()
        except urllib.error.HTTPError as e:
            raise RuntimeError(f"clickhouse: {e.code}: {e.read().decode()[:500]}") from None

    def cleanup(self):
        # the data dir is removed next, so nothing needs a clean shutdown:
        # SIGKILL ends the server at once (SIGTERM takes ~1 s)
        try:
            self.stop(kill=True)
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)
