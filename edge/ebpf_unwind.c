/*
 * ebpf_unwind.c — unwind tables from DWARF call frame information (see
 * ebpf_unwind.h): reads the CIEs and FDEs of .eh_frame and .debug_frame,
 * interprets each FDE's CFA program and keeps, per pc where the rule
 * changes, what an unwinder needs on x86-64: the CFA rule (rsp+N, rbp+N,
 * the PLT expression, signal frame, outermost frame), where rbp was saved,
 * and whether the return address is at CFA-8. Everything else (other
 * registers, other expressions) is dropped or marked WT_CFA_EXPR, which the
 * unwinder answers with frame pointers.
 *
 * The input is untrusted (any binary on the machine): every read is bounds
 * checked, loops are bounded by the section size, the row count by
 * EDGE_UNWIND_MAX_ROWS, the remember-state stack by REMEMBER_MAX.
 */
#include "ebpf_unwind.h"
#include "clock.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "ebpf_procs.h"
#include "fsdir.h"
#include "log.h"

#define DW_RBP 6
#define DW_RSP 7
#define DW_RA 16
#define REMEMBER_MAX 16
#define CIE_CACHE 64
#define CACHE_MAGIC "WTU3"

/* ---- bounded reader ---------------------------------------------------------- */

typedef struct rd {
	const uint8_t *p, *end;
	int bad;
} rd;

static uint64_t rd_u(rd *r, int n)
{
	uint64_t v = 0;
	if (r->end - r->p < n) {
		r->bad = 1;
		r->p = r->end;
		return 0;
	}
	for (int i = 0; i < n; i++)
		v |= (uint64_t)r->p[i] << (8 * i);
	r->p += n;
	return v;
}

static uint64_t rd_uleb(rd *r)
{
	uint64_t v = 0;
	for (int shift = 0; r->p < r->end; shift += 7) {
		uint8_t b = *r->p++;
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
	}
	r->bad = 1;
	return 0;
}

static int64_t rd_sleb(rd *r)
{
	int64_t v = 0;
	int shift = 0;
	while (r->p < r->end) {
		uint8_t b = *r->p++;
		if (shift < 64)
			v |= (int64_t)((uint64_t)(b & 0x7f) << shift);
		shift += 7;
		if (!(b & 0x80)) {
			if (shift < 64 && (b & 0x40))
				v |= -((int64_t)1 << shift);
			return v;
		}
	}
	r->bad = 1;
	return 0;
}

/* DW_EH_PE_* pointer; pos is the field's address (pcrel). 0 = read,
 * -1 = omitted or an encoding not used for code addresses here */
static int rd_ptr(rd *r, uint8_t enc, uint64_t pos, int addr_size, uint64_t *out)
{
	uint64_t v;
	if (enc == 0xff)
		return -1;
	switch (enc & 0x0f) {
	case 0x00: v = rd_u(r, addr_size); break;
	case 0x01: v = rd_uleb(r); break;
	case 0x02: v = rd_u(r, 2); break;
	case 0x03: v = rd_u(r, 4); break;
	case 0x04: v = rd_u(r, 8); break;
	case 0x09: v = (uint64_t)rd_sleb(r); break;
	case 0x0a: v = (uint64_t)(int64_t)(int16_t)rd_u(r, 2); break;
	case 0x0b: v = (uint64_t)(int64_t)(int32_t)rd_u(r, 4); break;
	case 0x0c: v = rd_u(r, 8); break;
	default: r->bad = 1; return -1;
	}
	switch (enc & 0x70) {
	case 0x00: break;
	case 0x10: v += pos; break;
	default: return -1; /* textrel/datarel/funcrel/aligned: not used for x86-64 code */
	}
	if (enc & 0x80)
		return -1; /* indirect */
	*out = v;
	return r->bad ? -1 : 0;
}

/* ---- CFA state ---------------------------------------------------------------- */

enum { R_SAME = 0, R_UNDEF, R_OFFSET, R_OTHER };
enum { C_REG = 0, C_PLT, C_EXPR };

typedef struct rule {
	uint8_t type;
	int64_t off;
} rule;

typedef struct state {
	uint8_t cfa;
	uint8_t plt_thr;
	uint64_t cfa_reg;
	int64_t cfa_off;
	rule rbp, ra;
} state;

typedef struct cie {
	uint64_t off; /* section offset + 1 (0 = empty slot) */
	uint64_t code_align;
	int64_t data_align;
	uint64_t ra_reg;
	uint8_t fde_enc;
	uint8_t addr_size;
	int has_z, signal;
	const uint8_t *ins, *ins_end;
} cie;

typedef struct raw_row {
	uint64_t pc;
	uint32_t seq;
	uint8_t prio; /* 2 .eh_frame, 1 .debug_frame, 0 end of an FDE */
	struct wt_unwind_row r;
} raw_row;

typedef struct builder {
	raw_row *rows;
	size_t n, cap;
	size_t fdes;
	size_t coarse; /* rules the 8-byte row cannot hold (see bpf/unwind.h) */
	int full;
} builder;

static void set_rule(state *s, uint64_t reg, uint8_t type, int64_t off)
{
	rule *x = reg == DW_RBP ? &s->rbp : reg == DW_RA ? &s->ra : NULL;
	if (x) {
		x->type = type;
		x->off = off;
	}
}

static void restore_rule(state *s, const state *init, uint64_t reg)
{
	if (reg == DW_RBP)
		s->rbp = init->rbp;
	else if (reg == DW_RA)
		s->ra = init->ra;
}

/* The PLT entries' CFA: rsp + N + ((rip & 15) >= K ? 8 : 0), written by
 * binutils as breg7 N; breg16 0; lit15; and; litK; ge; lit3; shl; plus. */
static int plt_expr(const uint8_t *b, uint64_t len, int64_t *off, uint8_t *thr)
{
	if (len != 11 || b[0] != 0x77 || (b[1] & 0xc0) || b[2] != 0x80 || b[3] != 0x00 || b[4] != 0x3f ||
	    b[5] != 0x1a || b[6] < 0x30 || b[6] > 0x4f || b[7] != 0x2a || b[8] != 0x33 || b[9] != 0x24 || b[10] != 0x22)
		return 0;
	*off = b[1];
	*thr = (uint8_t)(b[6] - 0x30);
	return 1;
}

static int row_push(builder *b, uint64_t pc, uint8_t prio, const struct wt_unwind_row *r)
{
	if (b->n == b->cap) {
		if (b->cap >= EDGE_UNWIND_MAX_ROWS) {
			b->full = 1;
			return WT_ELIMIT;
		}
		size_t nc = b->cap ? b->cap * 2 : 4096;
		raw_row *nr = realloc(b->rows, nc * sizeof(*nr));
		if (!nr)
			return WT_ENOMEM;
		b->rows = nr;
		b->cap = nc;
	}
	raw_row *x = &b->rows[b->n];
	x->pc = pc;
	x->seq = (uint32_t)b->n;
	x->prio = prio;
	x->r = *r;
	b->n++;
	return 0;
}

/* the CFA offset in the row's units of 8 bytes, or -1 where it does not fit */
static int32_t cfa_off8(int64_t off)
{
	return off >= 0 && off % 8 == 0 && off / 8 <= UINT16_MAX ? (int32_t)(off / 8) : -1;
}

