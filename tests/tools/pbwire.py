"""pbwire.py — a protobuf wire-format walker for the tests' independent
reference readers (tests/tools/otlp_ref.py, the pprof walk in
tests/integration/test_runtimes.py, batch seqs in test_repl_edge.py), and
the two encoders tests/fuzz/make_seeds.py writes messages with.
Written from the protobuf encoding spec; no generated code, no Watchtower
code.
"""
import struct


def varint(b, i):
    r = s = 0
    while True:
        c = b[i]
        i += 1
        r |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return r, i


def fields(b):
    """[(num, wiretype, value)] of one message; LEN values are bytes."""
    out, i = [], 0
    while i < len(b):
        tag, i = varint(b, i)
        num, wt = tag >> 3, tag & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 1:
            v = struct.unpack_from("<Q", b, i)[0]
            i += 8
        elif wt == 5:
            v = struct.unpack_from("<I", b, i)[0]
            i += 4
        elif wt == 2:
            n, i = varint(b, i)
            v = bytes(b[i:i + n])
            i += n
        else:
            raise ValueError("wire type %d" % wt)
        out.append((num, wt, v))
    return out


def put_varint(n):
    """n (negative: as int64 two's complement) as a base-128 varint."""
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        c = n & 0x7F
        n >>= 7
        if not n:
            out.append(c)
            return bytes(out)
        out.append(c | 0x80)


def put_field(num, v):
    """Field num: an int as VARINT, bytes or str as LEN."""
    if isinstance(v, int):
        return put_varint(num << 3) + put_varint(v)
    if isinstance(v, str):
        v = v.encode()
    return put_varint(num << 3 | 2) + put_varint(len(v)) + v
