/*
 * format.c — format names, content sniffing, and wt_format_decode(), the
 * single entry point from an uploaded body to a wt_profile.
 *
 * Order of work: body limit → decompress (gzip, zstd; bounded by
 * max_decompressed) → detect (when asked for auto, or when "folded" was
 * asked for but the text is perf script) → the format's parser. Formats
 * whose parsers other issues add answer WT_EFORMAT naming the format.
 *
 * A compressed body is first sniffed from its first HEAD_BYTES after
 * decompression (wt_decompress_head): when those cannot start the asked
 * (or any) format — a bomb of zeros, say — the body is refused before it
 * is inflated, so rubbish costs a KiB, not max_decompressed.
 */
#include "format.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "compress.h"
#include "cpuprofile.h"
#include "folded.h"
#include "jfr.h"
#include "otlp.h"
#include "pbwalk.h"
#include "perf_script.h"
#include "pprof.h"
#include "proto/profile.pb-c.h"
#include "speedscope.h"

static const struct {
	const char *name;
	wt_format fmt;
} names[] = {
	{"auto", WT_FMT_AUTO},       {"pprof", WT_FMT_PPROF},
	{"folded", WT_FMT_FOLDED},   {"lines", WT_FMT_FOLDED},
	{"collapsed", WT_FMT_FOLDED}, {"perf", WT_FMT_PERF},
	{"perf_script", WT_FMT_PERF}, {"jfr", WT_FMT_JFR},
	{"otlp", WT_FMT_OTLP},       {"cpuprofile", WT_FMT_CPUPROFILE},
	{"speedscope", WT_FMT_SPEEDSCOPE},
};

int wt_format_parse(const char *name, wt_format *out)
{
	size_t i;

	if (!name || !*name) {
		*out = WT_FMT_AUTO;
		return 0;
	}
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcasecmp(name, names[i].name)) {
			*out = names[i].fmt;
			return 0;
		}
	return WT_EFORMAT;
}

const char *wt_format_name(wt_format f)
{
	switch (f) {
	case WT_FMT_AUTO: return "auto";
	case WT_FMT_PPROF: return "pprof";
	case WT_FMT_FOLDED: return "folded";
	case WT_FMT_PERF: return "perf";
	case WT_FMT_JFR: return "jfr";
	case WT_FMT_OTLP: return "otlp";
	case WT_FMT_CPUPROFILE: return "cpuprofile";
	case WT_FMT_SPEEDSCOPE: return "speedscope";
	}
	return "unknown";
}

void wt_decode_opts_default(wt_decode_opts *o)
{
	memset(o, 0, sizeof(*o));
	wt_limits_default(&o->lim);
	o->hint = NULL;
	o->type = NULL;
	o->unit = NULL;
}

/* ---- detection ------------------------------------------------------------ */
#define SNIFF_MAX (64u * 1024) /* text heuristics look at this much */

/* Does the needle occur in the first n bytes of buf? */
static int has(const uint8_t *buf, size_t n, const char *needle)
{
	return memmem(buf, n, needle, strlen(needle)) != NULL;
}

static int is_json(const uint8_t *buf, size_t len, size_t *start)
{
	size_t i = 0;

	if (len >= 3 && buf[0] == 0xef && buf[1] == 0xbb && buf[2] == 0xbf)
		i = 3; /* UTF-8 BOM */
	while (i < len && isspace(buf[i]))
		i++;
	*start = i;
	return i < len && (buf[i] == '{' || buf[i] == '[');
}

/* The next line [*pos, eol) of buf[0..len); returns 0 at the end. A line
 * cut by the sniff window (no newline, not at the real end) is not
 * returned. */
static int next_line(const uint8_t *buf, size_t len, int complete_end, size_t *pos,
		     size_t *ls, size_t *le)
{
	const uint8_t *nl;

	if (*pos >= len)
		return 0;
	*ls = *pos;
	nl = memchr(buf + *pos, '\n', len - *pos);
	if (!nl) {
		if (!complete_end)
			return 0;
		*le = len;
		*pos = len;
	} else {
		*le = (size_t)(nl - buf);
		*pos = *le + 1;
	}
	while (*le > *ls && (buf[*le - 1] == '\r' || buf[*le - 1] == ' ' || buf[*le - 1] == '\t'))
		(*le)--;
	return 1;
}