static int emit(builder *b, const cie *c, const state *s, uint64_t pc, uint8_t prio)
{
	struct wt_unwind_row r;
	uint8_t cfa_type, rbp_type = WT_RBP_SAME;
	int32_t off8 = 0;
	memset(&r, 0, sizeof(r));
	if (pc > UINT32_MAX)
		return 0;
	r.pc = (uint32_t)pc;
	if (c->signal)
		cfa_type = WT_CFA_SIGNAL;
	else if (s->ra.type == R_UNDEF)
		cfa_type = WT_CFA_END;
	else if (s->ra.type != R_OFFSET || s->ra.off != -8)
		cfa_type = WT_CFA_EXPR;
	else if (s->cfa == C_PLT && (off8 = cfa_off8(s->cfa_off)) >= 0 && s->plt_thr <= 15) {
		cfa_type = WT_CFA_PLT;
		r.cfa_off8 = (uint16_t)off8;
		r.rbp_off8 = (int8_t)s->plt_thr;
	} else if (s->cfa == C_REG && (s->cfa_reg == DW_RSP || s->cfa_reg == DW_RBP) &&
		   (off8 = cfa_off8(s->cfa_off)) >= 0) {
		cfa_type = s->cfa_reg == DW_RSP ? WT_CFA_RSP : WT_CFA_RBP;
		r.cfa_off8 = (uint16_t)off8;
	} else {
		/* another expression, or an offset the row cannot hold (counted) */
		b->coarse += s->cfa == C_PLT || (s->cfa == C_REG && (s->cfa_reg == DW_RSP || s->cfa_reg == DW_RBP));
		cfa_type = WT_CFA_EXPR;
	}
	if (cfa_type != WT_CFA_PLT) {
		if (s->rbp.type == R_SAME)
			rbp_type = WT_RBP_SAME;
		else if (s->rbp.type == R_OFFSET && s->rbp.off % 8 == 0 && s->rbp.off / 8 >= INT8_MIN &&
			 s->rbp.off / 8 <= INT8_MAX) {
			rbp_type = WT_RBP_CFA;
			r.rbp_off8 = (int8_t)(s->rbp.off / 8);
		} else {
			b->coarse += s->rbp.type == R_OFFSET;
			rbp_type = WT_RBP_OTHER;
		}
	}
	r.types = (uint8_t)(cfa_type | rbp_type << 4);
	return row_push(b, pc, prio, &r);
}

/* Run a CFA program from state s at loc (s is updated). With b, rows are
 * emitted at every advance while loc < end; without, only the state is
 * computed (a CIE's initial instructions). */
static int run_cfa(builder *b, const cie *c, const uint8_t *p, const uint8_t *pend, state *s, const state *init,
		   uint64_t loc, uint64_t end, uint8_t prio)
{
	rd r = {p, pend, 0};
	state stack[REMEMBER_MAX];
	int depth = 0, rc = 0;

	while (r.p < r.end && !r.bad && rc == 0) {
		uint8_t op = *r.p++;
		uint64_t delta = 0, reg, reg2;
		int advance = 0;
		switch (op & 0xc0) {
		case 0x40:
			delta = (op & 0x3f) * c->code_align;
			advance = 1;
			break;
		case 0x80:
			set_rule(s, op & 0x3f, R_OFFSET, (int64_t)rd_uleb(&r) * c->data_align);
			continue;
		case 0xc0:
			if (init)
				restore_rule(s, init, op & 0x3f);
			continue;
		default:
			break;
		}
		if (!advance) {
			switch (op) {
			case 0x00: /* nop */
				break;
			case 0x01: { /* set_loc */
				uint64_t to;
				if (rd_ptr(&r, c->fde_enc, 0, c->addr_size, &to) || to < loc)
					return 0;
				delta = to - loc;
				advance = 1;
				break;
			}
			case 0x02: delta = rd_u(&r, 1) * c->code_align; advance = 1; break;
			case 0x03: delta = rd_u(&r, 2) * c->code_align; advance = 1; break;
			case 0x04: delta = rd_u(&r, 4) * c->code_align; advance = 1; break;
			case 0x05:
				reg = rd_uleb(&r);
				set_rule(s, reg, R_OFFSET, (int64_t)rd_uleb(&r) * c->data_align);
				break;
			case 0x06:
				reg = rd_uleb(&r);
				if (init)
					restore_rule(s, init, reg);
				break;
			case 0x07: set_rule(s, rd_uleb(&r), R_UNDEF, 0); break;
			case 0x08: set_rule(s, rd_uleb(&r), R_SAME, 0); break;
			case 0x09:
				reg = rd_uleb(&r);
				reg2 = rd_uleb(&r);
				set_rule(s, reg, R_OTHER, (int64_t)reg2);
				break;
			case 0x0a:
				if (depth < REMEMBER_MAX)
					stack[depth] = *s;
				depth++;
				break;
			case 0x0b:
				if (depth > 0) {
					depth--;
					/* the CFA too, as GCC's unwinder and readelf do */
					if (depth < REMEMBER_MAX)
						*s = stack[depth];
				}
				break;
			case 0x0c:
				s->cfa = C_REG;
				s->cfa_reg = rd_uleb(&r);
				s->cfa_off = (int64_t)rd_uleb(&r);
				break;
			case 0x0d:
				s->cfa_reg = rd_uleb(&r);
				if (s->cfa != C_REG) {
					s->cfa = C_REG;
					s->cfa_off = 0;
				}
				break;
			case 0x0e: s->cfa_off = (int64_t)rd_uleb(&r); break;
			case 0x0f: {
				uint64_t len = rd_uleb(&r);
				if ((uint64_t)(r.end - r.p) < len) {
					r.bad = 1;
					break;
				}
				s->cfa = plt_expr(r.p, len, &s->cfa_off, &s->plt_thr) ? C_PLT : C_EXPR;
				r.p += len;
				break;
			}
			case 0x10:
			case 0x16: {
				reg = rd_uleb(&r);
				uint64_t len = rd_uleb(&r);
				if ((uint64_t)(r.end - r.p) < len) {
					r.bad = 1;
					break;
				}
				r.p += len;
				set_rule(s, reg, R_OTHER, 0);
				break;
			}
			case 0x11:
				reg = rd_uleb(&r);
				set_rule(s, reg, R_OFFSET, rd_sleb(&r) * c->data_align);
				break;
			case 0x12:
				s->cfa = C_REG;
				s->cfa_reg = rd_uleb(&r);
				s->cfa_off = rd_sleb(&r) * c->data_align;
				break;
			case 0x13: s->cfa_off = rd_sleb(&r) * c->data_align; break;
			case 0x14:
				reg = rd_uleb(&r);
				rd_uleb(&r);
				set_rule(s, reg, R_OTHER, 0);
				break;
			case 0x15:
				reg = rd_uleb(&r);
				rd_sleb(&r);
				set_rule(s, reg, R_OTHER, 0);
				break;
			case 0x2e: rd_uleb(&r); break; /* GNU_args_size */
			case 0x2f:
				reg = rd_uleb(&r);
				set_rule(s, reg, R_OFFSET, -(int64_t)rd_uleb(&r) * c->data_align);
				break;
			default:
				return 0; /* unknown opcode: the rest of this FDE is not read */
			}
		}
		if (advance && b) {
			if (loc >= end)
				return 0;
			rc = emit(b, c, s, loc, prio);
			loc += delta;
		}
	}
	if (b && rc == 0 && loc < end)
		rc = emit(b, c, s, loc, prio);
	return rc;
}

