#!/usr/bin/env python3
"""test_repl_chaos.py — `make soak`: replication under repeated failures.

For WT_SOAK_SECONDS (default 300) two edges take a steady stream of real
folded uploads from four client threads while a chaos loop, every few
seconds, picks one of: SIGKILL the hub, SIGTERM the hub, SIGKILL an edge,
stop ClickHouse for a while — and brings it back. At the end every upload
that got a 2xx must be at the hub exactly once: the hub's total equals the
awk-independent sum of the acknowledged uploads.
"""
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from harness.clickhouse import ClickHouse  # noqa: E402
from harness.edge import Edge  # noqa: E402
from harness.hub import Hub, BIN, CORPUS  # noqa: E402

SRC = os.path.join(CORPUS, "folded/cargo-flamegraph__rust-rayon-stacks.folded")
WTCTL = os.path.join(BIN, "wtctl")


def awk_total(path):
    return int(subprocess.run(["awk", "{s+=$NF} END {printf \"%d\", s}", path], check=True,
                              capture_output=True, text=True).stdout)


class ReplicationChaos(unittest.TestCase):
    def test_chaos(self):
        seconds = int(os.environ.get("WT_SOAK_SECONDS", "300"))
        rnd = random.Random(int(os.environ.get("WT_SOAK_SEED", "1")))
        pki = tempfile.mkdtemp(prefix="wt-soak-pki-")
        self.addCleanup(shutil.rmtree, pki, True)
        subprocess.run([WTCTL, "pki", "init", "--dir", pki], check=True, capture_output=True)
        ch = ClickHouse(self)
        ch.start()
        hub = Hub(self, ch, pki=pki).start()
        hub.create_project("demo")
        read = hub.create_token("demo", "read")
        edges = []
        for name in ("soak1", "soak2"):
            subprocess.run([WTCTL, "pki", "issue-edge", "--ca", pki, "--edge-id", name], check=True,
                           capture_output=True)
            hub.allow_edge(name)
            edges.append(Edge(self, edge_id=name, hub={"url": hub.repl_url, "ca": f"{pki}/ca.crt",
                                                       "cert": f"{pki}/{name}.crt", "key": f"{pki}/{name}.key"},
                              replication="backoff_initial_ms = 50; backoff_max_ms = 1000;").start())
        with open(SRC, "rb") as f:
            data = f.read()
        per = awk_total(SRC)
        acked = [0]
        uncertain = [0]  # requests cut by an edge kill: stored or not, never twice
        lock = threading.Lock()
        stop = threading.Event()
        edge_down = set()

        def client(k):
            while not stop.is_set():
                e = edges[k % 2]
                if e.edge_id in edge_down:
                    time.sleep(0.1)
                    continue
                try:
                    st, _ = e.upload(data, service="soak", format="folded")
                except OSError:
                    st = 0
                with lock:
                    if st == 200:
                        acked[0] += 1
                    elif st == 0:
                        uncertain[0] += 1
                time.sleep(0.05)

        threads = [threading.Thread(target=client, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        actions = {"hub_kill": 0, "hub_term": 0, "edge_kill": 0, "clickhouse_stop": 0}
        try:
            deadline = time.time() + seconds
            while time.time() < deadline:
                time.sleep(rnd.uniform(2, 6))
                what = rnd.choice(list(actions))
                actions[what] += 1
                if what in ("hub_kill", "hub_term"):
                    if what == "hub_kill":
                        hub.proc.kill()
                        hub.proc.wait()
                        hub.proc = None
                    else:
                        hub.stop()
                    time.sleep(rnd.uniform(0.5, 4))
                    hub.start()
                elif what == "edge_kill":
                    e = rnd.choice(edges)
                    with lock:
                        edge_down.add(e.edge_id)
                    time.sleep(0.3)  # let in-flight uploads of that edge finish or fail
                    e.kill9()
                    e.start()
                    with lock:
                        edge_down.discard(e.edge_id)
                else:
                    ch.stop()
                    time.sleep(rnd.uniform(1, 5))
                    ch.start()
        finally:
            stop.set()
            for t in threads:
                t.join()
        expected = acked[0] * per
        print(f"soak: {seconds}s, {acked[0]} acknowledged uploads, {uncertain[0]} cut by an edge kill,"
              f" actions {actions}", flush=True)
        ok = lambda t: t is not None and t % per == 0 and expected <= t <= expected + uncertain[0] * per
        got = None
        drain_t0 = time.time()
        end = drain_t0 + 300
        while time.time() < end:
            try:
                st, js = hub.query("demo", "table", read, service="soak",
                                   **{"from": "0", "until": str(int(time.time()) + 3600)})
                got = js.get("total") if st == 200 else None
            except OSError:
                got = None
            if ok(got):
                break
            time.sleep(1)
        print(f"soak: drain took {time.time() - drain_t0:.1f}s (hub total {got}, expected {expected})", flush=True)
        self.assertTrue(ok(got), f"hub total {got}: expected {expected} (acknowledged uploads x {per})"
                        f" plus at most {uncertain[0]} whole uploads cut by edge kills")
        time.sleep(3)
        st, js = hub.query("demo", "table", read, service="soak",
                           **{"from": "0", "until": str(int(time.time()) + 3600)})
        self.assertEqual(js["total"], got, "total changed after the drain (duplicates)")


if __name__ == "__main__":
    unittest.main()
