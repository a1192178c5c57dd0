/*
 * pprof_encode.c — wt_profile → profile.proto bytes (optionally gzipped).
 *
 * The pprof string table is the profile's own string table (wt string id ==
 * pprof string index; id 0 is ""). Mapping, function and location ids are
 * index+1; every wt frame becomes one Location with at most one Line, so
 * inlined frames come back as separate locations (the stack of frame names
 * is unchanged). Functions' build ids travel through the location's mapping.
 * All protobuf-c structs are built in a few pooled arrays, packed once.
 */
#include "pprof.h"

#include <stdlib.h>
#include <string.h>

#include "compress.h"
#include "proto/profile.pb-c.h"

typedef struct enc {
	char **strs;
	Perftools__Profiles__ValueType *vt, **vtp, period_type;
	Perftools__Profiles__Mapping *maps, **mapp;
	Perftools__Profiles__Function *fns, **fnp;
	Perftools__Profiles__Location *locs, **locp;
	Perftools__Profiles__Line *lines, **linep;
	Perftools__Profiles__Sample *smp, **smpp;
	Perftools__Profiles__Label *lbl, **lblp;
	uint64_t *locids;
	uint8_t *packed;
} enc;

static void enc_free(enc *e)
{
	free(e->strs);
	free(e->vt);
	free(e->vtp);
	free(e->maps);
	free(e->mapp);
	free(e->fns);
	free(e->fnp);
	free(e->locs);
	free(e->locp);
	free(e->lines);
	free(e->linep);
	free(e->smp);
	free(e->smpp);
	free(e->lbl);
	free(e->lblp);
	free(e->locids);
	free(e->packed);
}

#define ALLOC(ptr, n) ((ptr) = calloc((n) ? (n) : 1, sizeof(*(ptr))))

