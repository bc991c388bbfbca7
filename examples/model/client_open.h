/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * digits_client's open loop and rate sweep (client_open.c): the options
 * after the client's own "--", and the run on a connected agent.
 */
#ifndef MODEL_CLIENT_OPEN_H
#define MODEL_CLIENT_OPEN_H

#include <dprpc/dprpc.h>

#include "digits.h"

struct perf_opts;

/* argv[1] is open or sweep, then dprpc-perf's options for them (argv[0]
 * is not read).  0, or -EINVAL (said why on stderr). */
int digits_open_parse(int argc, char **argv, struct perf_opts *o);
/* The calls in flight at most: the agent's max_outstanding must allow
 * them. */
unsigned int digits_open_inflight(void);
/* The open run or the sweep against worker @to (digits.classify), the
 * test split @t; reports on stdout.  0; -EPROTO (an answer unlike the
 * offline model's, malformed, or the accuracy not the offline one);
 * another negative errno when it could not run. */
int digits_open(struct dprpc_agent *a, unsigned int to, const struct digits_test *t,
	const struct perf_opts *o, const char *name);

#endif /* MODEL_CLIENT_OPEN_H */
