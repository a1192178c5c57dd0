#!/usr/bin/env python3
"""make_seeds.py — (re)write the seed corpora of the fuzz targets whose
inputs are framings around real profiles, from files of tests/corpus:

  tests/fuzz/seed/fuzz_pyroscope/   "CONTENT-TYPE\\nNAME\\nBODY" (the layout
      fuzz_pyroscope.c reads): multipart/form-data bodies as the Pyroscope Go
      SDK and Java agent send them (see tests/integration/test_edge.py).
  tests/fuzz/seed/fuzz_repl_batch/  protobuf replication Batches
      (proto/repl.proto) with headers as edge/http_ingest.c writes them.
  tests/fuzz/seed/fuzz_tls_http/    HTTP/1.1 requests as wt-edge's
      replication client and wtctl send them to the hub's mTLS port.

The other targets' seeds are small corpus files copied as they are.
Run from anywhere: python3 tests/fuzz/make_seeds.py
"""
import json
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "tools"))
from pbwire import put_field  # noqa: E402
CORPUS = os.path.join(ROOT, "tests", "corpus")
SEED = os.path.join(ROOT, "tests", "fuzz", "seed")


def corpus(rel):
    with open(os.path.join(CORPUS, rel), "rb") as f:
        return f.read()


def write(target, name, data):
    d = os.path.join(SEED, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def upload(seq, header, original, received_ns, rollup=()):
    m = put_field(1, seq) + put_field(2, json.dumps(header, separators=(",", ":"))) + put_field(3, original)
    for r in rollup:
        m += put_field(4, put_field(1, r[0]) + put_field(2, r[1]) + put_field(3, r[2]) + put_field(4, r[3])
                     + put_field(5, r[4]) + put_field(6, r[5]))
    return m + put_field(5, received_ns)


def batch(edge, uploads):
    seqs = [u[0] for u in uploads]
    m = put_field(1, edge) + put_field(2, min(seqs)) + put_field(3, max(seqs))
    for u in uploads:
        m += put_field(4, upload(*u))
    return m


def header(project, service, fmt, nbytes, **kw):
    h = {"v": 1, "project": project, "service": service, "format": fmt, "endpoint": "/v1/profiles",
         "from_ns": 0, "until_ns": 0, "received_ns": 1764756000000000000, "labels": {"env": "prod"},
         "edge": "edge-1", "bytes": nbytes}
    h.update(kw)
    return h


def multipart(boundary, parts):
    out = b""
    for name, fname, payload in parts:
        out += (f"--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"{fname}\"\r\n"
                "Content-Type: application/octet-stream\r\n\r\n").encode() + payload + b"\r\n"
    return out + f"--{boundary}--\r\n".encode()


def main():
    t0 = 1764756000000000000
    go_cpu = corpus("gen/go/go-cpu.pb.gz")
    folded = corpus("gen/perf-gzip/folded-gzip-dwarf.stackcollapse-perf-all.txt")
    jfr = corpus("jfr/jfr-parser__nativemem.jfr")
    otlp = corpus("otlp/pyroscope__otel-ebpf-profiler_otlp-1.8.0-corrupted.pb")
    otlp_ok = corpus("otlp/pyroscope__otel-ebpf-profiler_otlp-1.7.0-unsymbolized.pb")
    perf = corpus("perf-script/flamegraph__perf-js-stacks-01.txt")
    cpuprof = corpus("cpuprofile/speedscope__chrome65-simple.cpuprofile")
    ss = corpus("speedscope/austin-python__austin2speedscope.json")

    # Pyroscope /ingest
    b = "----wtboundary7MA4YWxkTrZu0gW"
    stc = json.dumps({"cpu": {"units": "nanoseconds", "aggregation": "sum"}}).encode()
    ct = f"multipart/form-data; boundary={b}".encode()
    write("fuzz_pyroscope", "go-sdk-cpu", ct + b"\napp.cpu{env=prod,region=eu}\n" +
          multipart(b, [("profile", "profile.pprof", go_cpu), ("sample_type_config", "stc.json", stc)]))
    write("fuzz_pyroscope", "java-agent-jfr", ct + b"\njava-app.itimer{host=a}\n" +
          multipart(b, [("jfr", "jfr", jfr)]))
    write("fuzz_pyroscope", "quoted-boundary-folded",
          b"multipart/form-data; charset=utf-8; boundary=\"q u\"\nsvc.wall\n" +
          multipart("q u", [("profile", "p.txt", folded), ("labels", "l", b"")]))
    write("fuzz_pyroscope", "not-multipart", b"application/octet-stream\napp.cpu\n" + folded)

    # replication batches
    write("fuzz_repl_batch", "pprof-and-folded", batch("edge-1", [
        (7, header("demo", "api", "pprof", len(go_cpu)), go_cpu, t0,
         [("cpu", "nanoseconds", "main.hash", 29412600, 10000000, 30000000)]),
        (8, header("demo", "worker", "folded", len(folded), type="cpu", units="samples", sample_rate=99,
                   from_ns=t0 - 60 * 10**9, until_ns=t0), folded, t0 + 1),
    ]))
    write("fuzz_repl_batch", "jfr-perf-cpuprofile-speedscope", batch("edge-2", [
        (1, header("demo", "java", "jfr", len(jfr), hint="cpu"), jfr, t0),
        (2, header("demo", "perf", "perf", len(perf)), perf, t0),
        (3, header("demo", "node", "cpuprofile", len(cpuprof)), cpuprof, t0),
        (4, header("demo", "py", "speedscope", len(ss), units="objects"), ss, t0),
    ]))
    write("fuzz_repl_batch", "otlp-services", batch("edge-1", [
        (10, header("demo", "a", "otlp", len(otlp_ok), otlp_service="unknown_service"), otlp_ok, t0),
        (11, header("demo", "b", "otlp", len(otlp), otlp_service="x"), otlp, t0),
    ]))
    write("fuzz_repl_batch", "rollup-only", batch("edge-1", [
        (20, header("demo", "api", "pprof", 0), b"", t0, [("cpu", "nanoseconds", "f", 1, 2, 3)])]))

    # HTTP/1.1 requests to the hub's mTLS port
    body = batch("edge-1", [(7, header("demo", "api", "pprof", len(go_cpu)), go_cpu, t0)])
    write("fuzz_tls_http", "replicate", b"POST /v1/replicate HTTP/1.1\r\nHost: hub:9443\r\n"
          b"Content-Type: application/x-protobuf\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    write("fuzz_tls_http", "pipelined", b"GET /v1/replicate/status?edge=edge-1 HTTP/1.1\r\nHost: hub\r\n\r\n"
          b"POST /v1/replicate HTTP/1.1\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\nhello"
          b"GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\nX-Empty:\r\n\r\n"
          b"GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n")
    write("fuzz_tls_http", "refused", b"POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
          b"0\r\n\r\n")
    write("fuzz_tls_http", "conflicting-length", b"POST /x HTTP/1.1\r\nContent-Length: 3\r\n"
          b"content-length: 4\r\n\r\nabcd")


if __name__ == "__main__":
    main()