/* ---- sections ------------------------------------------------------------------ */

typedef struct section {
	const uint8_t *data;
	uint64_t size, addr;
	int eh; /* .eh_frame (else .debug_frame) */
} section;

static int parse_cie(const section *sec, uint64_t off, cie *c)
{
	rd r = {sec->data + off, sec->data + sec->size, 0};
	uint64_t len = rd_u(&r, 4);
	int wide = 0;
	memset(c, 0, sizeof(*c));
	if (len == 0xffffffffu) {
		len = rd_u(&r, 8);
		wide = 1;
	}
	if (r.bad || len > (uint64_t)(r.end - r.p))
		return -1;
	const uint8_t *end = r.p + len;
	r.end = end;
	uint64_t id = rd_u(&r, wide ? 8 : 4);
	if (sec->eh ? id != 0 : id != (wide ? UINT64_MAX : 0xffffffffu))
		return -1;
	uint8_t version = (uint8_t)rd_u(&r, 1);
	const char *aug = (const char *)r.p;
	size_t alen = strnlen(aug, (size_t)(r.end - r.p));
	if (r.p + alen >= r.end)
		return -1;
	r.p += alen + 1;
	c->addr_size = 8;
	if (strstr(aug, "eh"))
		rd_u(&r, 8);
	if (version >= 4) {
		c->addr_size = (uint8_t)rd_u(&r, 1);
		rd_u(&r, 1); /* segment selector size */
		if (c->addr_size != 4 && c->addr_size != 8)
			return -1;
	}
	c->code_align = rd_uleb(&r);
	c->data_align = rd_sleb(&r);
	c->ra_reg = version == 1 ? rd_u(&r, 1) : rd_uleb(&r);
	c->fde_enc = 0x00; /* absptr unless 'R' says otherwise */
	if (aug[0] == 'z') {
		uint64_t zl = rd_uleb(&r);
		if (r.bad || zl > (uint64_t)(r.end - r.p))
			return -1;
		const uint8_t *zend = r.p + zl;
		c->has_z = 1;
		for (const char *a = aug + 1; *a && r.p <= zend; a++) {
			uint64_t ignored;
			if (*a == 'L')
				rd_u(&r, 1);
			else if (*a == 'R')
				c->fde_enc = (uint8_t)rd_u(&r, 1);
			else if (*a == 'P') {
				uint8_t enc = (uint8_t)rd_u(&r, 1);
				/* indirect personalities are fine to skip: only the size matters */
				rd_ptr(&r, enc & 0x7f, 0, 8, &ignored);
			} else if (*a == 'S')
				c->signal = 1;
			else if (*a != 'B' && *a != 'G')
				break;
		}
		r.p = zend;
	} else if (aug[0] != '\0') {
		return -1; /* an augmentation we cannot skip */
	}
	if (r.bad || c->code_align == 0)
		return -1;
	c->ins = r.p;
	c->ins_end = end;
	c->off = off + 1;
	return 0;
}

static int parse_section(builder *b, const section *sec)
{
	cie cache[CIE_CACHE];
	uint64_t off = 0;
	int rc = 0;
	memset(cache, 0, sizeof(cache));
	while (rc == 0 && off + 4 <= sec->size) {
		rd r = {sec->data + off, sec->data + sec->size, 0};
		uint64_t len = rd_u(&r, 4);
		int wide = 0;
		if (len == 0) {
			if (sec->eh)
				break; /* terminator */
			off += 4;
			continue;
		}
		if (len == 0xffffffffu) {
			len = rd_u(&r, 8);
			wide = 1;
		}
		if (r.bad || len > (uint64_t)(r.end - r.p))
			break;
		const uint8_t *entry_end = r.p + len;
		uint64_t next = (uint64_t)(entry_end - sec->data);
		r.end = entry_end;
		const uint8_t *id_pos = r.p;
		uint64_t id = rd_u(&r, wide ? 8 : 4);
		int is_cie = sec->eh ? id == 0 : id == (wide ? UINT64_MAX : 0xffffffffu);
		if (is_cie || r.bad) {
			off = next;
			continue;
		}
		uint64_t cie_off = sec->eh ? (uint64_t)(id_pos - sec->data) - id : id;
		if (cie_off >= sec->size) {
			off = next;
			continue;
		}
		cie *c = &cache[cie_off % CIE_CACHE];
		if (c->off != cie_off + 1 && parse_cie(sec, cie_off, c)) {
			c->off = 0;
			off = next;
			continue;
		}
		uint64_t pc, range;
		uint64_t pos = sec->addr + (uint64_t)(r.p - sec->data);
		uint8_t enc = sec->eh ? c->fde_enc : 0x00;
		if (rd_ptr(&r, enc, pos, c->addr_size, &pc) || rd_ptr(&r, enc & 0x0f, 0, c->addr_size, &range) ||
		    pc == 0 || range == 0 || pc + range < pc) {
			off = next;
			continue;
		}
		if (c->has_z) {
			uint64_t zl = rd_uleb(&r);
			if (r.bad || zl > (uint64_t)(r.end - r.p)) {
				off = next;
				continue;
			}
			r.p += zl;
		}
		state init, s;
		memset(&init, 0, sizeof(init));
		init.cfa = C_REG;
		if (c->ra_reg != DW_RA) {
			off = next;
			continue; /* not x86-64 CFI */
		}
		run_cfa(NULL, c, c->ins, c->ins_end, &init, NULL, 0, 0, 0);
		s = init;
		uint8_t prio = sec->eh ? 2 : 1;
		struct wt_unwind_row none;
		memset(&none, 0, sizeof(none));
		if ((rc = run_cfa(b, c, r.p, entry_end, &s, &init, pc, pc + range, prio)))
			break;
		if (pc + range <= UINT32_MAX) {
			none.pc = (uint32_t)(pc + range);
			rc = row_push(b, pc + range, 0, &none);
		}
		b->fdes++;
		off = next;
	}
	return rc;
}

static int row_cmp(const void *a, const void *b)
{
	const raw_row *x = a, *y = b;
	if (x->pc != y->pc)
		return x->pc < y->pc ? -1 : 1;
	if (x->prio != y->prio)
		return x->prio > y->prio ? -1 : 1;
	return x->seq > y->seq ? -1 : x->seq < y->seq; /* the last state at a pc wins */
}

static int same_rule(const struct wt_unwind_row *a, const struct wt_unwind_row *b)
{
	return a->types == b->types && a->cfa_off8 == b->cfa_off8 && a->rbp_off8 == b->rbp_off8;
}

static int finish(builder *b, edge_unwind_table *t)
{
	if (b->n) /* a file without CFI has no rows (and qsort wants a buffer) */
		qsort(b->rows, b->n, sizeof(*b->rows), row_cmp);
	t->rows = malloc((b->n ? b->n : 1) * sizeof(*t->rows));
	if (!t->rows)
		return WT_ENOMEM;
	size_t n = 0;
	for (size_t i = 0; i < b->n; i++) {
		if (i > 0 && b->rows[i].pc == b->rows[i - 1].pc)
			continue; /* the first of a pc is the one that counts */
		if (n > 0 && same_rule(&t->rows[n - 1], &b->rows[i].r))
			continue;
		if (n == 0 && WT_ROW_CFA_TYPE(&b->rows[i].r) == WT_CFA_NONE)
			continue;
		t->rows[n++] = b->rows[i].r;
	}
	t->n = n;
	return 0;
}

