// delta.go — per-period deltas of the Go runtime's cumulative profiles.
//
// The runtime's heap (alloc_objects, alloc_space), mutex and block
// (contentions, delay) profiles count everything since the process started.
// Uploading them as-is every period would make a time range's total grow
// with the number of uploads, so the profiler keeps the previous snapshot's
// values per stack and uploads the difference. inuse_objects/inuse_space are
// point-in-time values and stay as they are.
//
// This works on the encoded profile (perftools.profiles.Profile) with a
// minimal protobuf walker instead of a full decoder: every field except
// `sample` is copied verbatim; samples are keyed by their stack's
// instruction addresses plus their raw labels (location ids are renumbered
// on every write, addresses are stable within a process) and re-encoded
// with the new values. Samples whose values all become zero are dropped.

package profiler

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// maxProfileBytes bounds a decompressed runtime profile (a runtime profile
// this large would itself be a bug; refuse rather than allocate without bound).
const maxProfileBytes = 256 << 20

func needsDelta(t ProfileType) bool {
	return t == Heap || t == Mutex || t == Block
}

// cumulative sample type names in Go's runtime profiles
var cumulativeTypes = map[string]bool{
	"alloc_objects": true, "alloc_space": true, "contentions": true, "delay": true,
}

type deltaState struct {
	prev map[string][]int64 // stack key -> values of the previous snapshot
}

type pbField struct {
	num  uint64
	wire uint64
	val  uint64 // varint / fixed value
	data []byte // length-delimited payload
	raw  []byte // the whole field including its tag
}

var errTrunc = errors.New("truncated protobuf")

// nextField reads one field from b; returns the field and the rest.
func nextField(b []byte) (pbField, []byte, error) {
	start := b
	tag, n := binary.Uvarint(b)
	if n <= 0 {
		return pbField{}, nil, errTrunc
	}
	b = b[n:]
	f := pbField{num: tag >> 3, wire: tag & 7}
	switch f.wire {
	case 0:
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return f, nil, errTrunc
		}
		f.val, b = v, b[n:]
	case 1:
		if len(b) < 8 {
			return f, nil, errTrunc
		}
		f.val, b = binary.LittleEndian.Uint64(b), b[8:]
	case 2:
		l, n := binary.Uvarint(b)
		if n <= 0 || uint64(len(b)-n) < l {
			return f, nil, errTrunc
		}
		f.data, b = b[n:n+int(l)], b[n+int(l):]
	case 5:
		if len(b) < 4 {
			return f, nil, errTrunc
		}
		f.val, b = uint64(binary.LittleEndian.Uint32(b)), b[4:]
	default:
		return f, nil, fmt.Errorf("unsupported wire type %d", f.wire)
	}
	f.raw = start[:len(start)-len(b)]
	return f, b, nil
}

// varints returns the values of a repeated integer field occurrence
// (packed or not).
func (f pbField) varints(out []uint64) ([]uint64, error) {
	if f.wire == 0 {
		return append(out, f.val), nil
	}
	if f.wire != 2 {
		return out, fmt.Errorf("field %d: wire type %d for an integer", f.num, f.wire)
	}
	b := f.data
	for len(b) > 0 {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return out, errTrunc
		}
		out = append(out, v)
		b = b[n:]
	}
	return out, nil
}

func appendTag(b []byte, num, wire uint64) []byte { return binary.AppendUvarint(b, num<<3|wire) }

func appendBytesField(b []byte, num uint64, data []byte) []byte {
	b = appendTag(b, num, 2)
	b = binary.AppendUvarint(b, uint64(len(data)))
	return append(b, data...)
}

type rawSample struct {
	key    string
	locs   [][]byte // raw location_id field occurrences
	labels [][]byte // raw label field occurrences
	values []int64
}

// apply turns the gzipped cumulative profile data into a gzipped delta
// profile; n is the number of samples kept.
func (d *deltaState) apply(data []byte) (out []byte, n int, err error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, 0, fmt.Errorf("gunzip: %w", err)
	}
	plain, err := io.ReadAll(io.LimitReader(zr, maxProfileBytes+1))
	if err != nil {
		return nil, 0, fmt.Errorf("gunzip: %w", err)
	}
	if len(plain) > maxProfileBytes {
		return nil, 0, fmt.Errorf("profile over %d bytes", maxProfileBytes)
	}
	res, n, err := d.applyPlain(plain)
	if err != nil {
		return nil, 0, err
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(res)
	if err := zw.Close(); err != nil {
		return nil, 0, err
	}
	return buf.Bytes(), n, nil
}

