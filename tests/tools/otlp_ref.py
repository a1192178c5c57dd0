#!/usr/bin/env python3
"""otlp_ref.py — an independent reference reader for OTLP profiles requests.

Walks the protobuf wire format directly (no generated code, no Watchtower
code) and prints, as JSON, what each profile in an ExportProfilesServiceRequest
holds: the schema generation, the resource's service.name, sample type and
unit, period type/unit/period, the number of samples and the raw total of
the sample values (a sample without values counts one per timestamp).
Used by tests/unit/common/test_otlp.c and tests/integration/test_otlp.py to
check wt_otlp_decode against figures computed another way.

Field numbers come from opentelemetry-proto's profiles.proto at the tags
v1.5.0 (per-profile tables), v1.7.0 (dictionary, KeyValue attributes),
v1.8.0 (dictionary with stacks; Sample values=2, attributes=3, link=4) and
v1.10.0 (Sample attributes=2, link=3, values=4).

usage: otlp_ref.py FILE.pb   → JSON on stdout, exit 0
"""
import json
import struct
import sys

from pbwire import fields, varint


def packed_varints(fl, num):
    vals = []
    for n, wt, v in fl:
        if n != num:
            continue
        if wt == 0:
            vals.append(v)
        else:
            i = 0
            while i < len(v):
                x, i = varint(v, i)
                vals.append(x)
    return vals


def packed_fixed64(fl, num):
    vals = []
    for n, wt, v in fl:
        if n != num:
            continue
        if wt == 1:
            vals.append(v)
        else:
            vals += list(struct.unpack("<%dQ" % (len(v) // 8), v))
    return vals


def s64(x):
    return x - (1 << 64) if x >= 1 << 63 else x


def one(fl, num, default=None):
    r = default
    for n, _, v in fl:
        if n == num:
            r = v
    return r


def all_of(fl, num):
    return [v for n, _, v in fl if n == num]


def generation(top):
    dicts = all_of(top, 2)
    if not dicts:
        return "1.5"
    d = fields(b"".join(dicts))
    for ent in all_of(d, 6):  # attribute_table entries
        f1 = [wt for n, wt, _ in fields(ent) if n == 1]
        if f1:
            return "1.7" if f1[0] == 2 else "1.8+"
    if all_of(d, 7):
        s = fields(all_of(d, 7)[-1])
        if s and s[0][1] == 0:
            return "1.7"  # AttributeUnit has varint fields
    for rp in all_of(top, 1):
        for sp in all_of(fields(rp), 2):
            for prof in all_of(fields(sp), 2):
                for n, wt, _ in fields(prof):
                    if n == 3:  # 1.7 location_indices (packed) / 1.8+ time (fixed64)
                        return "1.7" if wt == 2 else "1.8+"
    return "1.8+"


def sample_gen(samples):
    for s in samples:
        for n, wt, _ in fields(s):
            if n == 3:
                return "1.10" if wt == 0 else "1.8"
            if n == 4:
                return "1.10" if wt == 2 else "1.8"
    return "1.10"


def main():
    data = open(sys.argv[1], "rb").read()
    top = fields(data)
    gen = generation(top)
    strings = []
    attr_tab = []
    if gen != "1.5":
        d = fields(b"".join(all_of(top, 2)))
        strings = [v.decode() for v in all_of(d, 5)]
        attr_tab = all_of(d, 6)
    out = {"generation": gen, "profiles": []}
    for rp in all_of(top, 1):
        rpf = fields(rp)
        service = None
        for res in all_of(rpf, 1):
            for kv in all_of(fields(res), 1):
                kvf = fields(kv)
                if one(kvf, 1) == b"service.name":
                    av = fields(one(kvf, 2, b""))
                    service = (one(av, 1) or b"").decode()
        for sp in all_of(rpf, 2):
            for prof in all_of(fields(sp), 2):
                pf = fields(prof)
                g = gen
                if gen == "1.5":
                    strings = [v.decode() for v in all_of(pf, 10)]
                    attr_tab = all_of(pf, 7)
                    st_f, smp_f, per_t, per_f, val_f, ts_f = 1, 2, 13, 14, 3, 6
                    attr_f = 4
                elif gen == "1.7":
                    st_f, smp_f, per_t, per_f, val_f, ts_f = 1, 2, 6, 7, 3, 6
                    attr_f = 4
                else:
                    g = sample_gen(all_of(pf, 2))
                    st_f, smp_f, per_t, per_f, ts_f = 1, 2, 5, 6, 5
                    val_f = 4 if g == "1.10" else 2
                    attr_f = 2 if g == "1.10" else 3
                types = []
                for vt in all_of(pf, st_f):
                    vf = fields(vt)
                    types.append([strings[one(vf, 1, 0)], strings[one(vf, 2, 0)]])
                pt = one(pf, per_t)
                ptype = None
                if pt is not None:
                    vf = fields(pt)
                    ptype = [strings[one(vf, 1, 0)], strings[one(vf, 2, 0)]]
                total = 0
                by_service = {}
                samples = all_of(pf, smp_f)
                for s in samples:
                    sf = fields(s)
                    svc = service or "unknown_service"
                    for ai in packed_varints(sf, attr_f):
                        kv = fields(attr_tab[ai])
                        key = one(kv, 1)
                        key = key.decode() if isinstance(key, bytes) else strings[key or 0]
                        if key == "service.name":
                            av = fields(one(kv, 2, b""))
                            v = one(av, 1)
                            if v:
                                svc = v.decode()
                    vals = [s64(v) for v in packed_varints(sf, val_f)]
                    if gen in ("1.5", "1.7"):
                        ts = packed_varints(sf, ts_f)
                    else:
                        ts = packed_fixed64(sf, ts_f)
                    v = sum(vals) if vals else len(ts)
                    total += v
                    by_service[svc] = by_service.get(svc, 0) + v
                out["profiles"].append({
                    "generation": g, "service": service, "sample_types": types,
                    "period_type": ptype, "period": s64(one(pf, per_f, 0)),
                    "samples": len(samples), "raw_total": total,
                    "by_service": by_service})
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
