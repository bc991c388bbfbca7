/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Large private blocks of the process's own memory, on transparent huge
 * pages where the kernel gives them: the agent's mbuf pool when nothing
 * can DMA into it (dataplane/port/mbuf_pool.c) and the plain future pools
 * (future/future.c, the RRef futures of every agent).
 *
 * Why.  Such a block is made at every agent's creation and freed at every
 * teardown.  From malloc() or the EAL heap it is 4 KiB pages: thousands of
 * page faults to make it, thousands of pages to give back (and the EAL
 * heap zeroes an element it frees, a memset of the whole block).  Mapped
 * 2 MiB-aligned with MADV_HUGEPAGE it is a few huge pages each way; the
 * kernel zeroes them, so no memset is needed to make it either.
 *
 * Thread context: any thread.  No state.
 */
#ifndef DPRPC_HUGEMAP_H
#define DPRPC_HUGEMAP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>

/* Huge pages are this big on x86-64; blocks are aligned to it. */
#define DPRPC_HUGEMAP_ALIGN ((size_t)2 << 20)

/* @len bytes of zeroed memory, DPRPC_HUGEMAP_ALIGN-aligned; its mapped
 * length (@len rounded up), to give to dprpc_hugemap_free(), in @map_len.
 * NULL if it cannot be mapped. */
static inline void *
dprpc_hugemap_alloc(size_t len, size_t *map_len)
{
	size_t head;
	uint8_t *p;

	len = (len + DPRPC_HUGEMAP_ALIGN - 1) & ~(DPRPC_HUGEMAP_ALIGN - 1);
	p = mmap(NULL, len + DPRPC_HUGEMAP_ALIGN, PROT_READ | PROT_WRITE,
		MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	/* Keep an aligned range of len bytes; unmap the slack either side. */
	head = (DPRPC_HUGEMAP_ALIGN - ((uintptr_t)p & (DPRPC_HUGEMAP_ALIGN - 1))) &
	       (DPRPC_HUGEMAP_ALIGN - 1);
	if (head > 0)
		munmap(p, head);
	munmap(p + head + len, DPRPC_HUGEMAP_ALIGN - head);
	/* A hint: a kernel without transparent huge pages refuses it, and
	 * the block is 4 KiB pages as from malloc(). */
	(void)madvise(p + head, len, MADV_HUGEPAGE);
	*map_len = len;
	return p + head;
}

static inline void
dprpc_hugemap_free(void *p, size_t map_len)
{
	if (p != NULL)
		munmap(p, map_len);
}

#endif /* DPRPC_HUGEMAP_H */