static int is_hex(uint8_t c)
{
	return isxdigit(c);
}

/* perf script: `comm pid [cpu] time: [period] event:` header lines, each
 * followed by frames indented by whitespace: `<hex addr> symbol (dso)`. */
static int looks_perf(const uint8_t *buf, size_t len, int complete)
{
	size_t pos = 0, ls, le, hits = 0;
	int prev_header = 0;

	while (next_line(buf, len, complete, &pos, &ls, &le) && hits < 3) {
		if (le == ls || buf[ls] == '#') {
			prev_header = 0;
			continue;
		}
		if (!isspace(buf[ls])) {
			/* header: some token ends with ':' (the event, "cycles:",
			 * or the timestamp "12.345:") */
			size_t i;
			prev_header = 0;
			for (i = ls; i < le; i++)
				if (buf[i] == ':' && (i + 1 == le || isspace(buf[i + 1])))
					prev_header = 1;
			if (!prev_header)
				return 0;
			continue;
		}
		if (prev_header) {
			size_t i = ls;
			while (i < le && isspace(buf[i]))
				i++;
			if (i == le || !is_hex(buf[i]))
				return 0;
			while (i < le && is_hex(buf[i]))
				i++;
			if (i == le || buf[i] != ' ')
				return 0;
			hits++;
		}
		prev_header = 0;
	}
	return hits > 0;
}

/* folded: lines of `stack COUNT` (Austin `# key: value` headers allowed). */
static int looks_folded(const uint8_t *buf, size_t len, int complete)
{
	size_t pos = 0, ls, le, good = 0, bad = 0;

	if (memchr(buf, 0, len))
		return 0;
	while (next_line(buf, len, complete, &pos, &ls, &le) && good + bad < 50) {
		size_t i = le;

		if (le == ls || buf[ls] == '#')
			continue;
		if (i > ls && buf[i - 1] == ']') /* "stack [N]" dialect */
			i--;
		while (i > ls && isdigit(buf[i - 1]))
			i--;
		if (i < le && i > ls && buf[i - 1] == '[' && buf[le - 1] == ']')
			i--;
		if (i < le && i > ls && (buf[i - 1] == ' ' || buf[i - 1] == '\t'))
			good++;
		else
			bad++;
	}
	return good > 0 && bad * 10 <= good;
}

/* pprof: the whole buffer walks cleanly as a Profile and has the fields a
 * real profile has (a string table, and samples or sample types). */
static int check_any(void *ud, wt_pb_walker *w, const ProtobufCMessageDescriptor *d,
		     const uint32_t *counts, size_t offset, wt_err *err)
{
	if (d == &perftools__profiles__profile__descriptor) {
		const ProtobufCFieldDescriptor *st = protobuf_c_message_descriptor_get_field(d, 6);
		*(uint32_t *)ud = counts[st - d->fields];
	}
	return 0;
}

static int looks_pprof(const uint8_t *buf, size_t len)
{
	uint32_t nstrings = 0;
	wt_err e;

	if (len == 0)
		return 0;
	/* First field must be a Profile field with its wire type. */
	{
		size_t off = 0;
		uint64_t tag;
		if (wt_pb_varint(buf, len, &off, &tag) || (tag >> 3) < 1 || (tag >> 3) > 15)
			return 0;
	}
	if (wt_pb_walk(&perftools__profiles__profile__descriptor, buf, len, "pprof", check_any,
		       &nstrings, &e))
		return 0;
	return nstrings > 0;
}

/* OTLP ExportProfilesServiceRequest: a well-formed protobuf whose top-level
 * fields are 1 (resource_profiles) and 2 (dictionary), length-delimited. */
static int looks_otlp_pb(const uint8_t *buf, size_t len)
{
	size_t off = 0;
	int n = 0;

	while (off < len) {
		uint64_t tag, l;
		if (wt_pb_varint(buf, len, &off, &tag) || (tag & 7) != 2 ||
		    ((tag >> 3) != 1 && (tag >> 3) != 2))
			return 0;
		if (wt_pb_varint(buf, len, &off, &l) || l > len - off)
			return 0;
		off += (size_t)l;
		n++;
	}
	return n > 0;
}

