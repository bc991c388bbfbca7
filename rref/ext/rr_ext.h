/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the library's composition (lib/extensions.c) sees of rref/: the
 * extension that gives every agent its RRef contexts.  Never installed.
 */
#ifndef RR_EXT_H
#define RR_EXT_H

#include "dp_ext.h"

extern const struct dp_ext_ops rr_extension;

#endif /* RR_EXT_H */