func (d *deltaState) applyPlain(plain []byte) ([]byte, int, error) {
	// pass 1: string table, sample types, location addresses
	var strs []string
	var typeIdx [][2]uint64 // (type, unit) string indexes
	addr := map[uint64]uint64{}
	for b := plain; len(b) > 0; {
		f, rest, err := nextField(b)
		if err != nil {
			return nil, 0, fmt.Errorf("profile: %w", err)
		}
		b = rest
		switch {
		case f.num == 6 && f.wire == 2:
			strs = append(strs, string(f.data))
		case f.num == 1 && f.wire == 2: // sample_type ValueType
			var vt [2]uint64
			for m := f.data; len(m) > 0; {
				g, r, err := nextField(m)
				if err != nil {
					return nil, 0, fmt.Errorf("profile.sample_type: %w", err)
				}
				m = r
				if (g.num == 1 || g.num == 2) && g.wire == 0 {
					vt[g.num-1] = g.val
				}
			}
			typeIdx = append(typeIdx, vt)
		case f.num == 4 && f.wire == 2: // location: id, address
			var id, a uint64
			for m := f.data; len(m) > 0; {
				g, r, err := nextField(m)
				if err != nil {
					return nil, 0, fmt.Errorf("profile.location: %w", err)
				}
				m = r
				if g.wire == 0 && g.num == 1 {
					id = g.val
				} else if g.wire == 0 && g.num == 3 {
					a = g.val
				}
			}
			addr[id] = a
		}
	}
	cum := make([]bool, len(typeIdx))
	for i, vt := range typeIdx {
		if vt[0] < uint64(len(strs)) {
			cum[i] = cumulativeTypes[strs[vt[0]]]
		}
	}

	// pass 2: samples, merged by key in first-seen order
	cur := map[string]*rawSample{}
	var order []*rawSample
	out := make([]byte, 0, len(plain))
	var ids []uint64
	for b := plain; len(b) > 0; {
		f, rest, _ := nextField(b) // validated in pass 1
		b = rest
		if f.num != 2 || f.wire != 2 {
			out = append(out, f.raw...)
			continue
		}
		s := &rawSample{}
		var key []byte
		var vals []uint64
		for m := f.data; len(m) > 0; {
			g, r, err := nextField(m)
			if err != nil {
				return nil, 0, fmt.Errorf("profile.sample: %w", err)
			}
			m = r
			switch g.num {
			case 1:
				if ids, err = g.varints(ids[:0]); err != nil {
					return nil, 0, fmt.Errorf("profile.sample.location_id: %w", err)
				}
				for _, id := range ids {
					a, ok := addr[id]
					if !ok || a == 0 {
						a = id | 1<<63 // no address: fall back to the id
					}
					key = binary.AppendUvarint(key, a)
				}
				s.locs = append(s.locs, g.raw)
			case 2:
				if vals, err = g.varints(vals); err != nil {
					return nil, 0, fmt.Errorf("profile.sample.value: %w", err)
				}
			case 3:
				s.labels = append(s.labels, g.raw)
			}
		}
		key = append(key, 0xff)
		for _, l := range s.labels {
			key = append(key, l...)
		}
		k := string(key)
		if x := cur[k]; x != nil {
			for i := range vals {
				if i < len(x.values) {
					x.values[i] += int64(vals[i])
				}
			}
			continue
		}
		s.key = k
		s.values = make([]int64, len(vals))
		for i, v := range vals {
			s.values[i] = int64(v)
		}
		cur[k] = s
		order = append(order, s)
	}

	next := make(map[string][]int64, len(order))
	n := 0
	var sb, vb []byte
	for _, s := range order {
		next[s.key] = append([]int64(nil), s.values...)
		prev := d.prev[s.key]
		nonzero := false
		for i := range s.values {
			if i < len(cum) && cum[i] {
				if i < len(prev) {
					s.values[i] -= prev[i]
				}
				if s.values[i] < 0 {
					s.values[i] = 0
				}
			}
			if s.values[i] != 0 {
				nonzero = true
			}
		}
		if !nonzero {
			continue
		}
		n++
		sb = sb[:0]
		for _, l := range s.locs {
			sb = append(sb, l...)
		}
		vb = vb[:0]
		for _, v := range s.values {
			vb = binary.AppendUvarint(vb, uint64(v))
		}
		sb = appendBytesField(sb, 2, vb)
		for _, l := range s.labels {
			sb = append(sb, l...)
		}
		out = appendBytesField(out, 2, sb)
	}
	d.prev = next
	return out, n, nil
}