/* ---- damaged but recognisable inputs ----------------------------------------- */

/* Where a protobuf message was cut: the top-level field that runs past
 * the end. */
typedef struct pb_cut {
	unsigned field;
	size_t at;       /* byte offset of the field's tag */
	uint64_t length; /* its declared length (0 for a cut varint) */
	size_t left;     /* bytes left after its length */
} pb_cut;

/* A protobuf message cut short: the top-level fields walk cleanly (known
 * pprof Profile field numbers, valid wire types) until a length or a varint
 * runs past the end. Which message it is: an OTLP request has only fields
 * 1 and 2 (resource_profiles, dictionary), length-delimited messages whose
 * own first field is length-delimited too (tag 0x0a or 0x12); pprof starts
 * with a ValueType (sample_type 1 or period_type 11) whose first field is a
 * varint (tag 0x08), or has any other Profile field. */
static wt_format looks_cut_protobuf(const uint8_t *buf, size_t len, pb_cut *cut)
{
	const ProtobufCMessageDescriptor *pd = &perftools__profiles__profile__descriptor;
	size_t off = 0;
	int only12 = 1, is_cut = 0, n = 0;
	uint8_t first_payload = 0;

	while (off < len && !is_cut) {
		uint64_t tag, l, fn;
		size_t at = off;

		if (wt_pb_varint(buf, len, &off, &tag))
			return WT_FMT_AUTO; /* a cut tag: too little to tell */
		fn = tag >> 3;
		if (fn < 1 || fn > 15 || !protobuf_c_message_descriptor_get_field(pd, (unsigned)fn))
			return WT_FMT_AUTO;
		only12 &= (fn == 1 || fn == 2) && (tag & 7) == 2;
		cut->field = (unsigned)fn;
		cut->at = at;
		cut->length = 0;
		switch (tag & 7) {
		case 0:
			if (wt_pb_varint(buf, len, &off, &l)) {
				if (len - at > 11) /* malformed, not cut */
					return WT_FMT_AUTO;
				is_cut = 1;
				cut->left = len - at;
			}
			break;
		case 2:
			if (wt_pb_varint(buf, len, &off, &l))
				return WT_FMT_AUTO;
			if (n == 0)
				first_payload = off < len ? buf[off] : 0;
			if (l > len - off) {
				is_cut = 1;
				cut->length = l;
				cut->left = len - off;
			} else {
				off += (size_t)l;
			}
			break;
		default:
			return WT_FMT_AUTO;
		}
		n++;
	}
	if (!is_cut)
		return WT_FMT_AUTO;
	if (!only12 || first_payload == 0x08)
		return WT_FMT_PPROF;
	if (first_payload == 0x0a || first_payload == 0x12)
		return WT_FMT_OTLP;
	return WT_FMT_AUTO;
}

/* The format a body that detection rejected was meant to be, when its
 * shape says so, so that the caller gets a precise error (byte offset,
 * field) instead of "could not recognise". */
static wt_format detect_damaged(const uint8_t *buf, size_t len, pb_cut *cut)
{
	size_t n = len < SNIFF_MAX ? len : SNIFF_MAX, js;

	if (is_json(buf, n, &js))
		/* a .cpuprofile cut before its "samples" */
		return buf[js] == '{' && !has(buf, n, "\"traceEvents\"") && has(buf, n, "\"nodes\"") &&
		       has(buf, n, "\"callFrame\"") ? WT_FMT_CPUPROFILE : WT_FMT_AUTO;
	return looks_cut_protobuf(buf, len, cut);
}

