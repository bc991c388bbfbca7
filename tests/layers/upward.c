/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A file of the base layer that includes a header of the rpc layer, above
 * it: it must not compile (scripts/check_layers.py upward, the meson test
 * layers_upward_include).  Compiled with the flags of dataplane/base/'s
 * files; never part of the library.
 */
#include "dp_base.h"
#include "dp_rpc.h"

int dp_layers_upward(struct dp_rpc *r);

int
dp_layers_upward(struct dp_rpc *r)
{
	return r->b.rank;
}