int edge_unwind_build(const char *path, edge_unwind_table **out, wt_err *err)
{
	builder b = {0};
	edge_unwind_table *t = calloc(1, sizeof(*t));
	Elf *elf = NULL;
	int fd = -1, rc = 0;
	size_t shstrndx;

	*out = NULL;
	if (!t)
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = wt_err_set(err, WT_EIO, "unwind table: cannot open %s: %s", path, strerror(errno));
		goto out;
	}
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	GElf_Ehdr eh;
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) || elf_getshdrstrndx(elf, &shstrndx)) {
		rc = wt_err_set(err, WT_EINVAL, "unwind table: %s is not an ELF file", path);
		goto out;
	}
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_X86_64) {
		rc = wt_err_set(err, WT_EINVAL, "unwind table: %s is not x86-64", path);
		goto out;
	}
	size_t nph = 0;
	if (elf_getphdrnum(elf, &nph) == 0)
		for (size_t i = 0; i < nph && t->nloads < 8; i++) {
			GElf_Phdr ph;
			if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD) {
				t->load_off[t->nloads] = ph.p_offset;
				t->load_vaddr[t->nloads] = ph.p_vaddr;
				t->load_filesz[t->nloads++] = ph.p_filesz;
			}
		}
	for (int pass = 0; pass < 2 && rc == 0; pass++) {
		const char *want = pass == 0 ? ".eh_frame" : ".debug_frame";
		for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn && rc == 0; scn = elf_nextscn(elf, scn)) {
			GElf_Shdr sh;
			if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
				continue;
			const char *name = elf_strptr(elf, shstrndx, sh.sh_name);
			if (!name || strcmp(name, want))
				continue;
			if ((sh.sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0)
				continue;
			Elf_Data *d = elf_getdata(scn, NULL);
			if (!d || !d->d_buf)
				continue;
			section sec = {d->d_buf, d->d_size, sh.sh_addr, pass == 0};
			t->cfi_bytes += d->d_size;
			rc = parse_section(&b, &sec);
		}
	}
	if (rc) {
		wt_err_set(err, rc, "unwind table: %s: %s", path, b.full ? "too many rows" : "out of memory");
		goto out;
	}
	t->fdes = b.fdes;
	t->coarse = b.coarse;
	if ((rc = finish(&b, t)))
		wt_err_set(err, rc, "out of memory");
out:
	free(b.rows);
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	if (rc)
		edge_unwind_free(t);
	else
		*out = t;
	return rc;
}

/* ---- on-disk cache ---------------------------------------------------------------- */

typedef struct cache_hdr {
	char magic[4];
	uint32_t row_size;
	uint64_t n, fdes, cfi_bytes;
	uint64_t load_off[8], load_vaddr[8], load_filesz[8];
	uint32_t nloads, coarse;
} cache_hdr;

static int cache_read(const char *file, edge_unwind_table **out)
{
	FILE *f = fopen(file, "rbe");
	cache_hdr h;
	edge_unwind_table *t = NULL;
	struct stat st;
	int ok = 0;
	if (!f)
		return -1;
	if (fstat(fileno(f), &st) || fread(&h, sizeof(h), 1, f) != 1 || memcmp(h.magic, CACHE_MAGIC, 4) ||
	    h.row_size != sizeof(struct wt_unwind_row) || h.n > EDGE_UNWIND_MAX_ROWS ||
	    (uint64_t)st.st_size != sizeof(h) + h.n * sizeof(struct wt_unwind_row))
		goto out;
	t = calloc(1, sizeof(*t));
	if (!t || !(t->rows = malloc((h.n ? h.n : 1) * sizeof(*t->rows))))
		goto out;
	if (h.n && fread(t->rows, sizeof(*t->rows), h.n, f) != h.n)
		goto out;
	t->n = h.n;
	t->fdes = h.fdes;
	t->coarse = h.coarse;
	t->cfi_bytes = h.cfi_bytes;
	t->nloads = h.nloads > 8 ? 8 : h.nloads;
	memcpy(t->load_off, h.load_off, sizeof(h.load_off));
	memcpy(t->load_vaddr, h.load_vaddr, sizeof(h.load_vaddr));
	memcpy(t->load_filesz, h.load_filesz, sizeof(h.load_filesz));
	t->from_cache = 1;
	ok = 1;
out:
	fclose(f);
	if (!ok) {
		edge_unwind_free(t);
		return -1;
	}
	*out = t;
	return 0;
}

static void cache_write(const char *file, const edge_unwind_table *t)
{
	char tmp[4200];
	cache_hdr h;
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, CACHE_MAGIC, 4);
	h.nloads = t->nloads;
	memcpy(h.load_off, t->load_off, sizeof(h.load_off));
	memcpy(h.load_vaddr, t->load_vaddr, sizeof(h.load_vaddr));
	memcpy(h.load_filesz, t->load_filesz, sizeof(h.load_filesz));
	h.row_size = sizeof(struct wt_unwind_row);
	h.n = t->n;
	h.fdes = t->fdes;
	h.coarse = t->coarse > UINT32_MAX ? UINT32_MAX : (uint32_t)t->coarse;
	h.cfi_bytes = t->cfi_bytes;
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", file, (int)getpid());
	FILE *f = fopen(tmp, "wbe");
	if (!f)
		return;
	int ok = fwrite(&h, sizeof(h), 1, f) == 1 && (!t->n || fwrite(t->rows, sizeof(*t->rows), t->n, f) == t->n);
	if (fclose(f) != 0)
		ok = 0;
	if (!ok || rename(tmp, file) != 0)
		unlink(tmp);
}

int edge_unwind_get(const char *cache_dir, const char *key, const char *path, edge_unwind_table **out,
		    wt_err *err)
{
	char file[4096];
	int rc;
	*out = NULL;
	for (const char *k = key; *k; k++)
		if (!((*k >= '0' && *k <= '9') || (*k >= 'a' && *k <= 'f') || (*k >= 'A' && *k <= 'F')))
			return wt_err_set(err, WT_EINVAL, "unwind cache key must be hex: %s", key);
	if (!*key || strlen(cache_dir) + strlen(key) + 8 > sizeof(file))
		return wt_err_set(err, WT_EINVAL, "unwind cache path too long");
	snprintf(file, sizeof(file), "%s/%s.wtu", cache_dir, key);
	if (cache_read(file, out) == 0)
		return 0;
	if ((rc = edge_unwind_build(path, out, err)))
		return rc;
	wt_err ignored = {0};
	if (wt_mkdir_p(cache_dir, 0700, &ignored) == 0)
		cache_write(file, *out); /* best effort: a table not cached is built again */
	return 0;
}

const struct wt_unwind_row *edge_unwind_find(const edge_unwind_table *t, uint64_t vaddr)
{
	size_t lo = 0, hi = t->n;
	if (vaddr > UINT32_MAX)
		return NULL;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->rows[mid].pc <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &t->rows[lo - 1] : NULL;
}

void edge_unwind_free(edge_unwind_table *t)
{
	if (!t)
		return;
	free(t->rows);
	free(t);
}

/* ---- loader ----------------------------------------------------------------------- */

