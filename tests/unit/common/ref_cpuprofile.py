#!/usr/bin/env python3
"""ref_cpuprofile.py — independent reference figures for a V8 .cpuprofile,
computed with the standard json module only (test_cpuprofile.c compares
the decoder with them).

Prints:
  samples N           number of entries in "samples"
  cpu NS              sum over samples of max(timeDelta, 0) * 1000 (old
                      layout: differences of consecutive "timestamps",
                      0 for the first) — the rule of docs/formats.md
  self NAME\tN\tNS    per leaf function name: sample count and cpu
Names follow docs/formats.md: functionName, or "(anonymous) URL:LINE"
(LINE = lineNumber + 1) when it is empty, or "(anonymous)" without URL.
"""
import json
import sys
from collections import defaultdict


def name_of(node):
    cf = node.get("callFrame", node)
    fn = cf.get("functionName", "")
    if fn:
        return fn
    url = cf.get("url", "")
    line = cf.get("lineNumber", -1)
    line = line + 1 if line is not None and line >= 0 else 0
    return "(anonymous) %s:%d" % (url, line) if url else "(anonymous)"


def main(path):
    with open(path, "rb") as f:
        d = json.load(f)
    nodes = {}
    if "nodes" in d:
        for n in d["nodes"]:
            nodes[n["id"]] = n
    else:
        stack = [d["head"]]
        while stack:
            n = stack.pop()
            nodes[n["id"]] = n
            stack.extend(n.get("children", []))
    samples = d.get("samples", [])
    if "timeDeltas" in d:
        deltas = [max(x, 0) for x in d["timeDeltas"]]
    else:
        ts = d.get("timestamps", [])[: len(samples)]
        deltas = [0] + [max(b - a, 0) for a, b in zip(ts, ts[1:])]
    cnt = defaultdict(int)
    cpu = defaultdict(int)
    for s, dt in zip(samples, deltas):
        nm = name_of(nodes[s])
        cnt[nm] += 1
        cpu[nm] += int(dt) * 1000
    print("samples", len(samples))
    print("cpu", sum(cpu.values()))
    for nm in sorted(cnt, key=lambda k: -cnt[k]):
        print("self %s\t%d\t%d" % (nm, cnt[nm], cpu[nm]))


if __name__ == "__main__":
    main(sys.argv[1])
