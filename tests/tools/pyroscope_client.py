#!/usr/bin/python3
"""pyroscope_client.py — a Connect-protocol client of Pyroscope's
QuerierService for the tests, built from the .proto files in proto/ with
Debian's protoc (--python_out) and python3-protobuf (run it with
/usr/bin/python3, where python3-protobuf lives). Independent of the hub's
C code: messages are encoded and decoded by Google's protobuf runtime
(binary, or json_format for application/json).

    pyroscope_client.py URL < calls.json > answers.json
calls: [{"method": "SelectMergeStacktraces", "request": {...proto3 JSON...},
         "enc": "proto"|"json", "headers": {...}}]
answers: [{"status": 200, "body": {...proto3 JSON, proto field names...}}
          or {"status": 4xx, "error": {...Connect error...}}]
"""
import importlib
import json
import os
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PROTOS = ["profile.proto", "pyroscope_types.proto", "pyroscope_querier.proto"]

RESPONSES = {
    "ProfileTypes": "ProfileTypesResponse",
    "LabelNames": "types.LabelNamesResponse",
    "LabelValues": "types.LabelValuesResponse",
    "Series": "SeriesResponse",
    "SelectMergeStacktraces": "SelectMergeStacktracesResponse",
    "SelectMergeSpanProfile": "SelectMergeSpanProfileResponse",
    "SelectMergeProfile": "pprof.Profile",
    "SelectSeries": "SelectSeriesResponse",
    "Diff": "DiffResponse",
}
REQUESTS = {
    "ProfileTypes": "ProfileTypesRequest",
    "LabelNames": "types.LabelNamesRequest",
    "LabelValues": "types.LabelValuesRequest",
    "Series": "SeriesRequest",
    "SelectMergeStacktraces": "SelectMergeStacktracesRequest",
    "SelectMergeSpanProfile": "SelectMergeSpanProfileRequest",
    "SelectMergeProfile": "SelectMergeProfileRequest",
    "SelectSeries": "SelectSeriesRequest",
    "Diff": "DiffRequest",
}


def load_modules(out):
    subprocess.run(["protoc", "--proto_path=" + os.path.join(ROOT, "proto"), "--python_out=" + out]
                   + [os.path.join(ROOT, "proto", p) for p in PROTOS], check=True)
    sys.path.insert(0, out)
    return {"pprof": importlib.import_module("profile_pb2"),
            "types": importlib.import_module("pyroscope_types_pb2"),
            "querier": importlib.import_module("pyroscope_querier_pb2")}


def msg_class(mods, name):
    if "." in name:
        mod, cls = name.split(".")
        return getattr(mods[mod], cls)
    return getattr(mods["querier"], name)


def main():
    from google.protobuf import json_format
    url = sys.argv[1]
    calls = json.load(sys.stdin)
    with tempfile.TemporaryDirectory() as d:
        mods = load_modules(d)
        answers = []
        for c in calls:
            req = json_format.ParseDict(c.get("request", {}), msg_class(mods, REQUESTS[c["method"]])())
            enc = c.get("enc", "proto")
            if "raw" in c:
                body = c["raw"].encode()
            elif enc == "json":
                body = json_format.MessageToJson(req).encode()
            else:
                body = req.SerializeToString()
            h = {"Content-Type": "application/" + enc, "Connect-Protocol-Version": "1"}
            h.update(c.get("headers", {}))
            path = c.get("path", "/querier.v1.QuerierService/" + c["method"])
            r = urllib.request.Request(url + path, data=body, headers=h, method="POST")
            try:
                with urllib.request.urlopen(r, timeout=60) as resp:
                    data, status, ctype = resp.read(), resp.status, resp.headers.get("Content-Type")
            except urllib.error.HTTPError as e:
                answers.append({"status": e.code, "error": json.loads(e.read() or b"{}")})
                continue
            m = msg_class(mods, RESPONSES[c["method"]])()
            if ctype.startswith("application/json"):
                json_format.Parse(data, m)
            else:
                m.ParseFromString(data)
            answers.append({"status": status, "content_type": ctype,
                            "body": json_format.MessageToDict(m, preserving_proto_field_name=True)})
        json.dump(answers, sys.stdout)


if __name__ == "__main__":
    main()
