/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * World map: who is in the world and where (dprpc_agent_conf.world).
 *
 *     # comment
 *     NAME RANK MAC IPV4 UDP_PORT
 *     NAME RANK IPV4 UDP_PORT
 *     subnet IPV4/LEN [via GATEWAY]
 *     link NAME NAME memif:SOCKET_PATH
 *     mesh memif:DIR
 *
 *     NAME RANK
 *
 * Entries are separated by newlines or ';'.  "@path" reads the map from a
 * file.  Ranks must be exactly 0..n-1; names and IPv4:port pairs are
 * unique.  Errors name the entry that is wrong.
 *
 * A worker line without a MAC is resolved by ARP (its MAC left zero,
 * base/arp.c); "subnet" lines give a worker in that subnet its prefix
 * length and gateway.
 * "link" and "mesh" lines say which memif link reaches whom, anyone else
 * is reached through the default port; "NAME RANK" is a worker only memif
 * links reach, its address made from its rank (dp_world_derive()).  See
 * docs/worlds.md, "Which port reaches whom".
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

/* A worker's name and address (@name checked for length) into @e. */
static int
dp_world_addr(const char *name, const char *mac, const char *ip, const char *port_s,
	unsigned int lineno, struct dp_world_entry *e, char *err, size_t errlen)
{
	unsigned long port;
	struct in_addr in;
	char *end;

	if (mac == NULL)
		memset(&e->addr.mac, 0, sizeof(e->addr.mac)); /* found by ARP */
	else if (rte_ether_unformat_addr(mac, &e->addr.mac) != 0)
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
	memcpy(e->name, name, strlen(name) + 1); /* length checked by the caller */
	e->addr.ip = in.s_addr;
	e->addr.port = rte_cpu_to_be_16((uint16_t)port);
	return 0;
}

/* The address of a worker line without one, made from its rank: MAC
 * 02:64:00:00:00:R, IPv4 127.100.0.R, UDP port 7000, R = rank + 1 (the
 * MAC's byte in hex).  Frames that carry it travel on memif links only;
 * the kernel never sees them. */
static void
dp_world_derive(unsigned int rank, const char *name, struct dp_world_entry *e)
{
	const uint8_t mac[RTE_ETHER_ADDR_LEN] = {0x02, 0x64, 0, 0, 0, (uint8_t)(rank + 1)};

	memcpy(e->name, name, strlen(name) + 1); /* length checked by the caller */
	memcpy(e->addr.mac.addr_bytes, mac, sizeof(mac));
	e->addr.ip = rte_cpu_to_be_32(RTE_IPV4(127, 100, 0, rank + 1));
	e->addr.port = rte_cpu_to_be_16(DP_WORLD_DERIVED_PORT);
}

static int
dp_world_entry(char *line, unsigned int lineno, struct dp_world *world, bool *seen, bool *no_addr,
	char *err, size_t errlen)
{
	char name[64], mac[32], ip[32], extra[2];
	unsigned long rank;
	char rank_s[16], port_s[16], *end;
	const char *mac_p, *ip_p, *port_p;
	struct dp_world_entry *e;
	int n, rc;

	n = sscanf(line, "%63s %15s %31s %31s %15s %1s", name, rank_s, mac, ip, port_s, extra);
	if (n != 5 && n != 4 && n != 2)
		return dp_world_err(err, errlen,
			"world entry %u: want 'NAME RANK MAC IPV4 UDP_PORT', 'NAME RANK IPV4 "
			"UDP_PORT' (MAC found by ARP), or 'NAME RANK' for a worker only memif "
			"links reach",
			lineno);
	/* Four words: no MAC, the third is the address. */
	mac_p = n == 4 ? NULL : mac;
	ip_p = n == 4 ? mac : ip;
	port_p = n == 4 ? ip : port_s;
	if (strlen(name) >= DPRPC_NAME_MAX)
		return dp_world_err(err, errlen, "world entry %u: name longer than %d bytes",
			lineno, DPRPC_NAME_MAX - 1);
	if (strcmp(rank_s, "-") == 0) {
		/* A worker that joins a running world (join.c): its own
		 * line, no rank until it joins. */
		if (world->joiner)
			return dp_world_err(err, errlen,
				"world entry %u: only one worker without a rank (\"-\")", lineno);
		if (n == 2)
			return dp_world_err(err, errlen,
				"world entry %u: worker '%s' joins (rank \"-\"): it needs its "
				"IPV4 and UDP_PORT",
				lineno, name);
		world->joiner = true;
		return dp_world_addr(name, mac_p, ip_p, port_p, lineno, &world->self, err, errlen);
	}
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
	if (n == 2) {
		dp_world_derive((unsigned int)rank, name, e);
		no_addr[rank] = true;
	} else {
		rc = dp_world_addr(name, mac_p, ip_p, port_p, lineno, e, err, errlen);
		if (rc != 0)
			return rc;
	}
	seen[rank] = true;
	world->n++;
	return 0;
}