int wt_pprof_encode(const wt_profile *p, int gzip, uint8_t **out, size_t *outlen, wt_err *err)
{
	static char empty[] = "";
	Perftools__Profiles__Profile pr = PERFTOOLS__PROFILES__PROFILE__INIT;
	size_t i, j, nlocids = 0, nlabels = 0, packed_len;
	enc e;
	int rc = 0;

	*out = NULL;
	*outlen = 0;
	memset(&e, 0, sizeof(e));
	for (i = 0; i < p->nsamples; i++) {
		nlocids += p->stacks[p->samples[i].stack].len;
		nlabels += p->labelsets[p->samples[i].labelset].len;
	}
	if (!ALLOC(e.strs, p->nstrings) || !ALLOC(e.vt, p->ntypes) || !ALLOC(e.vtp, p->ntypes) ||
	    !ALLOC(e.maps, p->nmappings) || !ALLOC(e.mapp, p->nmappings) ||
	    !ALLOC(e.fns, p->nfunctions) || !ALLOC(e.fnp, p->nfunctions) ||
	    !ALLOC(e.locs, p->nframes) || !ALLOC(e.locp, p->nframes) ||
	    !ALLOC(e.lines, p->nframes) || !ALLOC(e.linep, p->nframes) ||
	    !ALLOC(e.smp, p->nsamples) || !ALLOC(e.smpp, p->nsamples) ||
	    !ALLOC(e.lbl, nlabels) || !ALLOC(e.lblp, nlabels) || !ALLOC(e.locids, nlocids)) {
		rc = wt_err_set(err, WT_ENOMEM, "pprof encode: out of memory");
		goto cleanup;
	}

	/* strings: index 0 must be "" even for a profile without strings */
	for (i = 0; i < p->nstrings; i++)
		e.strs[i] = (char *)wt_profile_str(p, i);
	if (p->nstrings == 0)
		e.strs[0] = empty;
	pr.n_string_table = p->nstrings ? p->nstrings : 1;
	pr.string_table = e.strs;

	for (i = 0; i < p->ntypes; i++) {
		perftools__profiles__value_type__init(&e.vt[i]);
		e.vt[i].type = p->types[i].type;
		e.vt[i].unit = p->types[i].unit;
		e.vtp[i] = &e.vt[i];
	}
	pr.n_sample_type = p->ntypes;
	pr.sample_type = e.vtp;

	for (i = 0; i < p->nmappings; i++) {
		const wt_mapping *m = &p->mappings[i];
		Perftools__Profiles__Mapping *pm = &e.maps[i];

		perftools__profiles__mapping__init(pm);
		pm->id = i + 1;
		pm->memory_start = m->start;
		pm->memory_limit = m->limit;
		pm->file_offset = m->offset;
		pm->filename = m->filename;
		pm->build_id = m->build_id;
		e.mapp[i] = pm;
	}
	pr.n_mapping = p->nmappings;
	pr.mapping = e.mapp;

	for (i = 0; i < p->nfunctions; i++) {
		const wt_function *f = &p->functions[i];
		Perftools__Profiles__Function *pf = &e.fns[i];

		perftools__profiles__function__init(pf);
		pf->id = i + 1;
		pf->name = f->name;
		pf->system_name = f->system_name;
		pf->filename = f->filename;
		pf->start_line = f->start_line;
		e.fnp[i] = pf;
	}
	pr.n_function = p->nfunctions;
	pr.function = e.fnp;

	for (i = 0; i < p->nframes; i++) {
		const wt_frame *fr = &p->frames[i];
		Perftools__Profiles__Location *pl = &e.locs[i];

		perftools__profiles__location__init(pl);
		pl->id = i + 1;
		pl->address = fr->address;
		pl->mapping_id = fr->mapping == WT_NO_MAPPING ? 0 : (uint64_t)fr->mapping + 1;
		if (fr->function != WT_NO_FUNCTION) {
			perftools__profiles__line__init(&e.lines[i]);
			e.lines[i].function_id = (uint64_t)fr->function + 1;
			e.lines[i].line = fr->line;
			e.linep[i] = &e.lines[i];
			pl->n_line = 1;
			pl->line = &e.linep[i];
		}
		e.locp[i] = pl;
	}
	pr.n_location = p->nframes;
	pr.location = e.locp;

	{
		size_t lo = 0, la = 0;

		for (i = 0; i < p->nsamples; i++) {
			const wt_sample *s = &p->samples[i];
			Perftools__Profiles__Sample *ps = &e.smp[i];
			const uint32_t *fids;
			const wt_label *ls;
			size_t n, nl;

			perftools__profiles__sample__init(ps);
			/* The accessors do pointer arithmetic on arrays that are
			 * NULL while empty (UB even with offset 0): guard them. */
			n = p->stacks[s->stack].len;
			fids = n ? wt_profile_stack(p, s->stack, &n) : NULL;
			ps->location_id = e.locids + lo;
			ps->n_location_id = n;
			for (j = 0; j < n; j++)
				e.locids[lo++] = (uint64_t)fids[j] + 1;
			ps->value = p->ntypes ? wt_profile_values(p, i) : NULL;
			ps->n_value = p->ntypes;
			nl = p->labelsets[s->labelset].len;
			ls = nl ? wt_profile_labelset(p, s->labelset, &nl) : NULL;
			ps->label = e.lblp + la;
			ps->n_label = nl;
			for (j = 0; j < nl; j++) {
				Perftools__Profiles__Label *pl = &e.lbl[la];

				perftools__profiles__label__init(pl);
				pl->key = ls[j].key;
				if (ls[j].str) {
					pl->str = ls[j].str;
				} else {
					pl->num = ls[j].num;
					pl->num_unit = ls[j].num_unit;
				}
				e.lblp[la++] = pl;
			}
			e.smpp[i] = ps;
		}
	}
	pr.n_sample = p->nsamples;
	pr.sample = e.smpp;

	pr.time_nanos = p->time_ns;
	pr.duration_nanos = p->duration_ns;
	pr.period = p->period;
	if (p->period_type || p->period_unit) {
		perftools__profiles__value_type__init(&e.period_type);
		e.period_type.type = p->period_type;
		e.period_type.unit = p->period_unit;
		pr.period_type = &e.period_type;
	}
	pr.default_sample_type = p->default_type;

	packed_len = perftools__profiles__profile__get_packed_size(&pr);
	e.packed = malloc(packed_len ? packed_len : 1);
	if (!e.packed) {
		rc = wt_err_set(err, WT_ENOMEM, "pprof encode: out of memory (%zu bytes)", packed_len);
		goto cleanup;
	}
	if (perftools__profiles__profile__pack(&pr, e.packed) != packed_len) {
		rc = wt_err_set(err, WT_EINVAL, "pprof encode: packed size mismatch");
		goto cleanup;
	}
	if (gzip) {
		if ((rc = wt_gzip(e.packed, packed_len, 6, out, outlen, err))) {
			wt_err_prefix(err, "pprof encode");
			goto cleanup;
		}
	} else {
		*out = e.packed;
		*outlen = packed_len;
		e.packed = NULL;
	}
cleanup:
	enc_free(&e);
	return rc;
}
