/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * World map: who is in the world and where (dprpc_agent_conf.world).
 *
 *     # comment
 *     NAME RANK MAC IPV4 UDP_PORT
 *
 * Entries are separated by newlines or ';'.  "@path" reads the map from a
 * file.  Ranks must be exactly 0..n-1; names, MACs and IPv4:port pairs are
 * unique.  Errors name the entry that is wrong.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dp_wire.h"

#define DP_WORLD_FILE_MAX (64 * 1024)

static int
dp_world_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int
dp_world_entry(char *line, unsigned int lineno, struct dp_world *world, bool *seen, char *err,
	size_t errlen)
{
	char name[64], mac[32], ip[32], extra[2];
	unsigned long rank, port;
	char rank_s[16], port_s[16], *end;
	struct dp_world_entry *e;
	struct in_addr in;
	int n;

	n = sscanf(line, "%63s %15s %31s %31s %15s %1s", name, rank_s, mac, ip, port_s, extra);
	if (n != 5)
		return dp_world_err(
			err, errlen, "world entry %u: want 'NAME RANK MAC IPV4 UDP_PORT'", lineno);
	if (strlen(name) >= DPRPC_NAME_MAX)
		return dp_world_err(err, errlen, "world entry %u: name longer than %d bytes",
			lineno, DPRPC_NAME_MAX - 1);
	errno = 0;
	rank = strtoul(rank_s, &end, 10);
	if (errno != 0 || *end != '\0' || !isdigit((unsigned char)rank_s[0]) ||
		rank >= DPRPC_MAX_WORKERS)
		return dp_world_err(err, errlen, "world entry %u: bad rank '%s' (0..%d)", lineno,
			rank_s, DPRPC_MAX_WORKERS - 1);
	if (seen[rank])
		return dp_world_err(
			err, errlen, "world entry %u: rank %lu given twice", lineno, rank);
	e = &world->w[rank];
	if (rte_ether_unformat_addr(mac, &e->addr.mac) != 0)
		return dp_world_err(err, errlen, "world entry %u: bad MAC '%s'", lineno, mac);
	if (inet_pton(AF_INET, ip, &in) != 1)
		return dp_world_err(
			err, errlen, "world entry %u: bad IPv4 address '%s'", lineno, ip);
	errno = 0;
	port = strtoul(port_s, &end, 10);
	if (errno != 0 || *end != '\0' || !isdigit((unsigned char)port_s[0]) || port == 0 ||
		port > UINT16_MAX)
		return dp_world_err(
			err, errlen, "world entry %u: bad UDP port '%s'", lineno, port_s);
	memcpy(e->name, name, strlen(name) + 1); /* length checked above */
	e->addr.ip = in.s_addr;
	e->addr.port = rte_cpu_to_be_16((uint16_t)port);
	seen[rank] = true;
	world->n++;
	return 0;
}

static int
dp_world_check(struct dp_world *world, const bool *seen, char *err, size_t errlen)
{
	unsigned int i, j;

	if (world->n == 0)
		return dp_world_err(err, errlen, "world map has no worker");
	for (i = 0; i < world->n; i++)
		if (!seen[i])
			return dp_world_err(err, errlen,
				"world map: ranks must be 0..%u, rank %u is missing", world->n - 1,
				i);
	for (i = 0; i < world->n; i++) {
		for (j = i + 1; j < world->n; j++) {
			const struct dp_world_entry *a = &world->w[i], *b = &world->w[j];

			if (strcmp(a->name, b->name) == 0)
				return dp_world_err(
					err, errlen, "world map: name '%s' given twice", a->name);
			if (a->addr.ip == b->addr.ip && a->addr.port == b->addr.port)
				return dp_world_err(err, errlen,
					"world map: '%s' and '%s' share an IPv4 address and port",
					a->name, b->name);
		}
		world->addrs[i] = world->w[i].addr;
	}
	return 0;
}

static char *
dp_world_read_file(const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	char *text;
	size_t n;

	if (f == NULL) {
		snprintf(err, errlen, "world map file '%s': %s", path, strerror(errno));
		return NULL;
	}
	text = malloc(DP_WORLD_FILE_MAX + 1);
	if (text == NULL) {
		fclose(f);
		snprintf(err, errlen, "world map file '%s': out of memory", path);
		return NULL;
	}
	n = fread(text, 1, DP_WORLD_FILE_MAX + 1, f);
	fclose(f);
	if (n > DP_WORLD_FILE_MAX) {
		free(text);
		snprintf(err, errlen, "world map file '%s' is larger than %d bytes", path,
			DP_WORLD_FILE_MAX);
		return NULL;
	}
	text[n] = '\0';
	return text;
}

int
dp_world_parse(const char *spec, struct dp_world *world, char *err, size_t errlen)
{
	bool seen[DPRPC_MAX_WORKERS] = {false};
	unsigned int lineno = 0;
	char *text, *line, *save = NULL, *hash;
	int rc = 0;

	memset(world, 0, sizeof(*world));
	if (spec == NULL)
		return dp_world_err(err, errlen, "no world map given");
	if (spec[0] == '@') {
		text = dp_world_read_file(spec + 1, err, errlen);
		if (text == NULL)
			return -EINVAL;
	} else {
		text = strdup(spec);
		if (text == NULL)
			return -ENOMEM;
	}
	for (line = strtok_r(text, ";\n", &save); line != NULL;
		line = strtok_r(NULL, ";\n", &save)) {
		lineno++;
		hash = strchr(line, '#');
		if (hash != NULL)
			*hash = '\0';
		if (line[strspn(line, " \t\r")] == '\0')
			continue;
		if (world->n == DPRPC_MAX_WORKERS) {
			rc = dp_world_err(err, errlen, "world map has more than %d workers",
				DPRPC_MAX_WORKERS);
			break;
		}
		rc = dp_world_entry(line, lineno, world, seen, err, errlen);
		if (rc != 0)
			break;
	}
	free(text);
	if (rc == 0)
		rc = dp_world_check(world, seen, err, errlen);
	return rc;
}
