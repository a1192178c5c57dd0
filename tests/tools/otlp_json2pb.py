#!/usr/bin/python3
"""otlp_json2pb.py — re-encode an OTLP/JSON (protojson) profiles request as
binary protobuf with Google's own protobuf library, so that real captures
only published as JSON (the corpus's opentelemetry-proto 1.10.0 one) can
feed the binary decoder. The schema is compiled from proto/otlp_*.proto
with protoc at run time.

usage: /usr/bin/python3 otlp_json2pb.py IN.json OUT.pb
Needs Debian's protobuf-compiler and python3-protobuf (appliance/install-deps).
"""
import os
import subprocess
import sys
import tempfile

root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
with tempfile.TemporaryDirectory() as tmp:
    protos = [os.path.join(root, "proto", p) for p in
              ("otlp_common.proto", "otlp_resource.proto", "otlp_profiles.proto",
               "otlp_profiles_service.proto")]
    subprocess.run(["protoc", "-I" + os.path.join(root, "proto"), "--python_out=" + tmp] + protos,
                   check=True)
    sys.path.insert(0, tmp)
    from google.protobuf import json_format  # noqa: E402
    import otlp_profiles_service_pb2 as svc  # noqa: E402

    req = svc.ExportProfilesServiceRequest()
    with open(sys.argv[1]) as f:
        json_format.Parse(f.read(), req)
    with open(sys.argv[2], "wb") as f:
        f.write(req.SerializeToString())