wt_format wt_format_detect(const uint8_t *buf, size_t len)
{
	size_t n = len < SNIFF_MAX ? len : SNIFF_MAX, js;
	int complete = n == len;

	if (len >= 4 && !memcmp(buf, "FLR\0", 4))
		return WT_FMT_JFR;
	if (is_json(buf, n, &js)) {
		/* Keys may come late in big documents (a cpuprofile's "samples"
		 * follows all its "nodes"): search the whole body. */
		if (has(buf, n, "\"$schema\"") && has(buf, n, "speedscope"))
			return WT_FMT_SPEEDSCOPE;
		if (has(buf, len, "\"resourceProfiles\""))
			return WT_FMT_OTLP;
		if (has(buf, n, "\"traceEvents\"") || buf[js] == '[')
			return WT_FMT_AUTO; /* Chrome trace events: not a .cpuprofile */
		if (has(buf, len, "\"nodes\"") && has(buf, len, "\"samples\"") &&
		    has(buf, len, "\"callFrame\""))
			return WT_FMT_CPUPROFILE;
		/* pre-Node-11 layout: a "head" tree of nodes with functionName */
		if (has(buf, n, "\"head\"") && has(buf, len, "\"samples\"") &&
		    has(buf, n, "\"functionName\"") && has(buf, len, "\"startTime\"") &&
		    !has(buf, n, "\"selfSize\"")) /* .heapprofile has selfSize */
			return WT_FMT_CPUPROFILE;
		return WT_FMT_AUTO;
	}
	if (looks_pprof(buf, len))
		return WT_FMT_PPROF;
	if (looks_perf(buf, n, complete))
		return WT_FMT_PERF;
	if (looks_folded(buf, n, complete))
		return WT_FMT_FOLDED;
	if (looks_otlp_pb(buf, len))
		return WT_FMT_OTLP;
	return WT_FMT_AUTO;
}

/* ---- the first decompressed bytes ---------------------------------------------- */
#define HEAD_BYTES 1024

static int head_json(const uint8_t *h, size_t n)
{
	size_t i = n >= 3 && !memcmp(h, "\xef\xbb\xbf", 3) ? 3 : 0; /* UTF-8 BOM */
	while (i < n && (h[i] == ' ' || h[i] == '\t' || h[i] == '\r' || h[i] == '\n'))
		i++;
	return i == n || h[i] == '{' || h[i] == '[';
}

/* Text: at most one byte in ten a control character other than white space. */
static int head_text(const uint8_t *h, size_t n)
{
	size_t bad = 0;
	for (size_t i = 0; i < n; i++)
		bad += h[i] < 0x20 && h[i] != '\t' && h[i] != '\n' && h[i] != '\r' && h[i] != '\f' &&
		       h[i] != '\v';
	return bad * 10 <= n;
}

/* Protobuf: the first key names a field (number > 0) with a valid wire type. */
static int head_pb(const uint8_t *h, size_t n)
{
	unsigned wt = h[0] & 7;
	return (wt == 0 || wt == 1 || wt == 2 || wt == 5) && (h[0] & 0xf8);
}

static int head_plausible(const uint8_t *h, size_t n, wt_format fmt)
{
	if (n == 0)
		return 1; /* empty: the parser says what is missing */
	switch (fmt) {
	case WT_FMT_PPROF: return head_pb(h, n);
	case WT_FMT_OTLP: return head_pb(h, n) || head_json(h, n);
	case WT_FMT_JFR: return n >= 4 && !memcmp(h, "FLR\0", 4);
	case WT_FMT_CPUPROFILE:
	case WT_FMT_SPEEDSCOPE: return head_json(h, n);
	case WT_FMT_FOLDED:
	case WT_FMT_PERF: return head_text(h, n);
	default:
		return head_pb(h, n) || head_json(h, n) || head_text(h, n) ||
		       (n >= 4 && !memcmp(h, "FLR\0", 4));
	}
}

