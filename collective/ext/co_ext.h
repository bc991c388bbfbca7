/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the library's composition (lib/extensions.c) sees of collective/:
 * the extension that gives every agent its collective leader table and
 * the reserved handler "dprpc.coll.gather".  Never installed.
 */
#ifndef CO_EXT_H
#define CO_EXT_H

#include "dp_ext.h"

extern const struct dp_ext_ops co_extension;

#endif /* CO_EXT_H */
