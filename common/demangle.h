/*
 * demangle.h — C++ (and legacy Rust, which uses the same scheme) symbol
 * demangling with libstdc++'s __cxa_demangle, looked up with dlopen at
 * first use: no link dependency, and without libstdc++ names stay mangled.
 * Used by the edge's eBPF symbolizer and the hub's debug-file symbolizer.
 */
#ifndef WT_DEMANGLE_H
#define WT_DEMANGLE_H

/* Demangled form of name (malloc'd, caller frees), or NULL when name is
 * not mangled ("_Z…") or cannot be demangled. Thread-safe. */
char *wt_demangle(const char *name);

#endif