typedef struct loaded_file {
	char key[96]; /* device-inode-size-mtime */
	uint32_t first, count;
	uint64_t load_off[8], load_vaddr[8], load_filesz[8];
	uint32_t nloads;
	int ok;
	int evicted;       /* its rows were given to other files: unknown again */
	uint32_t refs;     /* process entries that use it */
	uint64_t last_use; /* job seq that last used it (eviction: least recent first) */
} loaded_file;

/* rows of evicted files, free for others (sorted by first, merged) */
typedef struct free_range {
	uint32_t first, count;
} free_range;

/* tgid → the files its entry uses (open addressing, backward-shift
 * deletion): the files' reference counts */
#define PF_SLOTS 16384
typedef struct proc_files {
	uint32_t tgid; /* 0 = empty */
	uint32_t n;
	uint32_t idx[WT_UNWIND_MAPS];
} proc_files;

/* one process to give tables: a copy of its mappings (the process table
 * may drop the process meanwhile) */
typedef struct job_map {
	uint64_t start, end, pgoff;
	char *path;
} job_map;

typedef struct job {
	uint32_t tgid;
	uint32_t mode; /* enum wt_unwind_mode of the entry */
	uint64_t seq; /* creation order */
	size_t n;
	job_map m[WT_UNWIND_MAPS];
} job;

#define MAX_JOBS 4096
#define LAST_SLOTS 16384
/* captures that came while ld.so was still mapping the libraries (see
 * edge_proc_maps_early): the loader reads the process's mappings again
 * itself every RECHECK_MS, up to RECHECK_TRIES times, and writes its entry
 * again once they are complete. Its own read: the edge_proc is the flush
 * thread's to change. */
#define MAX_RECHECKS 64
#define RECHECK_MS 20
#define RECHECK_TRIES 50

typedef struct recheck {
	uint32_t tgid, mode;
	int tries;
	int64_t due_ns;
	char exe[256];
} recheck;

/* Tables are built on a thread of the loader's own: a large binary takes
 * a while (~25-90 ms per MiB of CFI) and neither the discovery thread
 * (captures of short-lived processes) nor the flush should wait for it. */
struct edge_unwind_loader {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t th;
	int started, stop, busy;
	uint64_t seq; /* jobs created */
	/* tgid → seq of the job whose entry was written last (direct-mapped):
	 * a job of an older image (before an exec) never overwrites a newer */
	uint32_t last_tgid[LAST_SLOTS];
	uint64_t last_seq[LAST_SLOTS];
	job **q; /* ring of pending jobs */
	size_t qhead, qn;
	int rows_fd, procs_fd;
	uint32_t max_rows, used;
	char *cache_dir;
	char *vdso; /* a copy of the kernel's vDSO image (the same in every process), or NULL */
	free_range *fr;
	size_t nfr, frcap;
	uint32_t live_rows; /* rows of loaded, not evicted files */
	uint64_t cur_seq;   /* the job the loader thread works on (its files are not evicted) */
	proc_files *pf;
	_Atomic uint64_t evicted;
	loaded_file *files; /* appended by the loader thread, read by all, under mu */
	size_t nfiles, cap;
	_Atomic uint64_t failed, dropped, files_ok, rows_used; /* for stats */
	_Atomic uint64_t build_ns, cfi_bytes, built, from_cache; /* tables built (not read from the cache) */
	recheck rc[MAX_RECHECKS];
	size_t nrc;
	_Atomic uint64_t rechecked; /* entries written again after a recheck */
};

static void job_free(job *j)
{
	if (!j)
		return;
	for (size_t i = 0; i < j->n; i++)
		free(j->m[i].path);
	free(j);
}

static void *loader_run(void *arg);

/* edge_maps_read callback: the [vdso] mapping's range into arg (two uint64_t) */
static int vdso_found(void *arg, const edge_maps_line *m)
{
	uint64_t *range = arg;
	if (strcmp(m->name, "[vdso]"))
		return 0;
	range[0] = m->start;
	range[1] = m->end;
	return 1;
}

/* The vDSO's code (clock_gettime, gettimeofday: often a sampled leaf) has
 * CFI like any library, but no file: the edge's own image — the kernel's,
 * the same in every process — is written to dir/vdso.so and given to
 * processes' [vdso] mappings as that file. Returns the path (the caller
 * frees) or NULL. */
static char *vdso_copy(const char *dir)
{
	uint64_t range[2] = {0, 0};
	char *path = NULL;
	wt_err err = {0};
	int mfd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (mfd < 0)
		return NULL;
	edge_maps_read(mfd, vdso_found, range);
	unsigned long start = range[0], end = range[1];
	if (!start || end <= start || end - start > (1u << 20) || !dir || wt_mkdir_p(dir, 0700, &err) != 0 ||
	    asprintf(&path, "%s/vdso.so", dir) < 0)
		return NULL;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, (const void *)start, end - start) != (ssize_t)(end - start)) {
		if (fd >= 0)
			close(fd);
		free(path);
		return NULL;
	}
	close(fd);
	return path;
}

edge_unwind_loader *edge_unwind_loader_new(int rows_fd, uint32_t max_rows, int procs_fd, const char *cache_dir)
{
	edge_unwind_loader *l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	pthread_mutex_init(&l->mu, NULL);
	pthread_cond_init(&l->cv, NULL);
	l->rows_fd = rows_fd;
	l->procs_fd = procs_fd;
	l->max_rows = max_rows;
	l->vdso = vdso_copy(cache_dir);
	l->q = calloc(MAX_JOBS, sizeof(*l->q));
	l->pf = calloc(PF_SLOTS, sizeof(*l->pf));
	if (!l->q || !l->pf || (cache_dir && !(l->cache_dir = strdup(cache_dir))) || pthread_create(&l->th, NULL, loader_run, l)) {
		edge_unwind_loader_free(l);
		return NULL;
	}
	l->started = 1;
	return l;
}

static int rows_upload(edge_unwind_loader *l, const edge_unwind_table *t, uint32_t first)
{
	enum { CHUNK = 4096 };
	uint32_t keys[CHUNK];
	for (size_t i = 0; i < t->n; i += CHUNK) {
		uint32_t n = (uint32_t)(t->n - i < CHUNK ? t->n - i : CHUNK);
		for (uint32_t k = 0; k < n; k++)
			keys[k] = first + (uint32_t)i + k;
		uint32_t cnt = n;
		if (bpf_map_update_batch(l->rows_fd, keys, t->rows + i, &cnt, NULL) == 0 && cnt == n)
			continue;
		/* kernels without batch updates on arrays (before 5.6) */
		for (uint32_t k = 0; k < n; k++)
			if (bpf_map_update_elem(l->rows_fd, &keys[k], &t->rows[i + k], BPF_ANY))
				return -1;
	}
	return 0;
}

static int file_key(const char *path, char key[96])
{
	struct stat st;
	if (stat(path, &st) != 0)
		return -1;
	snprintf(key, 96, "%llx%08llx%llx%llx", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
		 (unsigned long long)st.st_size, (unsigned long long)st.st_mtim.tv_sec);
	return 0;
}

/* 0 unknown file (or evicted), 1 loaded (copied to *out, its index in
 * *idx), 2 known without a table */
static int file_find(edge_unwind_loader *l, const char *key, loaded_file *out, size_t *idx)
{
	int r = 0;
	pthread_mutex_lock(&l->mu);
	for (size_t i = 0; i < l->nfiles; i++)
		if (!strcmp(l->files[i].key, key)) {
			if (l->files[i].evicted)
				break;
			*out = l->files[i];
			*idx = i;
			r = out->ok ? 1 : 2;
			break;
		}
	pthread_mutex_unlock(&l->mu);
	return r;
}

