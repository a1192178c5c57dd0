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


# ---- encoding (tests that build messages by hand, e.g. replication batches) ----

def enc_varint(v):
    out = bytearray()
    while True:
        c = v & 0x7F
        v >>= 7
        if v:
            out.append(c | 0x80)
        else:
            out.append(c)
            return bytes(out)


def f_varint(num, v):
    """A VARINT field (negative int64 as its two's complement)."""
    if v < 0:
        v += 1 << 64
    return enc_varint(num << 3) + enc_varint(v)


def f_bytes(num, b):
    """A LEN field (bytes, str as UTF-8, or an encoded message)."""
    if isinstance(b, str):
        b = b.encode()
    return enc_varint(num << 3 | 2) + enc_varint(len(b)) + b


def put_varint(n):
    """n (negative: as int64 two's complement) as a base-128 varint."""
    return enc_varint(n & ((1 << 64) - 1))


def put_field(num, v):
    """Field num: an int as VARINT, bytes or str as LEN."""
    return f_varint(num, v) if isinstance(v, int) else f_bytes(num, v)
