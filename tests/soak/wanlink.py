#!/usr/bin/env python3
"""wanlink.py — a userspace WAN link between two network namespaces, for
the soak tests when the kernel has no netem (tests/soak/test_repl_wan.py
starts one per edge; docs/operations.md, "Soak: all of it at once").

It opens a TUN device (IFF_TUN | IFF_NO_PI: bare IP packets) inside the
edge namespace and another inside the hub namespace, then forwards every
packet read from one to the other after holding it for the one-way delay
(a heap of (due time, arrival order, packet) and a poll loop), dropping a
fraction of them at random (seeded; the seed is logged). No bandwidth
limit, no reordering, no jitter. The devices exist only while this process
holds them: they go away when it exits, however it exits.

Signals: SIGUSR1 starts a partition (every packet dropped, both ways),
SIGUSR2 ends it; SIGTERM/SIGINT print the counters and exit. Once both
devices exist it prints "ready" on stdout; the caller gives them addresses
and routes (`ip netns exec NS ip addr add A peer B dev DEV`). Every second
(and at exit) the counters go to --stats as JSON (written to a temporary
file and renamed, so a reader never sees half of it).

Python 3 stdlib only; needs CAP_NET_ADMIN and CAP_SYS_ADMIN (setns).
  python3 wanlink.py --edge-ns NS1 --edge-dev te9 --hub-ns NS2 --hub-dev th9 \
      --delay-ms 100 --loss 0.02 --seed 1 --stats /tmp/x.json
"""
import argparse
import ctypes
import fcntl
import heapq
import json
import os
import random
import select
import signal
import struct
import sys
import time

TUNSETIFF = 0x400454CA
IFF_TUN = 0x0001
IFF_NO_PI = 0x1000
CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def setns(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        if _libc.setns(fd, CLONE_NEWNET) != 0:
            e = ctypes.get_errno()
            raise OSError(e, f"setns {path}: {os.strerror(e)}")
    finally:
        os.close(fd)


def ns_path(ns):
    return ns if ns.startswith("/") else "/run/netns/" + ns


def open_tun(ns, name):
    """A TUN device called `name` inside netns `ns`, up; returns its fd."""
    setns(ns_path(ns))
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TUN | IFF_NO_PI))
    return fd


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--edge-ns", required=True)
    ap.add_argument("--edge-dev", required=True)
    ap.add_argument("--hub-ns", required=True)
    ap.add_argument("--hub-dev", required=True)
    ap.add_argument("--delay-ms", type=float, default=100.0, help="one-way delay (each direction)")
    ap.add_argument("--loss", type=float, default=0.02, help="fraction of packets dropped (each direction)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--stats", help="JSON counters written here every second")
    a = ap.parse_args()

    rnd = random.Random(a.seed)
    fe = open_tun(a.edge_ns, a.edge_dev)
    fh = open_tun(a.hub_ns, a.hub_dev)  # this process stays in the hub namespace
    peer = {fe: fh, fh: fe}
    dname = {fe: "edge_to_hub", fh: "hub_to_edge"}
    stats = {d: {"packets": 0, "bytes": 0, "forwarded": 0, "lost": 0, "partitioned": 0, "write_errors": 0}
             for d in dname.values()}
    state = {"partition": False, "stop": False, "partitions": 0}
    delay = a.delay_ms / 1000.0

    def on_signal(sig, _frame):
        if sig == signal.SIGUSR1:
            state["partition"] = True
            state["partitions"] += 1
        elif sig == signal.SIGUSR2:
            state["partition"] = False
        else:
            state["stop"] = True
    for s in (signal.SIGUSR1, signal.SIGUSR2, signal.SIGTERM, signal.SIGINT):
        signal.signal(s, on_signal)

    def dump():
        if not a.stats:
            return
        tmp = a.stats + ".tmp"
        with open(tmp, "w") as f:
            json.dump(dict(stats, partition=state["partition"], partitions=state["partitions"],
                           delay_ms=a.delay_ms, loss=a.loss, seed=a.seed), f)
        os.replace(tmp, a.stats)

    print(f"wanlink: {a.edge_ns}/{a.edge_dev} <-> {a.hub_ns}/{a.hub_dev}: one-way delay {a.delay_ms:g} ms,"
          f" loss {a.loss:g}, seed {a.seed}", file=sys.stderr, flush=True)
    print("ready", flush=True)

    heap = []   # (due, order, out fd, direction, packet)
    order = 0
    poll = select.poll()
    poll.register(fe, select.POLLIN)
    poll.register(fh, select.POLLIN)
    next_dump = time.monotonic() + 1.0
    while not state["stop"]:
        now = time.monotonic()
        timeout = next_dump - now
        if heap:
            timeout = min(timeout, heap[0][0] - now)
        try:
            ready = poll.poll(max(0, timeout) * 1000.0)
        except InterruptedError:
            ready = []
        now = time.monotonic()
        for fd, _ in ready:
            d = dname[fd]
            for _ in range(256):  # bounded: the other direction gets its turn
                try:
                    pkt = os.read(fd, 65536)
                except (BlockingIOError, InterruptedError):
                    break
                st = stats[d]
                st["packets"] += 1
                st["bytes"] += len(pkt)
                if state["partition"]:
                    st["partitioned"] += 1
                elif rnd.random() < a.loss:
                    st["lost"] += 1
                else:
                    heapq.heappush(heap, (now + delay, order, peer[fd], d, pkt))
                    order += 1
        while heap and heap[0][0] <= now:
            _, _, out, d, pkt = heapq.heappop(heap)
            if state["partition"]:  # cut while in flight
                stats[d]["partitioned"] += 1
                continue
            try:
                os.write(out, pkt)
                stats[d]["forwarded"] += 1
            except OSError:
                stats[d]["write_errors"] += 1
        if now >= next_dump:
            dump()
            next_dump = now + 1.0
    dump()
    print("wanlink: exit " + json.dumps(stats), file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
