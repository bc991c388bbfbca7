/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The store: PyTorch's env:// rendezvous, reduced to what a world map
 * needs.  Rank 0 listens on TCP; each other rank connects and sends one
 * line, "dprpc-store 1 RANK WORLD_SIZE NAME\n"; when every rank has come,
 * rank 0 sends each "OK\n" and the world map, and closes.  A connection
 * that sends anything else is closed and counted; one that repeats a
 * taken rank or name is answered "ERR reason\n".  No EAL: plain sockets
 * and poll(2), bounded by the caller's timeout.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <dprpc/dprpc_launch.h>

#include "ln_internal.h"

#define ST_MAGIC    "dprpc-store 1 "
#define ST_LINE_MAX 128

unsigned long ln_store_rejected;

void
ln_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

uint64_t
ln_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

bool
ln_name_ok(const char *name)
{
	size_t n = name != NULL ? strlen(name) : 0;

	if (n == 0 || n >= DPRPC_NAME_MAX || strcmp(name, "link") == 0 || strcmp(name, "mesh") == 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			    c == '_' || c == '.' || c == ':' || c == '-'))
			return false;
	}
	return true;
}

/* Milliseconds left before @deadline (0 when past), for poll(2). */
static int
st_left_ms(uint64_t deadline)
{
	uint64_t now = ln_now_us();

	if (now >= deadline)
		return 0;
	return (deadline - now) / 1000 > INT_MAX ? INT_MAX : (int)((deadline - now + 999) / 1000);
}

static int
st_resolve(const char *host, uint16_t port, struct sockaddr_in *sa)
{
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res;

	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons(port);
	if (inet_pton(AF_INET, host, &sa->sin_addr) == 1)
		return 0;
	if (getaddrinfo(host, NULL, &hints, &res) != 0 || res == NULL)
		return -EINVAL;
	sa->sin_addr = ((struct sockaddr_in *)(void *)res->ai_addr)->sin_addr;
	freeaddrinfo(res);
	return 0;
}

/* Write all of @buf before @deadline. */
static int
st_send_all(int fd, const char *buf, size_t len, uint64_t deadline)
{
	while (len > 0) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n > 0) {
			buf += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
		struct pollfd p = {.fd = fd, .events = POLLOUT};

		if (poll(&p, 1, st_left_ms(deadline)) == 0)
			return -ETIMEDOUT;
	}
	return 0;
}

/* Read until the peer closes (or @cap - 1 bytes) before @deadline. */
static ssize_t
st_recv_all(int fd, char *buf, size_t cap, uint64_t deadline)
{
	size_t got = 0;

	while (got + 1 < cap) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int pr = poll(&p, 1, st_left_ms(deadline));

		if (pr == 0)
			return -ETIMEDOUT;
		if (pr < 0 && errno != EINTR)
			return -errno;
		if (pr < 0)
			continue;
		ssize_t n = recv(fd, buf + got, cap - 1 - got, 0);

		if (n == 0)
			break;
		if (n < 0 && errno != EINTR && errno != EAGAIN)
			return -errno;
		if (n > 0)
			got += (size_t)n;
	}
	buf[got] = '\0';
	return (ssize_t)got;
}

/* A worker line "dprpc-store 1 RANK SIZE NAME": 0, or -EPROTO. */
static int
st_parse_hello(const char *line, unsigned int *rank, unsigned int *size, char *name)
{
	char tail[ST_LINE_MAX];
	unsigned int r, s;

	if (strncmp(line, ST_MAGIC, strlen(ST_MAGIC)) != 0)
		return -EPROTO;
	if (sscanf(line + strlen(ST_MAGIC), "%u %u %127s", &r, &s, tail) != 3 || !ln_name_ok(tail))
		return -EPROTO;
	*rank = r;
	*size = s;
	memcpy(name, tail, strlen(tail) + 1); /* ln_name_ok(): under DPRPC_NAME_MAX */
	return 0;
}

/* The world map rank 0 sends: every worker by name and rank alone (only
 * memif links reach it: its address is made from its rank,
 * dprpc_agent_conf.world), and the mesh. */
static int
st_world_map(char names[][DPRPC_NAME_MAX], unsigned int n, const char *dir, char *out, size_t cap)
{
	size_t off = 0;
	int w;

	for (unsigned int r = 0; r < n; r++) {
		w = snprintf(out + off, cap - off, "%s %u\n", names[r], r);
		if (w < 0 || (size_t)w >= cap - off)
			return -ENOSPC;
		off += (size_t)w;
	}
	w = snprintf(out + off, cap - off, "mesh memif:%s\n", dir);
	if (w < 0 || (size_t)w >= cap - off)
		return -ENOSPC;
	return (int)(off + (size_t)w);
}

