/*
 * unwind.h — the unwind table row the edge builds from .eh_frame /
 * .debug_frame (edge/ebpf_unwind.c) and a BPF unwinder reads: for the
 * instructions from pc up to the next row's pc, how to find the caller's
 * frame (x86-64). Included from BPF C and from ordinary C like profile.h.
 *
 * CFA = the canonical frame address (the caller's rsp after the return);
 * the return address is at CFA - 8 on x86-64 (rows where it is not have
 * type WT_CFA_EXPR); rbp is restored as rbp_type says.
 */
#ifndef WT_BPF_UNWIND_H
#define WT_BPF_UNWIND_H

enum wt_cfa_type {
	WT_CFA_NONE = 0,   /* no CFI for this pc (gap between functions): frame pointers */
	WT_CFA_RSP = 1,    /* CFA = rsp + cfa_off */
	WT_CFA_RBP = 2,    /* CFA = rbp + cfa_off */
	WT_CFA_PLT = 3,    /* PLT entries: CFA = rsp + cfa_off + ((pc & 15) >= rbp_off ? 8 : 0) */
	WT_CFA_END = 4,    /* return address undefined: outermost frame (_start, thread start) */
	WT_CFA_SIGNAL = 5, /* signal trampoline (CIE augmentation 'S'): registers in the sigcontext at rsp */
	WT_CFA_EXPR = 6,   /* another DWARF expression or register: not unwound here (frame pointers) */
};

enum wt_rbp_type {
	WT_RBP_SAME = 0,  /* rbp unchanged in this frame */
	WT_RBP_CFA = 1,   /* the caller's rbp saved at CFA + rbp_off */
	WT_RBP_OTHER = 2, /* in a register or an expression: unknown to the unwinder */
};

/* 8 bytes (an array map stores values in 8-byte slots: a 12-byte row
 * took 16). pc is the ELF virtual address (files whose executable code
 * lies above 4 GiB get no table). Offsets are kept in units of 8 bytes,
 * as x86-64 CFI states them in practice: the builder turns a rule whose
 * offset is not a multiple of 8 or out of range into WT_CFA_EXPR (frame
 * pointers) or WT_RBP_OTHER and counts it. Read through the accessors. */
struct wt_unwind_row {
	__u32 pc;
	__u16 cfa_off8; /* CFA offset / 8 (WT_CFA_RSP, WT_CFA_RBP, WT_CFA_PLT): 0 .. 524,280 bytes */
	__u8 types;     /* enum wt_cfa_type in the low 4 bits, enum wt_rbp_type in the high 4 */
	__s8 rbp_off8;  /* WT_RBP_CFA: the caller's rbp at CFA + rbp_off8 * 8; WT_CFA_PLT: the pc & 15 threshold */
};

#define WT_ROW_CFA_TYPE(r) ((r)->types & 15)
#define WT_ROW_RBP_TYPE(r) ((r)->types >> 4)
#define WT_ROW_CFA_OFF(r) ((__s64)(r)->cfa_off8 * 8)
#define WT_ROW_RBP_OFF(r) ((__s64)(r)->rbp_off8 * 8)
#define WT_ROW_PLT_THR(r) ((__u64)(__u8)(r)->rbp_off8)

/* Executable mappings of one process that have a table, sorted by start:
 * pc in [start, end) has ELF address pc - bias and its rows are
 * rows[first .. first + count) of the rows array (wt_unwind_rows). */
#define WT_UNWIND_MAPS 32
struct wt_unwind_map {
	__u64 start, end, bias;
	__u32 first, count;
};

/* how a process with an entry is unwound (the edge's per-service
 * ebpf.unwind; a process without an entry is walked by frame pointers,
 * by the kernel) */
enum wt_unwind_mode {
	WT_UNWIND_MODE_AUTO = 0,   /* tables where a pc has a row, one frame-pointer step elsewhere */
	WT_UNWIND_MODE_TABLES = 1, /* tables only: a pc without a row (or another expression) ends the stack */
};

struct wt_unwind_proc {
	__u32 n;
	__u32 mode; /* enum wt_unwind_mode */
	struct wt_unwind_map m[WT_UNWIND_MAPS];
};

#endif