/* ---- rows of the array: allocation, eviction (under mu) ---- */

static void range_free(edge_unwind_loader *l, uint32_t first, uint32_t count)
{
	size_t i = 0;
	while (i < l->nfr && l->fr[i].first < first)
		i++;
	if (l->nfr == l->frcap) {
		size_t nc = l->frcap ? l->frcap * 2 : 64;
		free_range *n = realloc(l->fr, nc * sizeof(*n));
		if (!n)
			return; /* those rows stay unused until the maps are reloaded */
		l->fr = n;
		l->frcap = nc;
	}
	memmove(&l->fr[i + 1], &l->fr[i], (l->nfr - i) * sizeof(*l->fr));
	l->fr[i] = (free_range){first, count};
	l->nfr++;
	/* merge with the next, then the previous */
	if (i + 1 < l->nfr && l->fr[i].first + l->fr[i].count == l->fr[i + 1].first) {
		l->fr[i].count += l->fr[i + 1].count;
		memmove(&l->fr[i + 1], &l->fr[i + 2], (l->nfr - i - 2) * sizeof(*l->fr));
		l->nfr--;
	}
	if (i > 0 && l->fr[i - 1].first + l->fr[i - 1].count == l->fr[i].first) {
		l->fr[i - 1].count += l->fr[i].count;
		memmove(&l->fr[i], &l->fr[i + 1], (l->nfr - i - 1) * sizeof(*l->fr));
		l->nfr--;
	}
	/* the last range ends at the high-water mark: lower it */
	if (l->nfr && l->fr[l->nfr - 1].first + l->fr[l->nfr - 1].count == l->used) {
		l->used = l->fr[l->nfr - 1].first;
		l->nfr--;
	}
}

/* first row of n free rows, or -1: first fit among the freed ranges,
 * else above the high-water mark */
static int64_t range_take(edge_unwind_loader *l, uint32_t n)
{
	for (size_t i = 0; i < l->nfr; i++)
		if (l->fr[i].count >= n) {
			uint32_t first = l->fr[i].first;
			l->fr[i].first += n;
			l->fr[i].count -= n;
			if (!l->fr[i].count) {
				memmove(&l->fr[i], &l->fr[i + 1], (l->nfr - i - 1) * sizeof(*l->fr));
				l->nfr--;
			}
			return first;
		}
	if (n <= l->max_rows - l->used) {
		l->used += n;
		return l->used - n;
	}
	return -1;
}

/* n rows for a new table: evicting, least recently used first, the
 * tables no process entry uses any more (a binary that ran once) until
 * they fit. -1 when they do not fit even then. */
static int64_t rows_alloc(edge_unwind_loader *l, uint32_t n)
{
	int64_t first;
	while ((first = range_take(l, n)) < 0) {
		size_t victim = SIZE_MAX;
		for (size_t i = 0; i < l->nfiles; i++) {
			const loaded_file *f = &l->files[i];
			if (f->ok && !f->evicted && !f->refs && f->last_use != l->cur_seq &&
			    (victim == SIZE_MAX || f->last_use < l->files[victim].last_use))
				victim = i;
		}
		if (victim == SIZE_MAX)
			return -1;
		l->files[victim].evicted = 1;
		l->live_rows -= l->files[victim].count;
		range_free(l, l->files[victim].first, l->files[victim].count);
		atomic_fetch_add(&l->evicted, 1);
		atomic_fetch_sub(&l->files_ok, 1);
	}
	l->live_rows += n;
	return first;
}

static size_t pf_home(uint32_t tgid)
{
	return (tgid * 2654435761u) % PF_SLOTS;
}

static proc_files *pf_find(edge_unwind_loader *l, uint32_t tgid)
{
	for (size_t i = pf_home(tgid), k = 0; k < PF_SLOTS && l->pf[i].tgid; i = (i + 1) % PF_SLOTS, k++)
		if (l->pf[i].tgid == tgid)
			return &l->pf[i];
	return NULL;
}

/* drop tgid's references (its entry is gone or replaced) */
static void pf_drop(edge_unwind_loader *l, uint32_t tgid)
{
	proc_files *p = pf_find(l, tgid);
	if (!p)
		return;
	for (uint32_t k = 0; k < p->n; k++)
		if (l->files[p->idx[k]].refs)
			l->files[p->idx[k]].refs--;
	size_t i = (size_t)(p - l->pf), j = i;
	for (;;) {
		l->pf[i].tgid = 0;
		for (;;) {
			j = (j + 1) % PF_SLOTS;
			if (!l->pf[j].tgid)
				return;
			size_t h = pf_home(l->pf[j].tgid);
			if (i <= j ? (i < h && h <= j) : (i < h || h <= j))
				continue;
			break;
		}
		l->pf[i] = l->pf[j];
		i = j;
	}
}

/* tgid's entry now uses files idx[0..n): 0, or -1 when the table is full
 * (then no entry may be written: its files could be evicted under it) */
static int pf_set(edge_unwind_loader *l, uint32_t tgid, const size_t *idx, uint32_t n)
{
	pf_drop(l, tgid);
	size_t i = pf_home(tgid), k = 0;
	while (l->pf[i].tgid && k++ < PF_SLOTS)
		i = (i + 1) % PF_SLOTS;
	if (l->pf[i].tgid)
		return -1;
	l->pf[i].tgid = tgid;
	l->pf[i].n = n;
	for (uint32_t x = 0; x < n; x++) {
		l->pf[i].idx[x] = (uint32_t)idx[x];
		l->files[idx[x]].refs++;
	}
	return 0;
}

/* Loader thread: build (or read from the disk cache) and load the table
 * of a file not seen before (or evicted), then record it. 1 = loaded (*f,
 * its index in *idx), 0 = none. */