struct st_conn {
	int fd;
	int rank; /* -1 until its line is accepted */
	size_t len;
	char line[ST_LINE_MAX];
};

static void
st_drop(struct st_conn *c, const char *why, uint64_t deadline)
{
	if (why != NULL)
		(void)st_send_all(c->fd, why, strlen(why), deadline);
	close(c->fd);
	c->fd = -1;
}

/* Rank 0: accept the others, make the directory and the map, answer. */
static int
st_serve(int lfd, const char *name, unsigned int size, const char *run_dir, uint64_t deadline,
	char *world, size_t cap, char *err, size_t errlen)
{
	static char names[DPRPC_MAX_WORKERS][DPRPC_NAME_MAX];
	bool came[DPRPC_MAX_WORKERS];
	struct st_conn conns[DPRPC_MAX_WORKERS * 2];
	unsigned int have = 1, nconn = 0, rejected = 0;
	char dir[PATH_MAX];
	int rc = 0;

	memset(came, 0, sizeof(came));
	memset(names, 0, sizeof(names));
	snprintf(names[0], DPRPC_NAME_MAX, "%s", name);
	for (unsigned int i = 0; i < RTE_DIM_LN(conns); i++)
		conns[i].fd = -1;

	while (have < size) {
		struct pollfd p[1 + RTE_DIM_LN(conns)];
		unsigned int np = 0;

		p[np++] = (struct pollfd){.fd = lfd, .events = POLLIN};
		for (unsigned int i = 0; i < nconn; i++)
			p[np++] = (struct pollfd){.fd = conns[i].fd, .events = POLLIN};
		int pr = poll(p, np, st_left_ms(deadline));

		if (pr == 0) {
			char miss[256];
			size_t off = 0;

			miss[0] = '\0';
			for (unsigned int r = 1; r < size && off < sizeof(miss) - 8; r++)
				if (!came[r])
					off += (size_t)snprintf(miss + off, sizeof(miss) - off,
						"%s%u", off ? ", " : "", r);
			ln_err(err, errlen, "store: ranks %s did not come (%u of %u)", miss, have,
				size);
			rc = -ETIMEDOUT;
			goto out;
		}
		if (pr < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			goto out;
		}
		if ((p[0].revents & POLLIN) && nconn < RTE_DIM_LN(conns)) {
			int fd = accept(lfd, NULL, NULL);

			if (fd >= 0) {
				conns[nconn].fd = fd;
				conns[nconn].rank = -1;
				conns[nconn].len = 0;
				nconn++;
			}
		}
		for (unsigned int i = 0; i < nconn; i++) {
			struct st_conn *c = &conns[i];
			unsigned int r, s;
			char nm[DPRPC_NAME_MAX], *nl;
			ssize_t n;

			/* A worker accepted only waits for the map. */
			if (!(p[i + 1].revents & (POLLIN | POLLHUP | POLLERR)) || c->rank >= 0)
				continue;
			if (c->len + 1 >= sizeof(c->line))
				goto reject;
			n = recv(c->fd, c->line + c->len, sizeof(c->line) - 1 - c->len,
				MSG_DONTWAIT);
			if (n <= 0) {
				if (n < 0 && (errno == EAGAIN || errno == EINTR))
					continue;
				goto reject;
			}
			c->len += (size_t)n;
			c->line[c->len] = '\0';
			nl = strchr(c->line, '\n');
			if (nl == NULL)
				continue;
			*nl = '\0';
			if (st_parse_hello(c->line, &r, &s, nm) != 0 || s != size || r == 0 ||
				r >= size)
				goto reject;
			if (came[r]) {
				st_drop(c, "ERR rank taken\n", deadline);
				rejected++;
				continue;
			}
			bool dup = false;

			for (unsigned int q = 0; q < size; q++)
				dup |= names[q][0] != '\0' && strcmp(names[q], nm) == 0;
			if (dup) {
				st_drop(c, "ERR name taken\n", deadline);
				rejected++;
				continue;
			}
			came[r] = true;
			c->rank = (int)r;
			snprintf(names[r], DPRPC_NAME_MAX, "%s", nm);
			have++;
			continue;
		reject:
			st_drop(c, NULL, deadline);
			rejected++;
		}
		/* Compact: connections closed above leave the table. */
		unsigned int k = 0;

		for (unsigned int i = 0; i < nconn; i++)
			if (conns[i].fd >= 0)
				conns[k++] = conns[i];
		nconn = k;
	}

	snprintf(dir, sizeof(dir), "%s/dprpc-XXXXXX", run_dir);
	if (mkdtemp(dir) == NULL) {
		rc = -errno;
		ln_err(err, errlen, "store: cannot make %s: %s", dir, strerror(errno));
		goto out;
	}
	rc = st_world_map(names, size, dir, world, cap);
	if (rc < 0) {
		(void)rmdir(dir);
		ln_err(err, errlen, "store: the world map is longer than %zu bytes", cap);
		goto out;
	}
	for (unsigned int i = 0; i < nconn; i++) {
		/* A worker that went away meanwhile times out on its own. */
		if (conns[i].rank > 0 && st_send_all(conns[i].fd, "OK\n", 3, deadline) == 0)
			(void)st_send_all(conns[i].fd, world, (size_t)rc, deadline);
	}
out:
	for (unsigned int i = 0; i < nconn; i++)
		if (conns[i].fd >= 0)
			close(conns[i].fd);
	ln_store_rejected += rejected;
	return rc;
}

