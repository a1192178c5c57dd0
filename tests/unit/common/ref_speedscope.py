#!/usr/bin/env python3
"""ref_speedscope.py — independent reference figures for a speedscope JSON
file, computed with the standard json module only (test_speedscope.c
compares the decoder with them).

Prints one line per profile:
  profile INDEX\tKIND\tTOTAL\tNAME
KIND is sampled or evented; TOTAL the profile's total weight in the
decoder's units (docs/formats.md): time units scaled to nanoseconds,
rounded half up per sample (sampled) or per interval between consecutive
events while a frame is open (evented); bytes and none unscaled.
Then, per leaf frame name over all profiles:
  self NAME\tTOTAL
"""
import json
import math
import sys
from collections import defaultdict

MULT = {"nanoseconds": 1, "microseconds": 1e3, "milliseconds": 1e6, "seconds": 1e9,
        "bytes": 1, "none": 1}


def rnd(x):
    return int(math.floor(x + 0.5))


def main(path):
    with open(path, "rb") as f:
        d = json.load(f)
    frames = d["shared"]["frames"]
    selfw = defaultdict(int)
    for i, p in enumerate(d["profiles"]):
        mult = MULT[p.get("unit", "none")]
        total = 0
        if p["type"] == "sampled":
            for stack, w in zip(p["samples"], p["weights"]):
                v = rnd(w * mult)
                total += v
                if stack:
                    selfw[frames[stack[-1]]["name"]] += v
        else:
            opened, prev = [], None
            for e in p["events"]:
                if opened and e["at"] > prev:
                    v = rnd((e["at"] - prev) * mult)
                    total += v
                    selfw[frames[opened[-1]]["name"]] += v
                prev = e["at"]
                if e["type"] == "O":
                    opened.append(e["frame"])
                else:
                    opened.pop()
        print("profile %d\t%s\t%d\t%s" % (i, p["type"], total, p.get("name", "")))
    for nm, v in sorted(selfw.items()):
        print("self %s\t%d" % (nm, v))


if __name__ == "__main__":
    main(sys.argv[1])
