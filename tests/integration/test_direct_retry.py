#!/usr/bin/env python3
"""test_direct_retry.py — a direct upload to the hub is all or nothing from
the client's view: when ClickHouse fails partway (some row blocks stored,
then an INSERT times out), the hub answers 503 and the client's retry
stores the upload exactly once — never twice (docs/api.md "### `POST
/v1/profiles` — direct upload").

The failure is injected with WT_FAILPOINT_INSERT=K (hub/failpoint.h): the
K-th data-block INSERT of the hub process is stored by ClickHouse and then
reported as a timeout, the worst case for a retry. Rows per INSERT are cut
small (clickhouse.insert_batch_rows) so a few thousand stacks make many
blocks.

`wtctl profile upload --hub` sends one Idempotency-Key per invocation
(all its tries): its own retry after such a 503 stores the upload once,
and a second invocation with the same file stores it again
(docs/profilers.md).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness.clickhouse import ClickHouse  # noqa: E402
from harness.hub import BIN, Hub  # noqa: E402

NSTACKS = 3000


def folded(n, salt=""):
    """n distinct stacks; returns (body, total of the values)."""
    lines = [f"main;svc{salt}.h{i % 7};lib.p{(i // 7) % 11};leaf{i} {1 + i % 5}" for i in range(n)]
    return ("\n".join(lines) + "\n").encode(), sum(1 + i % 5 for i in range(n))


class DirectUploadRetry(unittest.TestCase):
    def setUp(self):
        self.ch = ClickHouse(self).start()
        self.hub = Hub(self, self.ch, clickhouse_extra="insert_batch_rows = 500;")
        self.addCleanup(self.hub.stop)

    def start(self, fail_at):
        self.hub.start(env={"WT_FAILPOINT_INSERT": fail_at})
        self.assertIn(self.hub.create_project("demo")[0], (200, 201))
        self.read = self.hub.create_token("demo", "read")
        self.up = self.hub.create_token("demo", "upload")

    def total(self, svc):
        st, js = self.hub.query("demo", "table", self.read, service=svc,
                                **{"from": "0", "until": str(int(time.time()) + 3600)})
        self.assertEqual(st, 200, js)
        return js.get("total")

    def post(self, body, svc, headers=None):
        q = urllib.parse.urlencode({"service": svc, "format": "folded"})
        return self.hub.request("POST", "/v1/profiles?" + q, body, token=self.up, headers=headers)

    def retry_until_stored(self, body, svc, headers=None):
        """POST like a client that retries on 503: (first status, final reply)."""
        first = None
        for _ in range(8):
            st, js = self.post(body, svc, headers)
            if first is None:
                first = st
            if st != 503:
                return first, st, js
            time.sleep(0.5)
        return first, st, js

    def test_retry_after_partial_insert_counts_once(self):
        """No key: the hub recognises the retry by its content."""
        self.start("9")
        body, want = folded(NSTACKS)
        first, st, js = self.retry_until_stored(body, "s")
        self.assertEqual(first, 503, "the failpoint did not fail the upload")
        self.assertEqual(st, 200, js)
        self.assertEqual(js["samples"], NSTACKS)
        self.assertEqual(self.total("s"), want, f"retry double-counted; hub log: {self.hub.read_log()[-1500:]}")

    def test_idempotency_key(self):
        """With Idempotency-Key: a retry completes the upload, a repeat is
        answered from the first reply, another key stores again."""
        self.start("9")
        body, want = folded(NSTACKS, "k")
        h = {"Idempotency-Key": "upload-7f3a"}
        first, st, js = self.retry_until_stored(body, "k", h)
        self.assertEqual(first, 503, "the failpoint did not fail the upload")
        self.assertEqual(st, 200, js)
        self.assertEqual(self.total("k"), want, f"retry double-counted; hub log: {self.hub.read_log()[-1500:]}")
        st, js2 = self.post(body, "k", h)
        self.assertEqual(st, 200, js2)
        self.assertTrue(js2.get("duplicate"), js2)
        self.assertEqual(js2["upload_id"], js["upload_id"])
        self.assertEqual(self.total("k"), want)
        st, js3 = self.post(body, "k", {"Idempotency-Key": "upload-other"})
        self.assertEqual(st, 200, js3)
        self.assertFalse(js3.get("duplicate"), js3)
        self.assertNotEqual(js3["upload_id"], js["upload_id"])
        self.assertEqual(self.total("k"), 2 * want)
        st, js4 = self.post(body, "k", {"Idempotency-Key": "bad key with spaces"})
        self.assertEqual(st, 400, js4)

    def wtctl_upload(self, path, svc, *extra):
        r = subprocess.run([os.path.join(BIN, "wtctl"), "--json", "--hub", self.hub.url, "--token", self.up,
                            "profile", "upload", path, "--service", svc, "--format", "folded", *extra],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout), r.stderr

    def test_wtctl_key_per_invocation(self):
        """wtctl's retry after a partial insert stores the upload once; the
        same file uploaded by a second wtctl stores again; --idempotency-key
        repeats one upload."""
        self.start("9")
        body, want = folded(NSTACKS, "w")
        d = tempfile.mkdtemp(prefix="wt-idem-")
        self.addCleanup(shutil.rmtree, d, True)
        path = os.path.join(d, "w.folded")
        with open(path, "wb") as f:
            f.write(body)
        js, err = self.wtctl_upload(path, "w")
        self.assertGreaterEqual(js["tries"], 2, f"the failpoint did not fail the first try: {err}")
        self.assertIn("HTTP 503", err)
        self.assertEqual(self.total("w"), want, f"wtctl's retry double-counted; hub log: {self.hub.read_log()[-1500:]}")
        js2, _ = self.wtctl_upload(path, "w")
        self.assertFalse(js2.get("duplicate"), js2)
        self.assertNotEqual(js2["upload_id"], js["upload_id"])
        self.assertEqual(self.total("w"), 2 * want, "a second wtctl upload of the same file is a new upload")
        js3, _ = self.wtctl_upload(path, "w", "--idempotency-key", "nightly-2026-12-03")
        js4, _ = self.wtctl_upload(path, "w", "--idempotency-key", "nightly-2026-12-03")
        self.assertFalse(js3.get("duplicate"), js3)
        self.assertTrue(js4.get("duplicate"), js4)
        self.assertEqual(js4["upload_id"], js3["upload_id"])
        self.assertEqual(self.total("w"), 3 * want)


if __name__ == "__main__":
    unittest.main()
