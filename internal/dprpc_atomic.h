/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The one place dprpc spells its atomics.
 *
 * Everything is C11 <stdatomic.h>.  Each use site carries a comment naming
 * the operation it pairs with; these wrappers only shorten the spelling and
 * make the memory order impossible to leave implicit.
 */
#ifndef DPRPC_ATOMIC_H
#define DPRPC_ATOMIC_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define dp_load_relaxed(p)     atomic_load_explicit((p), memory_order_relaxed)
#define dp_load_acquire(p)     atomic_load_explicit((p), memory_order_acquire)
#define dp_store_relaxed(p, v) atomic_store_explicit((p), (v), memory_order_relaxed)
#define dp_store_release(p, v) atomic_store_explicit((p), (v), memory_order_release)

/* Counters written by one thread and read by others: no ordering needed. */
#define dp_counter_add(p, v)   \
	atomic_store_explicit( \
		(p), atomic_load_explicit((p), memory_order_relaxed) + (v), memory_order_relaxed)

#endif /* DPRPC_ATOMIC_H */