/* ---- decode ----------------------------------------------------------------- */
int wt_format_decode(const uint8_t *body, size_t len, wt_format fmt,
		     const wt_decode_opts *opts_in, wt_profile **out,
		     wt_format *detected, wt_err *err)
{
	wt_decode_opts opts;
	uint8_t *raw = NULL;
	const uint8_t *bytes = body;
	size_t n = len;
	int rc = 0;

	*out = NULL;
	if (detected)
		*detected = WT_FMT_AUTO;
	if (opts_in)
		opts = *opts_in;
	else
		wt_decode_opts_default(&opts);
	if (len > opts.lim.max_body)
		return wt_err_set(err, WT_ELIMIT, "body of %zu bytes exceeds the limit of %zu",
				  len, opts.lim.max_body);
	if (wt_is_gzip(body, len) || wt_is_zstd(body, len)) {
		uint8_t head[HEAD_BYTES];
		size_t hn;
		if ((rc = wt_decompress_head(body, len, head, sizeof(head), &hn, err)))
			return wt_err_prefix(err, "%s", wt_format_name(fmt));
		if (!head_plausible(head, hn, fmt))
			return wt_err_set(err, WT_EFORMAT, "%s: the first %zu bytes after decompression %s; "
					  "nothing more was decompressed", wt_format_name(fmt), hn,
					  fmt == WT_FMT_AUTO ? "start no supported format (protobuf, JSON, "
							       "JFR or text)"
							     : "cannot start this format");
	}
	if (wt_is_gzip(body, len)) {
		if ((rc = wt_gunzip(body, len, opts.lim.max_decompressed, &raw, &n, err)))
			return wt_err_prefix(err, "%s", wt_format_name(fmt));
		bytes = raw;
	} else if (wt_is_zstd(body, len)) {
		if ((rc = wt_zstd_decompress(body, len, opts.lim.max_decompressed, &raw, &n, err)))
			return wt_err_prefix(err, "%s", wt_format_name(fmt));
		bytes = raw;
	}
	if (fmt == WT_FMT_AUTO) {
		pb_cut cut;

		fmt = wt_format_detect(bytes, n);
		if (fmt == WT_FMT_AUTO && (fmt = detect_damaged(bytes, n, &cut)) == WT_FMT_OTLP) {
			/* the OTLP decoder would first guess a layout from what is
			 * left; where the request ends is the useful part */
			rc = wt_err_set(err, WT_EINVAL,
					"otlp: request cut short: %s (field %u) at byte %zu: length %llu "
					"runs past the end (%zu bytes left)",
					cut.field == 1 ? "resource_profiles" : "dictionary", cut.field,
					cut.at, (unsigned long long)cut.length, cut.left);
			goto cleanup;
		}
		if (fmt == WT_FMT_AUTO) {
			rc = wt_err_set(err, WT_EFORMAT,
					"auto: could not recognise the format of %zu bytes "
					"(give format= pprof, folded, perf, jfr, otlp, cpuprofile "
					"or speedscope)", n);
			goto cleanup;
		}
	} else if (fmt == WT_FMT_FOLDED && looks_perf(bytes, n < SNIFF_MAX ? n : SNIFF_MAX,
						     n <= SNIFF_MAX)) {
		fmt = WT_FMT_PERF; /* format=folded given perf script text (docs/formats.md) */
	}
	if (detected)
		*detected = fmt;
	switch (fmt) {
	case WT_FMT_PPROF:
		rc = wt_pprof_decode(bytes, n, &opts.lim, opts.hint, out, err);
		break;
	case WT_FMT_FOLDED: {
		wt_folded_opts fo;

		memset(&fo, 0, sizeof(fo));
		fo.lim = &opts.lim;
		fo.type = opts.type;
		fo.unit = opts.unit;
		fo.sample_rate = opts.sample_rate;
		fo.time_ns = opts.time_ns;
		rc = wt_folded_decode(bytes, n, &fo, out, err);
		break;
	}
	case WT_FMT_JFR:
		rc = wt_jfr_decode(bytes, n, &opts.lim, opts.hint, out, err);
		break;
	case WT_FMT_PERF:
		rc = wt_perf_script_decode(bytes, n, &opts.lim, opts.time_ns, out, err);
		break;
	case WT_FMT_CPUPROFILE:
		rc = wt_cpuprofile_decode(bytes, n, &opts.lim, opts.time_ns, out, err);
		break;
	case WT_FMT_SPEEDSCOPE:
		rc = wt_speedscope_decode(bytes, n, &opts.lim, opts.time_ns, out, err);
		break;
	case WT_FMT_OTLP: /* all services merged, each sample labelled service=… */
		rc = wt_otlp_decode_merged(bytes, n, &opts.lim, out, err);
		break;
	default:
		rc = wt_err_set(err, WT_EFORMAT, "format %s is not supported yet (%zu bytes)",
				wt_format_name(fmt), n);
		break;
	}
cleanup:
	free(raw);
	return rc;
}
