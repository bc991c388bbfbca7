/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared by rref/'s files (never installed, not exported).
 */
#ifndef RR_INTERNAL_H
#define RR_INTERNAL_H

#include <stdbool.h>

#include "dp_ext.h"
#include "rr_ext.h"

struct rr_ctx;

/* The agent's RRef context, NULL if it has none.  Any thread. */
static inline struct rr_ctx *
rr_ctx_of(const struct dprpc_agent *a)
{
	return dp_ext_state(a, &rr_extension);
}

/* cds_lfht_for_each_entry() takes container_of() of the NULL node that
 * ends a walk (undefined behaviour: UBSan reports it under the fuzzer);
 * this walks the nodes and converts only real ones. */
#define rr_for_each_entry(ht, iter, pos, member)                                               \
	for (cds_lfht_first(ht, iter); cds_lfht_iter_get_node(iter) != NULL &&                 \
				       ((pos) = caa_container_of(cds_lfht_iter_get_node(iter), \
						__typeof__(*(pos)), member),                   \
				       1);                                                     \
		cds_lfht_next(ht, iter))

#endif /* RR_INTERNAL_H */