static int
dp_world_check(struct dp_world *world, const bool *seen, char *err, size_t errlen)
{
	unsigned int i, j;

	if (world->joiner) {
		/* It learns the world when it joins. */
		if (world->n != 0 || world->nb_links != 0)
			return dp_world_err(err, errlen,
				"world map: a worker without a rank (\"-\", joining) has only "
				"its own line, and the world's mesh and subnet lines if it has "
				"them");
		return 0;
	}
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

/* The names of a link line, resolved once every worker is known. */
struct dp_link_names {
	char a[64], b[64];
	unsigned int lineno;
};

/* "memif:PATH" into @path; false if it is not one or too long. */
static bool
dp_world_memif(const char *spec, char *path)
{
	size_t n;

	if (strncmp(spec, "memif:", 6) != 0)
		return false;
	n = strlen(spec + 6);
	if (n == 0 || n >= DP_SOCK_PATH_MAX)
		return false;
	memcpy(path, spec + 6, n + 1);
	return true;
}

/* "subnet IPV4/LEN [via GATEWAY]": 1, or -EINVAL. */
static int
dp_world_subnet(
	const char *line, unsigned int lineno, struct dp_world *world, char *err, size_t errlen)
{
	char word[8], net_s[32], via[8], gw_s[32], extra[2], *slash, *end;
	struct dp_world_subnet *sn;
	struct in_addr in;
	unsigned long len;
	int n;

	n = sscanf(line, "%7s %31s %7s %31s %1s", word, net_s, via, gw_s, extra);
	if ((n != 2 && n != 4) || (n == 4 && strcmp(via, "via") != 0))
		return dp_world_err(err, errlen,
			"world entry %u: want 'subnet IPV4/LEN [via GATEWAY]'", lineno);
	if (world->nb_subnets == DP_WORLD_SUBNETS_MAX)
		return dp_world_err(err, errlen, "world entry %u: more than %d subnet lines",
			lineno, DP_WORLD_SUBNETS_MAX);
	sn = &world->subnets[world->nb_subnets];
	slash = strchr(net_s, '/');
	if (slash == NULL)
		return dp_world_err(
			err, errlen, "world entry %u: subnet '%s' has no /LEN", lineno, net_s);
	*slash = '\0';
	errno = 0;
	len = strtoul(slash + 1, &end, 10);
	if (errno != 0 || *end != '\0' || !isdigit((unsigned char)slash[1]) || len > 32)
		return dp_world_err(err, errlen, "world entry %u: bad prefix length '%s' (0..32)",
			lineno, slash + 1);
	if (inet_pton(AF_INET, net_s, &in) != 1)
		return dp_world_err(
			err, errlen, "world entry %u: bad IPv4 address '%s'", lineno, net_s);
	sn->len = (uint8_t)len;
	sn->mask = dp_prefix_mask(sn->len);
	sn->net = in.s_addr & sn->mask;
	sn->gw = 0;
	if (n == 4) {
		if (inet_pton(AF_INET, gw_s, &in) != 1 || in.s_addr == 0)
			return dp_world_err(
				err, errlen, "world entry %u: bad gateway '%s'", lineno, gw_s);
		if ((in.s_addr & sn->mask) != sn->net)
			return dp_world_err(err, errlen,
				"world entry %u: gateway %s is not in subnet %s/%lu", lineno, gw_s,
				net_s, len);
		sn->gw = in.s_addr;
	}
	world->nb_subnets++;
	return 1;
}

/* A "link", "mesh" or "subnet" line: 1 if @line is one (0 if it is a
 * worker entry), or -EINVAL. */
static int
dp_world_directive(char *line, unsigned int lineno, struct dp_world *world,
	struct dp_link_names *names, char *err, size_t errlen)
{
	char word[8], a[64], b[64], spec[160], extra[2];
	struct dp_world_link *l;
	int n;

	if (sscanf(line, "%7s", word) != 1 ||
		(strcmp(word, "link") != 0 && strcmp(word, "mesh") != 0 &&
			strcmp(word, "subnet") != 0))
		return 0;
	if (strcmp(word, "subnet") == 0)
		return dp_world_subnet(line, lineno, world, err, errlen);
	if (strcmp(word, "mesh") == 0) {
		n = sscanf(line, "%7s %159s %1s", word, spec, extra);
		if (n != 2 || !dp_world_memif(spec, world->mesh_dir))
			return dp_world_err(err, errlen,
				"world entry %u: want 'mesh memif:DIR' (DIR under %d bytes)",
				lineno, DP_SOCK_PATH_MAX);
		return 1;
	}
	n = sscanf(line, "%7s %63s %63s %159s %1s", word, a, b, spec, extra);
	if (world->nb_links == DP_WORLD_LINKS_MAX)
		return dp_world_err(err, errlen,
			"world entry %u: more than %d link lines (use 'mesh memif:DIR')", lineno,
			DP_WORLD_LINKS_MAX);
	l = &world->links[world->nb_links];
	if (n != 4 || !dp_world_memif(spec, l->path))
		return dp_world_err(err, errlen,
			"world entry %u: want 'link NAME NAME memif:SOCKET_PATH' (path under %d "
			"bytes)",
			lineno, DP_SOCK_PATH_MAX);
	memcpy(names[world->nb_links].a, a, sizeof(a));
	memcpy(names[world->nb_links].b, b, sizeof(b));
	names[world->nb_links].lineno = lineno;
	world->nb_links++;
	return 1;
}

static int
dp_world_rank_of(const struct dp_world *world, const char *name)
{
	unsigned int i;

	for (i = 0; i < world->n; i++)
		if (strcmp(world->w[i].name, name) == 0)
			return (int)i;
	return -1;
}

/* Resolve the link lines' names; every pair at most once. */
static int
dp_world_links_check(
	struct dp_world *world, const struct dp_link_names *names, char *err, size_t errlen)
{
	unsigned int i, j;

	for (i = 0; i < world->nb_links; i++) {
		int a = dp_world_rank_of(world, names[i].a),
		    b = dp_world_rank_of(world, names[i].b);

		if (a < 0 || b < 0 || a == b)
			return dp_world_err(err, errlen,
				"world entry %u: link between '%s' and '%s': two different workers "
				"of the map",
				names[i].lineno, names[i].a, names[i].b);
		world->links[i].a = (uint16_t)a;
		world->links[i].b = (uint16_t)b;
		for (j = 0; j < i; j++)
			if ((world->links[j].a == a && world->links[j].b == b) ||
				(world->links[j].a == b && world->links[j].b == a))
				return dp_world_err(err, errlen,
					"world entry %u: '%s' and '%s' are linked twice",
					names[i].lineno, names[i].a, names[i].b);
	}
	return 0;
}

/* Every worker without an address of its own must be reached by memif
 * links alone: by the mesh, or by a link line from every other worker. */
static int
dp_world_memif_only(const struct dp_world *world, const bool *no_addr, char *err, size_t errlen)
{
	unsigned int x, y, i;
	bool linked;

	if (world->mesh_dir[0] != '\0')
		return 0;
	for (x = 0; x < world->n; x++) {
		if (!no_addr[x])
			continue;
		for (y = 0; y < world->n; y++) {
			if (y == x)
				continue;
			linked = false;
			for (i = 0; i < world->nb_links && !linked; i++)
				linked = (world->links[i].a == x && world->links[i].b == y) ||
					 (world->links[i].a == y && world->links[i].b == x);
			if (!linked)
				return dp_world_err(err, errlen,
					"world map: worker '%s' has no address, but no link joins "
					"it to '%s', which would reach it through the default "
					"port: "
					"give '%s' its MAC, IPV4 and UDP_PORT, or a link or mesh "
					"line",
					world->w[x].name, world->w[y].name, world->w[x].name);
		}
	}
	return 0;
}

/* A memif link carries frames as they were made: both its ends need a MAC
 * (only the default port's frames find theirs by ARP). */
static int
dp_world_links_have_macs(const struct dp_world *world, char *err, size_t errlen)
{
	unsigned int i, x;

	for (x = 0; x < world->n; x++) {
		bool linked = world->mesh_dir[0] != '\0' && world->n > 1;

		if (!rte_is_zero_ether_addr(&world->w[x].addr.mac))
			continue;
		for (i = 0; i < world->nb_links && !linked; i++)
			linked = world->links[i].a == x || world->links[i].b == x;
		if (linked)
			return dp_world_err(err, errlen,
				"world map: worker '%s' has no MAC, but a memif link reaches it: "
				"give it its MAC (only the default port finds MACs by ARP)",
				world->w[x].name);
	}
	return 0;
}

int
dp_world_link_of(const struct dp_world *world, unsigned int self, unsigned int peer, char *path,
	bool *server, char *err, size_t errlen)
{
	unsigned int i, lo, hi;
	int n;

	for (i = 0; i < world->nb_links; i++) {
		const struct dp_world_link *l = &world->links[i];

		if ((l->a == self && l->b == peer) || (l->a == peer && l->b == self)) {
			memcpy(path, l->path, DP_SOCK_PATH_MAX);
			*server = l->a == self;
			return 1;
		}
	}
	if (world->mesh_dir[0] == '\0' || self == peer)
		return 0;
	lo = RTE_MIN(self, peer);
	hi = RTE_MAX(self, peer);
	n = snprintf(path, DP_SOCK_PATH_MAX, "%s/%s-%s.sock", world->mesh_dir, world->w[lo].name,
		world->w[hi].name);
	if (n < 0 || n >= DP_SOCK_PATH_MAX)
		return dp_world_err(err, errlen,
			"world map: mesh socket of '%s' and '%s' longer than %d bytes",
			world->w[lo].name, world->w[hi].name, DP_SOCK_PATH_MAX - 1);
	*server = self == lo;
	return 1;
}

int
dp_world_parse_member(const char *spec, struct dp_world_entry *e, char *err, size_t errlen)
{
	char name[64], mac[32], ip[32], port_s[16], extra[2];
	int n = spec == NULL
			? 0
			: sscanf(spec, "%63s %31s %31s %15s %1s", name, mac, ip, port_s, extra);

	if (n != 4 && n != 3)
		return dp_world_err(err, errlen,
			"member: want 'NAME MAC IPV4 UDP_PORT', or 'NAME IPV4 UDP_PORT' (MAC "
			"found by ARP)");
	if (strlen(name) >= DPRPC_NAME_MAX)
		return dp_world_err(
			err, errlen, "member: name longer than %d bytes", DPRPC_NAME_MAX - 1);
	if (n == 3)
		return dp_world_addr(name, NULL, mac, ip, 0, e, err, errlen);
	return dp_world_addr(name, mac, ip, port_s, 0, e, err, errlen);
}

int
dp_world_subnet_of(const struct dp_world *world, rte_be32_t ip, uint8_t *len, rte_be32_t *gw)
{
	unsigned int i;
	int best = -1;

	/* The longest prefix holding @ip. */
	for (i = 0; i < world->nb_subnets; i++)
		if ((ip & world->subnets[i].mask) == world->subnets[i].net &&
			(best < 0 || world->subnets[i].len > world->subnets[best].len))
			best = (int)i;
	if (best < 0)
		return 0;
	*len = world->subnets[best].len;
	*gw = world->subnets[best].gw;
	return 1;
}

int
dp_world_parse(const char *spec, struct dp_world *world, char *err, size_t errlen)
{
	struct dp_link_names *names;
	bool seen[DPRPC_MAX_WORKERS] = {false}, no_addr[DPRPC_MAX_WORKERS] = {false};
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
	names = calloc(DP_WORLD_LINKS_MAX, sizeof(*names));
	if (names == NULL) {
		free(text);
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
		rc = dp_world_directive(line, lineno, world, names, err, errlen);
		if (rc < 0)
			break;
		if (rc == 1) {
			rc = 0;
			continue;
		}
		if (world->n == DPRPC_MAX_WORKERS) {
			rc = dp_world_err(err, errlen, "world map has more than %d workers",
				DPRPC_MAX_WORKERS);
			break;
		}
		rc = dp_world_entry(line, lineno, world, seen, no_addr, err, errlen);
		if (rc != 0)
			break;
	}
	free(text);
	if (rc == 0)
		rc = dp_world_check(world, seen, err, errlen);
	if (rc == 0)
		rc = dp_world_links_check(world, names, err, errlen);
	if (rc == 0)
		rc = dp_world_memif_only(world, no_addr, err, errlen);
	if (rc == 0)
		rc = dp_world_links_have_macs(world, err, errlen);
	free(names);
	return rc;
}