static int file_load(edge_unwind_loader *l, const char *path, const char *key, loaded_file *f, size_t *idx)
{
	int64_t first = -1;
	edge_unwind_table *t = NULL;
	wt_err err = {0};
	memset(f, 0, sizeof(*f));
	snprintf(f->key, sizeof(f->key), "%s", key);
	int64_t t0 = wt_now_ns(CLOCK_MONOTONIC);
	int rc = l->cache_dir ? edge_unwind_get(l->cache_dir, key, path, &t, &err) : edge_unwind_build(path, &t, &err);
	if (!rc && t->from_cache) {
		atomic_fetch_add(&l->from_cache, 1);
	} else if (!rc) {
		atomic_fetch_add(&l->build_ns, (uint64_t)(wt_now_ns(CLOCK_MONOTONIC) - t0));
		atomic_fetch_add(&l->cfi_bytes, t->cfi_bytes);
		atomic_fetch_add(&l->built, 1);
	}
	if (!rc && t->n && t->n <= l->max_rows) {
		pthread_mutex_lock(&l->mu);
		first = rows_alloc(l, (uint32_t)t->n);
		pthread_mutex_unlock(&l->mu);
	}
	if (first >= 0 && rows_upload(l, t, (uint32_t)first)) {
		pthread_mutex_lock(&l->mu);
		l->live_rows -= (uint32_t)t->n;
		range_free(l, (uint32_t)first, (uint32_t)t->n);
		pthread_mutex_unlock(&l->mu);
		first = -1;
	}
	if (first < 0) {
		atomic_fetch_add(&l->failed, 1);
	} else {
		f->first = (uint32_t)first;
		f->count = (uint32_t)t->n;
		f->nloads = t->nloads;
		memcpy(f->load_off, t->load_off, sizeof(f->load_off));
		memcpy(f->load_vaddr, t->load_vaddr, sizeof(f->load_vaddr));
		memcpy(f->load_filesz, t->load_filesz, sizeof(f->load_filesz));
		f->ok = 1;
		atomic_fetch_add(&l->files_ok, 1);
	}
	edge_unwind_free(t);
	pthread_mutex_lock(&l->mu);
	f->last_use = l->cur_seq;
	atomic_store(&l->rows_used, l->live_rows);
	size_t i;
	for (i = 0; i < l->nfiles && strcmp(l->files[i].key, key); i++)
		;
	if (i == l->nfiles && l->nfiles == l->cap) {
		size_t nc = l->cap ? l->cap * 2 : 64;
		loaded_file *nf = realloc(l->files, nc * sizeof(*nf));
		if (nf) {
			l->files = nf;
			l->cap = nc;
		}
	}
	if (i < l->nfiles) {
		f->refs = l->files[i].refs; /* an evicted file's slot, again (refs 0) */
		l->files[i] = *f;
	} else if (l->nfiles < l->cap) {
		l->files[l->nfiles++] = *f;
	} else if (f->ok) {
		/* not recorded: its rows go back (tried again next time) */
		l->live_rows -= f->count;
		range_free(l, f->first, f->count);
		f->ok = 0;
		atomic_fetch_sub(&l->files_ok, 1);
	}
	*idx = i;
	pthread_mutex_unlock(&l->mu);
	return f->ok;
}

/* Write process j's entry from the tables of its files. Without may_load
 * (the caller's thread), a file not seen before makes it return -1 (the
 * job goes to the loader thread); 0 = done. */
static int load_job(edge_unwind_loader *l, const job *j, int may_load)
{
	struct wt_unwind_proc v;
	char path[4400], key[96];
	size_t used[WT_UNWIND_MAPS];
	uint32_t firsts[WT_UNWIND_MAPS];
	memset(&v, 0, sizeof(v));
	v.mode = j->mode;
	if (may_load) {
		pthread_mutex_lock(&l->mu);
		l->cur_seq = j->seq;
		pthread_mutex_unlock(&l->mu);
	}
	for (size_t i = 0; i < j->n && v.n < WT_UNWIND_MAPS; i++) {
		const job_map *m = &j->m[i];
		loaded_file f;
		uint64_t va = 0;
		int found = 0;
		if (!strcmp(m->path, "[vdso]")) {
			if (!l->vdso || file_key(l->vdso, key))
				continue;
			snprintf(path, sizeof(path), "%s", l->vdso);
		} else {
		snprintf(path, sizeof(path), "/proc/%u/root%s", j->tgid, m->path);
		/* the process gone before its job came up (a backlog of table
		 * builds behind a busy machine's new binaries): the file through
		 * the edge's own root, so that the next process of the same
		 * binary finds its table built (the key names the file, not
		 * the path) */
		if (file_key(path, key) && (snprintf(path, sizeof(path), "%s", m->path), file_key(path, key)))
			continue;
		}
		size_t fi = 0;
		int known = file_find(l, key, &f, &fi);
		if (!known && !may_load)
			return -1;
		if (!(known ? known == 1 : file_load(l, path, key, &f, &fi)))
			continue;
		if (known && may_load) {
			pthread_mutex_lock(&l->mu);
			l->files[fi].last_use = j->seq; /* not evicted for this job's later files */
			pthread_mutex_unlock(&l->mu);
		}
		for (uint32_t k = 0; k < f.nloads && !found; k++)
			if (m->pgoff >= f.load_off[k] && m->pgoff < f.load_off[k] + f.load_filesz[k]) {
				va = m->pgoff - f.load_off[k] + f.load_vaddr[k];
				found = 1;
			}
		if (!found)
			continue;
		used[v.n] = fi;
		firsts[v.n] = f.first;
		struct wt_unwind_map *x = &v.m[v.n++];
		x->start = m->start;
		x->end = m->end;
		x->bias = m->start - va;
		x->first = f.first;
		x->count = f.count;
	}
	uint32_t tgid = j->tgid;
	wt_debug("msg=\"unwind tables\" tgid=%u maps=%zu with_tables=%u loader_thread=%d", tgid, j->n, v.n, may_load);
	/* a newer image of the tgid already has its entry: this one is stale */
	pthread_mutex_lock(&l->mu);
	size_t slot = tgid % LAST_SLOTS;
	int stale = l->last_tgid[slot] == tgid && l->last_seq[slot] > j->seq;
	/* a table evicted since it was looked up (another thread's job): the
	 * loader thread loads it again */
	for (uint32_t k = 0; k < v.n && !stale; k++)
		if (l->files[used[k]].evicted || !l->files[used[k]].ok || l->files[used[k]].first != firsts[k]) {
			pthread_mutex_unlock(&l->mu);
			return may_load ? 0 : -1;
		}
	if (!stale) {
		l->last_tgid[slot] = tgid;
		l->last_seq[slot] = j->seq;
		/* a process gone meanwhile gets no entry (nobody would delete it) */
		if (v.n && kill((pid_t)tgid, 0) == 0 && pf_set(l, tgid, used, v.n) == 0) {
			bpf_map_update_elem(l->procs_fd, &tgid, &v, BPF_ANY);
		} else {
			pf_drop(l, tgid);
			bpf_map_delete_elem(l->procs_fd, &tgid);
		}
	}
	pthread_mutex_unlock(&l->mu);
	return 0;
}

static int job_add_map(void *arg, const edge_maps_line *m)
{
	job *j = arg;
	job_map *x = &j->m[j->n];
	if (!(x->path = strdup(m->name)))
		return 1;
	x->start = m->start;
	x->end = m->end;
	x->pgoff = m->pgoff;
	return ++j->n >= WT_UNWIND_MAPS;
}

/* The executable file mappings of tgid now, as a job (NULL: gone, or out
 * of memory). */
static job *job_from_proc(uint32_t tgid, uint32_t mode)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%u/maps", tgid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	job *j = calloc(1, sizeof(*j));
	if (!j) {
		close(fd);
		return NULL;
	}
	j->tgid = tgid;
	j->mode = mode;
	edge_maps_read(fd, job_add_map, j);
	return j;
}

/* the early-capture test of edge_proc_maps_early, on a job's mappings */
static int job_early(const job *j, const char *exe)
{
	edge_proc p;
	edge_proc_map m[WT_UNWIND_MAPS];
	memset(&p, 0, sizeof(p));
	memset(m, 0, sizeof(m));
	snprintf(p.exe, sizeof(p.exe), "%s", exe);
	for (size_t i = 0; i < j->n; i++) {
		m[i].path = j->m[i].path;
		m[i].start = j->m[i].start;
		m[i].end = j->m[i].end;
	}
	p.maps = m;
	p.nmaps = j->n;
	return edge_proc_maps_early(&p);
}

/* Loader thread, mu held: the rechecks that are due. Returns the time the
 * next one is due (0: none). */
