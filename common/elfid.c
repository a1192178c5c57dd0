/*
 * elfid.c — ELF magic, GNU build id and "has symbols" checks on an ELF
 * file held in memory (see elfid.h).
 */
#include "elfid.h"
#include "hex.h"

#include <elfutils/libdwelf.h>
#include <gelf.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

int wt_elf_magic(const void *data, size_t len)
{
	return len >= 4 && !memcmp(data, "\177ELF", 4);
}

static Elf *open_mem(const void *data, size_t len)
{
	Elf *elf;

	if (!wt_elf_magic(data, len))
		return NULL;
	elf_version(EV_CURRENT);
	elf = elf_memory((char *)data, len);
	if (elf && elf_kind(elf) != ELF_K_ELF) {
		elf_end(elf);
		elf = NULL;
	}
	return elf;
}

int wt_elf_gnu_build_id(Elf *elf, char *hex, size_t cap)
{
	const void *id = NULL;
	ssize_t n = dwelf_elf_gnu_build_id(elf, &id);

	if (n <= 0 || (size_t)n * 2 + 1 > cap)
		return -1;
	wt_hex_encode(id, (size_t)n, hex, cap);
	return 0;
}

int wt_elf_build_id(const void *data, size_t len, const char *what, char *hex, size_t cap, wt_err *err)
{
	Elf *elf = open_mem(data, len);
	int rc = 0;

	if (!elf)
		return wt_err_set(err, WT_EINVAL, "%s: not an ELF file", what);
	if (wt_elf_gnu_build_id(elf, hex, cap))
		rc = wt_err_set(err, WT_EINVAL, "%s: no GNU build id note (link with -Wl,--build-id)", what);
	elf_end(elf);
	return rc;
}

int wt_elf_has_symbols(const void *data, size_t len)
{
	Elf *elf = open_mem(data, len);
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	int found = 0;

	if (!elf)
		return 0;
	if (elf_getshdrstrndx(elf, &shstrndx) == 0) {
		while (!found && (scn = elf_nextscn(elf, scn))) {
			GElf_Shdr sh;
			const char *name;

			if (!gelf_getshdr(scn, &sh))
				continue;
			name = elf_strptr(elf, shstrndx, sh.sh_name);
			found = sh.sh_type == SHT_SYMTAB || (name && !strcmp(name, ".debug_info"));
		}
	}
	elf_end(elf);
	return found;
}