/* Any other rank: connect (again while nobody listens), say who, read. */
static int
st_join(const struct sockaddr_in *sa, const char *name, unsigned int rank, unsigned int size,
	uint64_t deadline, char *world, size_t cap, char *err, size_t errlen)
{
	char hello[ST_LINE_MAX], *buf;
	ssize_t n;
	int fd = -1, rc;

	snprintf(hello, sizeof(hello), ST_MAGIC "%u %u %s\n", rank, size, name);
	for (;;) {
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0)
			break;
		rc = -errno;
		close(fd);
		if (rc != -ECONNREFUSED && rc != -ECONNRESET && rc != -ETIMEDOUT)
			return rc;
		if (ln_now_us() >= deadline) {
			ln_err(err, errlen, "store: nobody listens on the store's address");
			return -ETIMEDOUT;
		}
		usleep(10000);
	}
	rc = st_send_all(fd, hello, strlen(hello), deadline);
	if (rc < 0)
		goto out;
	buf = malloc(cap + 3);
	if (buf == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	n = st_recv_all(fd, buf, cap + 3, deadline);
	if (n < 0) {
		rc = (int)n;
		ln_err(err, errlen, "store: rank 0 did not answer in time");
	} else if (strncmp(buf, "ERR ", 4) == 0) {
		rc = -EEXIST;
		buf[strcspn(buf, "\n")] = '\0';
		ln_err(err, errlen, "store: %s (rank %u, name %s)", buf + 4, rank, name);
	} else if (strncmp(buf, "OK\n", 3) != 0) {
		rc = -ECONNRESET;
		ln_err(err, errlen, "store: closed without a world map");
	} else if ((size_t)n - 3 + 1 > cap || (size_t)n == cap + 2) {
		rc = -ENOSPC;
	} else {
		memcpy(world, buf + 3, (size_t)n - 3 + 1);
		rc = (int)n - 3;
	}
	free(buf);
out:
	close(fd);
	return rc;
}

int
dprpc_store_rendezvous(const char *host, uint16_t port, const char *name, unsigned int rank,
	unsigned int world_size, const char *run_dir, uint64_t timeout_us, char *world, size_t cap,
	char *err, size_t errlen)
{
	uint64_t deadline = timeout_us != 0 ? ln_now_us() + timeout_us : UINT64_MAX;
	struct sockaddr_in sa;
	int lfd, rc, one = 1;

	if (host == NULL || port == 0 || !ln_name_ok(name) || world_size == 0 ||
		world_size > DPRPC_MAX_WORKERS || rank >= world_size || world == NULL || cap == 0) {
		ln_err(err, errlen, "store: bad argument");
		return -EINVAL;
	}
	if (st_resolve(host, port, &sa) != 0) {
		ln_err(err, errlen, "store: cannot resolve %s", host);
		return -EINVAL;
	}
	if (rank != 0)
		return st_join(&sa, name, rank, world_size, deadline, world, cap, err, errlen);

	if (run_dir == NULL)
		run_dir = getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp";
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0)
		return -errno;
	(void)setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(lfd, 128) != 0) {
		rc = errno == EADDRINUSE ? -EADDRINUSE : -errno;
		ln_err(err, errlen, "store: cannot listen on %s:%u: %s", host, port, strerror(-rc));
		close(lfd);
		return rc;
	}
	rc = st_serve(lfd, name, world_size, run_dir, deadline, world, cap, err, errlen);
	close(lfd);
	return rc;
}