static int64_t rechecks_run(edge_unwind_loader *l)
{
	int64_t next = 0;
	for (size_t i = 0; i < l->nrc;) {
		recheck r = l->rc[i];
		int64_t now = wt_now_ns(CLOCK_MONOTONIC);
		if (r.due_ns > now) {
			next = !next || r.due_ns < next ? r.due_ns : next;
			i++;
			continue;
		}
		pthread_mutex_unlock(&l->mu);
		job *j = job_from_proc(r.tgid, r.mode);
		int complete = j && !job_early(j, r.exe);
		int done = !j || complete || r.tries + 1 >= RECHECK_TRIES;
		if (complete) {
			pthread_mutex_lock(&l->mu);
			j->seq = ++l->seq;
			pthread_mutex_unlock(&l->mu);
			if (load_job(l, j, 1) == 0)
				atomic_fetch_add(&l->rechecked, 1);
		}
		job_free(j);
		pthread_mutex_lock(&l->mu);
		/* the list may have changed meanwhile (forget, add): find r again */
		for (i = 0; i < l->nrc && l->rc[i].tgid != r.tgid; i++)
			;
		if (i == l->nrc)
			continue;
		if (done) {
			l->rc[i] = l->rc[--l->nrc];
		} else {
			l->rc[i].tries++;
			l->rc[i].due_ns = wt_now_ns(CLOCK_MONOTONIC) + RECHECK_MS * 1000000LL;
			i++;
		}
	}
	for (size_t i = 0; i < l->nrc; i++)
		next = !next || l->rc[i].due_ns < next ? l->rc[i].due_ns : next;
	return next;
}

static void *loader_run(void *arg)
{
	edge_unwind_loader *l = arg;
	pthread_mutex_lock(&l->mu);
	for (;;) {
		int64_t next = rechecks_run(l);
		while (!l->stop && !l->qn) {
			if (!next) {
				pthread_cond_wait(&l->cv, &l->mu);
				break;
			}
			int64_t wait_ms = (next - wt_now_ns(CLOCK_MONOTONIC)) / 1000000 + 1;
			struct timespec ts = wt_deadline(CLOCK_REALTIME, wait_ms > 0 ? wait_ms : 1);
			pthread_cond_timedwait(&l->cv, &l->mu, &ts);
			break;
		}
		if (l->stop)
			break;
		if (!l->qn)
			continue;
		job *j = l->q[l->qhead];
		l->qhead = (l->qhead + 1) % MAX_JOBS;
		l->qn--;
		l->busy = 1;
		pthread_mutex_unlock(&l->mu);
		load_job(l, j, 1);
		job_free(j);
		pthread_mutex_lock(&l->mu);
		l->busy = 0;
	}
	pthread_mutex_unlock(&l->mu);
	return NULL;
}

void edge_unwind_loader_add(edge_unwind_loader *l, const edge_proc *p, uint32_t mode)
{
	if (!l || p->state != EDGE_PROC_LIVE)
		return;
	job *j = calloc(1, sizeof(*j));
	if (!j)
		return;
	j->tgid = p->tgid;
	j->mode = mode;
	for (size_t i = 0; i < p->nmaps && j->n < WT_UNWIND_MAPS; i++) {
		const edge_proc_map *m = &p->maps[i];
		if (!m->path || (m->path[0] != '/' && strcmp(m->path, "[vdso]")))
			continue;
		job_map *x = &j->m[j->n];
		if (!(x->path = strdup(m->path)))
			break;
		x->start = m->start;
		x->end = m->end;
		x->pgoff = m->pgoff;
		j->n++;
	}
	/* every file known (the common case: a new process of binaries that
	 * ran before): the entry is written now, not behind table builds (an
	 * earlier image of the tgid still queued is then not written: seq) */
	pthread_mutex_lock(&l->mu);
	j->seq = ++l->seq;
	if (edge_proc_maps_early(p)) {
		size_t i;
		for (i = 0; i < l->nrc && l->rc[i].tgid != p->tgid; i++)
			;
		if (i == l->nrc && l->nrc < MAX_RECHECKS)
			l->nrc++;
		if (i < l->nrc) {
			l->rc[i].tgid = p->tgid;
			l->rc[i].mode = mode;
			l->rc[i].tries = 0;
			l->rc[i].due_ns = wt_now_ns(CLOCK_MONOTONIC) + RECHECK_MS * 1000000LL;
			snprintf(l->rc[i].exe, sizeof(l->rc[i].exe), "%s", p->exe);
			pthread_cond_signal(&l->cv);
		}
	}
	pthread_mutex_unlock(&l->mu);
	if (load_job(l, j, 0) == 0) {
		job_free(j);
		return;
	}
	pthread_mutex_lock(&l->mu);
	if (l->qn < MAX_JOBS) {
		l->q[(l->qhead + l->qn) % MAX_JOBS] = j;
		l->qn++;
		j = NULL;
		pthread_cond_signal(&l->cv);
	} else {
		atomic_fetch_add(&l->dropped, 1);
	}
	pthread_mutex_unlock(&l->mu);
	job_free(j);
}

void edge_unwind_loader_forget(edge_unwind_loader *l, uint32_t tgid)
{
	if (!l)
		return;
	/* jobs of the tgid still queued are stale from now on */
	pthread_mutex_lock(&l->mu);
	size_t slot = tgid % LAST_SLOTS;
	l->last_tgid[slot] = tgid;
	l->last_seq[slot] = ++l->seq;
	for (size_t i = 0; i < l->nrc;)
		if (l->rc[i].tgid == tgid)
			l->rc[i] = l->rc[--l->nrc];
		else
			i++;
	pf_drop(l, tgid);
	bpf_map_delete_elem(l->procs_fd, &tgid);
	pthread_mutex_unlock(&l->mu);
}

void edge_unwind_loader_stats(edge_unwind_loader *l, uint64_t *files, uint64_t *rows, uint64_t *failed,
			      uint64_t *pending)
{
	*files = l ? atomic_load(&l->files_ok) : 0;
	*rows = l ? atomic_load(&l->rows_used) : 0;
	*failed = l ? atomic_load(&l->failed) + atomic_load(&l->dropped) : 0;
	*pending = 0;
	if (l) {
		pthread_mutex_lock(&l->mu);
		*pending = l->qn + (uint64_t)l->busy;
		pthread_mutex_unlock(&l->mu);
	}
}

void edge_unwind_loader_build_stats(edge_unwind_loader *l, uint64_t *built, uint64_t *build_ns, uint64_t *cfi_bytes,
				    uint64_t *from_cache)
{
	*built = l ? atomic_load(&l->built) : 0;
	*build_ns = l ? atomic_load(&l->build_ns) : 0;
	*cfi_bytes = l ? atomic_load(&l->cfi_bytes) : 0;
	*from_cache = l ? atomic_load(&l->from_cache) : 0;
}

void edge_unwind_loader_free(edge_unwind_loader *l)
{
	if (!l)
		return;
	if (l->started) {
		pthread_mutex_lock(&l->mu);
		l->stop = 1;
		pthread_cond_broadcast(&l->cv);
		pthread_mutex_unlock(&l->mu);
		pthread_join(l->th, NULL);
	}
	for (size_t i = 0; l->q && i < l->qn; i++)
		job_free(l->q[(l->qhead + i) % MAX_JOBS]);
	free(l->q);
	pthread_cond_destroy(&l->cv);
	pthread_mutex_destroy(&l->mu);
	free(l->files);
	free(l->cache_dir);
	free(l->vdso);
	free(l->fr);
	free(l->pf);
	free(l);
}
