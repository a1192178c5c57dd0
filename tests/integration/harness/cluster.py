"""harness/cluster.py — ZooKeeper plus a 2-shard x 2-replica ClickHouse
cluster on free loopback ports (cluster mode of the hub, docs/operations.md "## Scale out").

    from harness.cluster import Cluster
    cl = Cluster(self).start()      # ZooKeeper, then 4 clickhouse-servers
    cl.servers[0].url               # each a harness.clickhouse.ClickHouse
    cl.name                         # "wt": the <remote_servers> cluster name
    cl.query_all("SELECT ...")      # -> [str per server]
    cl.servers[1].stop(); cl.servers[1].start()

Server i is shard i // 2 + 1, replica i % 2 + 1. Every server gets the
same <remote_servers> (internal_replication = true: a Distributed insert
goes to one replica, ReplicatedMergeTree copies it), its own <macros> and
the <zookeeper> node. ZooKeeper is Debian's zookeeper 3.8 started directly
(docs/operations.md "## Scale out"). The helper for the appliance (appliance/clickhouse/cluster-config)
writes the same XML.
"""
import os
import shutil
import socket
import subprocess
import tempfile
import time

from harness.clickhouse import ClickHouse, ROOT, free_port

ZK_CP = "/etc/zookeeper/conf:/usr/share/java/zookeeper.jar"
CLUSTER_CONFIG = os.path.join(ROOT, "appliance", "clickhouse", "cluster-config")


class ZooKeeper:
    def __init__(self, testcase=None):
        self.dir = tempfile.mkdtemp(prefix="wt-zk-test-")
        self.port = free_port()
        self.proc = None
        if testcase is not None:
            testcase.addCleanup(self.cleanup)

    def start(self, timeout=60):
        cfg = os.path.join(self.dir, "zoo.cfg")
        os.makedirs(os.path.join(self.dir, "data"), exist_ok=True)
        with open(cfg, "w") as f:
            f.write(f"tickTime=500\ninitLimit=10\nsyncLimit=5\ndataDir={self.dir}/data\n"
                    f"clientPort={self.port}\nclientPortAddress=127.0.0.1\n"
                    "admin.enableServer=false\nmaxSessionTimeout=30000\n")
        logf = open(os.path.join(self.dir, "zk.log"), "ab")
        self.proc = subprocess.Popen(["java", "-Xmx256m", "-Dzookeeper.log.dir=" + self.dir,
                                      "-cp", ZK_CP, "org.apache.zookeeper.server.quorum.QuorumPeerMain", cfg],
                                     stdout=logf, stderr=logf, start_new_session=True)
        logf.close()
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("zookeeper exited; see " + self.dir)
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                    s.sendall(b"srvr")
                    if b"Mode" in s.recv(4096):
                        return self
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError("zookeeper did not answer on port %d" % self.port)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
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


class Cluster:
    def __init__(self, testcase=None, shards=2, replicas=2, name="wt"):
        self.name = name
        self.zk = ZooKeeper(testcase)
        self.shards, self.replicas = shards, replicas
        self.servers = [ClickHouse(testcase) for _ in range(shards * replicas)]

    def start(self):
        self.zk.start()
        hosts = ",".join(f"127.0.0.1:{s.tcp_port}" for s in self.servers)
        for i, s in enumerate(self.servers):
            extra = os.path.join(s.dir, "cluster.xml")
            out = subprocess.run([CLUSTER_CONFIG, "--name", self.name, "--replicas", str(self.replicas),
                                  "--hosts", hosts, "--zookeeper", f"127.0.0.1:{self.zk.port}",
                                  "--shard", str(i // self.replicas + 1),
                                  "--replica", str(i % self.replicas + 1)],
                                 capture_output=True, text=True, timeout=30)
            if out.returncode != 0:
                raise RuntimeError("cluster-config: " + out.stderr)
            with open(extra, "w") as f:
                f.write(out.stdout)
            s.extra_config = extra
            s.start()
        return self

    def query_all(self, sql, database=None):
        return [s.query(sql, database=database) for s in self.servers]
