/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the launcher's two files share: the store (store.c) and the
 * short path to a world (launch.c).  Neither is used by another module.
 */
#ifndef LN_INTERNAL_H
#define LN_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RTE_DIM_LN(a) (sizeof(a) / sizeof((a)[0]))

/* Connections rank 0's store closed without taking them (not a worker of
 * this world, a rank or name twice): for tests.  Written by the thread
 * running the store only. */
extern unsigned long ln_store_rejected;

/* printf into @err (nothing for NULL or 0). */
void ln_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* CLOCK_MONOTONIC in microseconds. */
uint64_t ln_now_us(void);
/* A worker name the world map takes (dprpc_launch_conf.name). */
bool ln_name_ok(const char *name);

#endif /* LN_INTERNAL_H */
