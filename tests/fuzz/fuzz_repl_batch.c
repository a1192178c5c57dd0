/*
 * fuzz_repl_batch.c — libFuzzer target: what the hub does with a
 * replication batch's bytes before ClickHouse (hub/repl_apply.c): unpack
 * the protobuf Batch, check its seq order, read every upload's header
 * (typed, or the JSON header of older edges: hub_repl_header_init)
 * and decode its original with hub_repl_decode_upload (hub/repl_decode.c),
 * the function hub_repl_apply calls, with small limits.
 * Seeds: tests/fuzz/seed/fuzz_repl_batch/ (made by tests/fuzz/make_repl_seeds.py).
 * Links with: hub/repl_decode.c (tests/fuzz/run reads this line)
 */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "format.h"
#include "fuzz_limits.h"
#include "hub/repl_decode.h"
#include "proto/repl.pb-c.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	Watchtower__Repl__Batch *b = watchtower__repl__batch__unpack(NULL, size, data);
	wt_limits lim;

	if (!b)
		return 0;
	fuzz_limits(&lim);
	for (size_t i = 0; i < b->n_uploads; i++) {
		const Watchtower__Repl__Upload *u = b->uploads[i];
		uint64_t seq = u->seq;
		json_t *js = NULL;
		hub_repl_header h;
		wt_profile *p = NULL;
		wt_format det;
		wt_err e = {0, ""};

		if (seq < b->first_seq || seq > b->last_seq || (i && seq <= b->uploads[i - 1]->seq))
			break; /* hub_repl_apply refuses the batch */
		if (hub_repl_header_init(u, &js, &h)) {
			json_decref(js);
			break; /* hub_repl_apply refuses the batch */
		}
		if (u->original.len && hub_repl_decode_upload(u, &h, &lim, &p, &det, &e) == 0) {
			if (!p)
				abort();
			wt_profile_free(p);
		}
		json_decref(js);
	}
	watchtower__repl__batch__free_unpacked(b, NULL);
	return 0;
}
