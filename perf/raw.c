/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The raw floor: the port echoing frames of a dprpc frame's size without
 * dprpc, the server bouncing whatever it receives and the client keeping
 * --window frames in flight, each stamped with its send time.  What dprpc
 * costs is measured against this.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include "perf.h"

#define PERF_HDRS (14 + 20 + 8 + 40) /* a dprpc frame's headers */

static struct rte_mempool *
raw_port_setup(uint16_t port)
{
	struct rte_eth_conf conf;
	struct rte_mempool *mp;

	mp = rte_pktmbuf_pool_create(
		"perf_raw", 8191, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE, rte_socket_id());
	memset(&conf, 0, sizeof(conf));
	if (mp == NULL || rte_eth_dev_configure(port, 1, 1, &conf) != 0 ||
		rte_eth_rx_queue_setup(port, 0, 1024, rte_socket_id(), NULL, mp) != 0 ||
		rte_eth_tx_queue_setup(port, 0, 1024, rte_socket_id(), NULL) != 0 ||
		rte_eth_dev_start(port) != 0)
		return NULL;
	return mp;
}

int
perf_raw_server(uint16_t port)
{
	struct rte_mbuf *pkts[32];
	uint16_t n, sent;

	if (raw_port_setup(port) == NULL)
		return -EIO;
	while (!perf_stop) {
		n = rte_eth_rx_burst(port, 0, pkts, 32);
		if (n == 0)
			continue;
		sent = rte_eth_tx_burst(port, 0, pkts, n);
		while (sent < n)
			rte_pktmbuf_free(pkts[sent++]);
	}
	rte_eth_dev_stop(port);
	return 0;
}

static int
wait_link(uint16_t port)
{
	struct rte_eth_link link;
	int i;

	for (i = 0; i < 20000; i++) {
		if (rte_eth_link_get_nowait(port, &link) == 0 && link.link_status)
			return 0;
		usleep(1000);
	}
	return -ETIMEDOUT;
}

/* Send up to @n frames of @size bytes in one burst, each stamped with its
 * send time; returns how many left. */
static unsigned int
raw_send(uint16_t port, struct rte_mempool *mp, unsigned int size, unsigned int n)
{
	struct rte_mbuf *ms[32];
	uint16_t sent;
	uint64_t now;
	unsigned int i;
	uint8_t *d;

	n = RTE_MIN(n, (unsigned int)RTE_DIM(ms));
	if (n == 0 || rte_pktmbuf_alloc_bulk(mp, ms, n) != 0)
		return 0;
	now = rte_rdtsc();
	for (i = 0; i < n; i++) {
		d = (uint8_t *)rte_pktmbuf_append(ms[i], (uint16_t)size);
		memset(d, 0, 14);
		d[0] = 0x02;
		d[12] = 0x88; /* local experimental ethertype 0x88b5 */
		d[13] = 0xb5;
		memcpy(d + 14, &now, sizeof(now));
	}
	sent = rte_eth_tx_burst(port, 0, ms, (uint16_t)n);
	for (i = sent; i < n; i++)
		rte_pktmbuf_free(ms[i]);
	return sent;
}

int
perf_raw_client(uint16_t port, const struct perf_opts *o, struct perf_result *r)
{
	struct rte_mempool *mp = raw_port_setup(port);
	unsigned int size = PERF_HDRS + o->payload, inflight = 0, i;
	struct rte_mbuf *pkts[32];
	struct perf_clock k;
	uint64_t now = 0, t0;
	uint16_t n;

	if (mp == NULL || wait_link(port) != 0 || perf_clock_init(&k, o) != 0)
		return -EIO;
	if (size < 60)
		size = 60;
	while ((now = rte_rdtsc()) < k.end) {
		inflight += raw_send(port, mp, size, o->window - inflight);
		n = rte_eth_rx_burst(port, 0, pkts, 32);
		if (n == 0)
			continue;
		now = rte_rdtsc();
		for (i = 0; i < n; i++) {
			memcpy(&t0, rte_pktmbuf_mtod_offset(pkts[i], uint8_t *, 14), sizeof(t0));
			perf_clock_record(&k, t0, now);
			rte_pktmbuf_free(pkts[i]);
		}
		inflight -= RTE_MIN(inflight, (unsigned int)n);
	}
	perf_clock_finish(&k, o, r);
	perf_publish_and_hold(r);
	rte_eth_dev_stop(port);
	return 0;
}
