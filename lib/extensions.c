/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The library's composition: the extensions every agent carries
 * (dataplane/ext/dp_ext.h).  The dataplane knows them only through this list,
 * so it never names the modules that extend it.
 */
#include <stddef.h>

#include "co_ext.h"
#include "dp_ext.h"
#include "rr_ext.h"

const struct dp_ext_ops *const dp_extensions[] = {
	&rr_extension, /* rref/: RRef contexts, the "dprpc.rref.*" handlers */
	&co_extension, /* collective/: the leader's table, "dprpc.coll.gather" */
	NULL,
};

_Static_assert(
	sizeof(dp_extensions) / sizeof(dp_extensions[0]) <= DP_EXT_MAX + 1, "raise DP_EXT_MAX");
