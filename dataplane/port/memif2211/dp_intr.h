/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Work run on the EAL interrupt thread, one job at a time, through a
 * source of the process's own that stays registered (intr.c has the
 * design and why).
 *
 * Thread context: any thread but the interrupt thread itself (there both
 * return false at once: the caller does its work in place).
 */
#ifndef DP_INTR_H
#define DP_INTR_H

#include <stdbool.h>

/* Run @fn(@arg) on the interrupt thread and wait for it: true once it ran
 * there; false if it did not and will not (no interrupt thread could be
 * reached, or it did not take the job within 5 s), and the caller runs
 * it itself.  @fn NULL: a round of the interrupt thread only. */
bool dp_intr_run(void (*fn)(void *arg), void *arg);

/* Wait until the interrupt thread has run every rebuild of its epoll set
 * asked for before this call (by registrations and unregistrations of
 * any source): two rounds.  False if it could not be reached. */
bool dp_intr_settle(void);

#endif /* DP_INTR_H */
