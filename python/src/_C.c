/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dprpc._C: the CPython extension under the dprpc package, over the
 * public C API (dprpc_launch.h, dprpc_rpc.h, dprpc_handler.h, dprpc_future.h,
 * dprpc_rref.h, dprpc_collective.h, dprpc_stream.h).
 *
 * Threads and the GIL (docs/python.md).  The agent's io lcore polls and
 * runs the inline handlers below, which never touch Python: they put the
 * request on the work queue and defer.  Python's worker threads take
 * items from the queue with the GIL released, and run the functions with
 * it held.  Every wait (a future, the queue, init, shutdown, collectives)
 * releases the GIL, in slices so that a signal (Ctrl-C) interrupts it.
 * Completion callbacks of futures run on the poller too: they only queue
 * a job for a worker thread, which calls the Python callback.
 *
 * Objects.  Future holds one reference on a dprpc_future and exports its
 * value as a buffer (no copy); Request holds an incoming request until it
 * is answered (answered with -EPROTO if dropped unanswered); RRef holds a
 * handle, released when the object goes (not after the agent that made it
 * is gone: the agent freed it).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <rte_errno.h>
#include <rte_pause.h>

#include <dprpc/dprpc.h>

/* The handlers every Python worker registers: one per kind of request. */
enum py_kind {
	K_CALL = 0,    /* func(*args, **kwargs) */
	K_REMOTE,      /* the same, its result kept as an RRef's value */
	K_RREF_CALL,   /* a method of an RRef's value (proxies) */
	K_RREF_REMOTE, /* the same, its result kept as a new RRef's value */
	K_RREF_FETCH,  /* an RRef's value, for to_here() */
	K_STREAM,      /* a generator function, its yields streamed */
	K_NB_HANDLERS,
	K_JOB = K_NB_HANDLERS, /* a Python callback to run (no request) */
	K_FREE,		       /* an owned RRef value freed: drop its object */
};

static const char *const k_names[K_NB_HANDLERS] = {
	"py.call",
	"py.remote",
	"py.rref.call",
	"py.rref.remote",
	"py.rref.fetch",
	"py.stream",
};
static uint32_t k_ids[K_NB_HANDLERS];

/* Waits release the GIL for at most this long, then check for signals. */
#define WAIT_SLICE_US 100000u
/* A worker thread spins this long on an empty queue before it sleeps. */
#define WQ_SPIN_NS     50000u
#define WQ_CAP_DEFAULT 4096u

static struct dprpc_agent *agent;
/* Bumped at every shutdown: an RRef of an older agent is not released
 * (its agent freed it).  Read and written with the GIL held. */
static uint64_t agent_gen;
/* EAL is cleaned up (at exit): memory of futures is gone with it, and a
 * Future dropped later (a cycle the collector frees last) puts nothing. */
static bool eal_down;
/* dprpc._C.Error: (code, origin, msg, retry_after_us, workers), a struct
 * dprpc_error's fields (error_args()). */
static PyObject *ErrorType;
/* pickle.loads, for Future.result(). */
static PyObject *pickle_loads;
/* The buffer an empty value is exported as. */
static char empty_buf[1];

/* --- polling: no io lcore; the threads that wait poll ----------------------
 *
 * The agent has no io lcore (eal_lcores 1): the thread that waits on a
 * future polls (the C library's way 3), an idle worker thread polls while
 * it spins for work, and a background thread polls when nobody else does,
 * napping between empty polls.  So the thread that needs a frame is the
 * one that reads it, and no thread spins when there is nothing to do.
 * dprpc_poll() is serialised by the library (-EBUSY to a second caller).
 * The gate keeps every opportunistic poll out of the agent's shutdown
 * (seq_cst: a poller counts itself in, then reads the gate; shutdown
 * closes the gate, then waits for the count to drain).
 */
#define BG_NAP_US 50
/* SPIN_YIELD: a spin loop here (a waiter, an idle worker, the background
 * poller lingering) pauses after an empty poll for its first SPIN_PAUSE_NS,
 * then yields the CPU after each.  On a machine with as many busy threads
 * as CPUs a spinner that only paused kept a runnable thread (a batching
 * thread woken by a request) off the CPU for hundreds of microseconds;
 * one that always yielded added a system call to every round trip. */
#define SPIN_PAUSE_NS 20000u
#define BG_LINGER_NS  200000u
/* The background poller keeps off while another thread polled this
 * recently (a worker between requests, a waiter). */
#define BG_APP_NS 100000u
/* A waiter polls for its future this long before it parks. */
#define WAIT_SPIN_NS 200000u

/* The gate (see above): seq_cst, a poller's increment then load pairs
 * with polling_stop()'s store then load. */
static atomic_bool poll_ok;
static atomic_uint pollers;
/* Threads polling hot now (waiting on a future, or a spinning worker):
 * the background poller stays out of their way, since a waiter that finds
 * the poll taken parks (dprpc_future_wait()) and is woken later.  A hint:
 * relaxed would do; seq_cst for simplicity off the data path. */
static atomic_uint hot;
/* Workers running Python (see busy_enter()); seq_cst, read by the pusher
 * after adding an item under wq.mu, as wq.spinning. */
static atomic_int busy;
static _Thread_local bool tl_busy; /* this thread is counted in busy */
static pthread_t bg_thread;
/* The background poller runs while set; cleared by polling_stop(), which
 * then joins the thread (the join orders everything after). */
static atomic_bool bg_run;

/* When a thread other than the background poller last polled (ns; a
 * hint, relaxed): while that is recent the background poller naps. */
static _Atomic uint64_t app_polled_ns;
static uint64_t now_ns(void);

static int
try_poll_as(bool app)
{
	int n = -1;

	atomic_fetch_add(&pollers, 1);
	if (atomic_load(&poll_ok))
		n = dprpc_poll(agent, 32);
	atomic_fetch_sub(&pollers, 1);
	if (app)
		atomic_store_explicit(&app_polled_ns, now_ns(), memory_order_relaxed);
	return n;
}

static int
try_poll(void)
{
	return try_poll_as(true);
}

static void
spin_step(uint64_t spun_ns)
{
	if (spun_ns < SPIN_PAUSE_NS)
		rte_pause();
	else
		sched_yield();
}

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void wq_rescue(void);

/* The background poller sleeps here while a thread polls hot, until a
 * spinner that gives up with its wait unfinished kicks it (bg_kick()):
 * woken every BG_NAP_US instead, it took the CPU from the very spinners
 * it made way for (each wake-up a preemption on a two-CPU machine). */
#define BG_HOT_NS 1000000u
static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool kicked;
} bg = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static void
bg_kick(void)
{
	pthread_mutex_lock(&bg.mu);
	bg.kicked = true;
	pthread_cond_signal(&bg.cv);
	pthread_mutex_unlock(&bg.mu);
}

/* Sleep up to BG_HOT_NS, or until kicked. */
static void
bg_sleep_hot(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += BG_HOT_NS;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&bg.mu);
	if (!bg.kicked)
		(void)pthread_cond_timedwait(&bg.cv, &bg.mu, &ts);
	bg.kicked = false;
	pthread_mutex_unlock(&bg.mu);
}

/* Poll while there is work, and for BG_LINGER_NS after it (the next
 * frames of a message, its credits); then nap between single polls.
 * While another thread polls hot, sleep; while one polled lately (a
 * worker between items), nap that long. */
static void *
bg_main(void *arg)
{
	uint64_t last = 0;

	/* Its naps are what a parked waiter's frame waits for: 1 us of
	 * timer slack, not the default 50 us (a 50 us nap slept 100). */
	(void)prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	while (atomic_load(&bg_run)) {
		wq_rescue();
		if (atomic_load(&hot) > 0) {
			bg_sleep_hot();
			continue;
		}
		if (now_ns() - atomic_load_explicit(&app_polled_ns, memory_order_relaxed) <=
			BG_APP_NS) {
			usleep(BG_APP_NS / 1000);
			continue;
		}
		if (try_poll_as(false) > 0) {
			last = now_ns();
			continue;
		}
		if (now_ns() - last < BG_LINGER_NS) {
			sched_yield(); /* spinners: see SPIN_YIELD */
			continue;
		}
		usleep(BG_NAP_US);
	}
	return NULL;
}

static void
busy_leave(void)
{
	if (tl_busy) {
		tl_busy = false;
		atomic_fetch_sub(&busy, 1);
	}
}

static void
busy_enter(void)
{
	if (!tl_busy) {
		tl_busy = true;
		atomic_fetch_add(&busy, 1);
	}
}

/*
 * Wait for @f up to @slice_us: poll for it (through the gate) for at most
 * WAIT_SPIN_NS, then park on it, the background poller polling meanwhile.
 * The waiter polls itself because a future need not have a progress hook
 * (an RRef's value, a combinator's): dprpc_future_wait() would then park
 * at once.  Returns as dprpc_future_wait().  Called without the GIL.
 */
static int
wait_polling(struct dprpc_future *f, uint64_t slice_us)
{
	uint64_t t0 = now_ns(), spun = 0;
	bool was_busy = tl_busy;
	int rc;

	busy_leave(); /* a worker waiting: another may run meanwhile */
	atomic_fetch_add(&hot, 1);
	while (!dprpc_future_is_done(f)) {
		if (try_poll() > 0)
			continue;
		spun = now_ns() - t0;
		if (spun > WAIT_SPIN_NS)
			break;
		spin_step(spun);
	}
	atomic_fetch_sub(&hot, 1);
	if (!dprpc_future_is_done(f))
		bg_kick(); /* it parks: the background poller polls for it */
	spun = (now_ns() - t0) / 1000;
	rc = dprpc_future_wait(f, slice_us > spun ? slice_us - spun : 1);
	if (was_busy)
		busy_enter();
	return rc;
}

/* Open the gate and start the background poller. */
static int
polling_start(void)
{
	atomic_store(&poll_ok, true);
	atomic_store(&bg_run, true);
	if (pthread_create(&bg_thread, NULL, bg_main, NULL) != 0) {
		atomic_store(&bg_run, false);
		atomic_store(&poll_ok, false);
		return -EAGAIN;
	}
	return 0;
}

/* Stop the background poller, close the gate, wait for pollers to leave. */
static void
polling_stop(void)
{
	if (atomic_exchange(&bg_run, false)) {
		bg_kick(); /* out of a hot sleep at once */
		pthread_join(bg_thread, NULL);
	}
	atomic_store(&poll_ok, false);
	while (atomic_load(&pollers) != 0)
		sched_yield();
}

/* --- the work queue: requests and callback jobs, poller -> workers ------- */

struct wq_item {
	void *p; /* a struct dprpc_request *, or a PyObject * for K_JOB */
	int kind;
};

struct wq_job {
	struct wq_job *next;
	PyObject *job; /* (callable, arg) with a reference; NULL for K_FREE */
	uint64_t key;  /* K_FREE: the key of the object whose value was freed */
};

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct wq_item *ring;
	unsigned int cap, head, n;
	struct wq_job *jobs, **jobs_tail;
	/* Items queued: written under mu, read without it by spinners
	 * (relaxed: the item itself is read under mu). */
	atomic_uint ready;
	/* One waiting thread at a time spins before it sleeps (seq_cst: the
	 * pusher reads it after adding an item under mu, the spinner clears
	 * it before taking mu to look again, so one of them sees the other). */
	atomic_bool spinning;
	unsigned int sleepers;
	bool closed;
	uint64_t last_pop_ns; /* when a worker last took an item */
	uint64_t rejected;    /* requests answered -EBUSY: the ring was full */
} wq = {
	.mu = PTHREAD_MUTEX_INITIALIZER,
	.cv = PTHREAD_COND_INITIALIZER,
};

/*
 * Worker threads running Python now (they took an item and are not in a
 * wait of this module).  A new item wakes a sleeping worker only when none
 * runs and none spins: Python threads that all run compete for the GIL,
 * and handing it back and forth per request costs more than the request.
 * A worker that blocks outside this module (time.sleep(), I/O) still
 * counts as running: the background poller wakes a sleeper for an item
 * that waited WQ_STALL_NS (wq_rescue()).  seq_cst, as spinning.
 */
#define WQ_STALL_NS 1000000u

static void
wq_wake_locked(void)
{
	if (wq.sleepers > 0 && !atomic_load(&wq.spinning) && atomic_load(&busy) == 0)
		pthread_cond_signal(&wq.cv);
}

/* A request from the poller; -EBUSY when the ring is full or closed. */
static int
wq_push_request(struct dprpc_request *req, int kind)
{
	int rc = 0;

	pthread_mutex_lock(&wq.mu);
	if (wq.closed || wq.ring == NULL || wq.n == wq.cap) {
		wq.rejected++;
		rc = -EBUSY;
	} else {
		wq.ring[(wq.head + wq.n) % wq.cap] = (struct wq_item){req, kind};
		wq.n++;
		atomic_fetch_add_explicit(&wq.ready, 1, memory_order_relaxed);
		wq_wake_locked();
	}
	pthread_mutex_unlock(&wq.mu);
	return rc;
}

/* A callback job (never refused: a future's callbacks must all run). */
static void
wq_push_job(struct wq_job *j)
{
	pthread_mutex_lock(&wq.mu);
	j->next = NULL;
	*wq.jobs_tail = j;
	wq.jobs_tail = &j->next;
	atomic_fetch_add_explicit(&wq.ready, 1, memory_order_relaxed);
	wq_wake_locked();
	pthread_mutex_unlock(&wq.mu);
}

/* Take an item if there is one (jobs first); wq.mu held. */
static bool
wq_take_locked(struct wq_item *it)
{
	if (wq.jobs != NULL) {
		struct wq_job *j = wq.jobs;

		wq.jobs = j->next;
		if (wq.jobs == NULL)
			wq.jobs_tail = &wq.jobs;
		it->p = j;
		it->kind = K_JOB;
	} else if (wq.n > 0) {
		*it = wq.ring[wq.head];
		wq.head = (wq.head + 1) % wq.cap;
		wq.n--;
	} else {
		return false;
	}
	atomic_fetch_sub_explicit(&wq.ready, 1, memory_order_relaxed);
	wq.last_pop_ns = now_ns();
	return true;
}

/* Take an item if there is one, without waiting. */
static bool
wq_take(struct wq_item *it)
{
	bool got;

	pthread_mutex_lock(&wq.mu);
	got = wq_take_locked(it);
	pthread_mutex_unlock(&wq.mu);
	return got;
}

/* Take an item, waiting up to @timeout_us (0: none); false if none came
 * or the queue is closed and empty.  Called without the GIL. */
static bool
wq_pop(struct wq_item *it, uint64_t timeout_us, bool *closed)
{
	struct timespec ts, t0;
	bool got = false, no = false;

	/* Work waiting: take it still counted busy, so that no sleeper is
	 * woken for what this thread takes next. */
	if (atomic_load_explicit(&wq.ready, memory_order_relaxed) > 0 && wq_take(it)) {
		*closed = false;
		return true;
	}
	busy_leave();
	if (atomic_compare_exchange_strong(&wq.spinning, &no, true)) {
		atomic_fetch_add(&hot, 1);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (;;) {
			if (atomic_load_explicit(&wq.ready, memory_order_relaxed) > 0)
				break;
			/* The spinning worker polls: the request it waits for is
			 * queued by its own poll. */
			if (try_poll() > 0)
				continue;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			uint64_t spun = (uint64_t)(ts.tv_sec - t0.tv_sec) * 1000000000u +
					(uint64_t)ts.tv_nsec - (uint64_t)t0.tv_nsec;

			if (spun > WQ_SPIN_NS) {
				bg_kick(); /* it sleeps: the background poller polls */
				break;
			}
			spin_step(spun);
		}
		atomic_fetch_sub(&hot, 1);
		atomic_store(&wq.spinning, false);
	}
	pthread_mutex_lock(&wq.mu);
	if (timeout_us > 0) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += (time_t)(timeout_us / 1000000u);
		ts.tv_nsec += (long)(timeout_us % 1000000u) * 1000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
	}
	while (wq.jobs == NULL && wq.n == 0 && !wq.closed) {
		int rc;

		wq.sleepers++;
		rc = timeout_us > 0 ? pthread_cond_timedwait(&wq.cv, &wq.mu, &ts)
				    : pthread_cond_wait(&wq.cv, &wq.mu);
		wq.sleepers--;
		if (rc == ETIMEDOUT)
			break;
	}
	got = wq_take_locked(it);
	*closed = wq.closed;
	pthread_mutex_unlock(&wq.mu);
	return got;
}

/* Wake a sleeping worker for items nobody took for WQ_STALL_NS: the
 * running workers are blocked where this module cannot see (busy). */
static void
wq_rescue(void)
{
	if (atomic_load_explicit(&wq.ready, memory_order_relaxed) == 0)
		return;
	pthread_mutex_lock(&wq.mu);
	if ((wq.n > 0 || wq.jobs != NULL) && wq.sleepers > 0 &&
		now_ns() - wq.last_pop_ns > WQ_STALL_NS) {
		wq.last_pop_ns = now_ns();
		pthread_cond_signal(&wq.cv);
	}
	pthread_mutex_unlock(&wq.mu);
}

/* An owned RRef value is freed (dprpc_agent_conf.rrefs.value_free): have a
 * worker thread drop the object behind it.  The value starts with the
 * package's header (flags, key: python/dprpc/_server.py, RVAL); key 0 is
 * a creation whose function raised.  Any thread; no GIL. */
static void
value_freed(const void *v, size_t len, void *arg)
{
	struct wq_job *j;
	uint64_t key;

	if (len < 16)
		return;
	memcpy(&key, (const char *)v + 8, sizeof(key));
	if (key == 0)
		return;
	j = PyMem_RawMalloc(sizeof(*j));
	if (j == NULL)
		return; /* the object stays until shutdown */
	j->job = NULL;
	j->key = key;
	wq_push_job(j);
}

/* The inline handler of every kind: queue and defer.  Runs on the poller;
 * touches no Python object. */
static int
h_queue(struct dprpc_request *req, void *arg)
{
	if (wq_push_request(req, (int)(intptr_t)arg) != 0)
		return dprpc_reply_busy(req, 1000, "python workers' queue full");
	return DPRPC_DEFERRED;
}

/* --- helpers ------------------------------------------------------------ */

/* Seconds (float; < 0: the default, 0: none) to a dprpc timeout. */
static int
timeout_arg(PyObject *o, uint64_t *us)
{
	double t;

	if (o == NULL || o == Py_None) {
		*us = DPRPC_TIMEOUT_DEFAULT;
		return 0;
	}
	t = PyFloat_AsDouble(o);
	if (t == -1.0 && PyErr_Occurred())
		return -1;
	if (t < 0)
		*us = DPRPC_TIMEOUT_DEFAULT;
	else if (t == 0)
		*us = DPRPC_TIMEOUT_NONE;
	else if (t > 1e12)
		*us = DPRPC_TIMEOUT_NONE;
	else
		*us = (uint64_t)(t * 1e6) > 0 ? (uint64_t)(t * 1e6) : 1;
	return 0;
}

/* dprpc._C.Error's args for @e; @rc stands for a code of 0 (an error the
 * call returning @rc did not fill). */
static PyObject *
error_args(const struct dprpc_error *e, int rc)
{
	return Py_BuildValue("(iIsIK)", e->code != 0 ? e->code : rc, (unsigned int)e->origin,
		e->msg, (unsigned int)e->retry_after_us, (unsigned long long)e->workers);
}

/* Raise dprpc._C.Error for @e (error_args()); returns NULL. */
static PyObject *
raise_error(const struct dprpc_error *e, int rc)
{
	PyObject *v = error_args(e, rc);

	if (v != NULL) {
		PyErr_SetObject(ErrorType, v);
		Py_DECREF(v);
	}
	return NULL;
}

static PyObject *
raise_errno(int code, const char *what)
{
	PyObject *v;

	if (code < 0)
		code = -code;
	v = Py_BuildValue("(iIsIK)", -code, (unsigned int)DPRPC_ORIGIN_LOCAL,
		what != NULL ? what : strerror(code), 0u, 0ull);
	if (v != NULL) {
		PyErr_SetObject(ErrorType, v);
		Py_DECREF(v);
	}
	return NULL;
}

static int
need_agent(void)
{
	if (agent != NULL)
		return 0;
	raise_errno(ESHUTDOWN, "RPC has not been initialized: call init_rpc() first");
	return -1;
}

/*
 * The parts of a message (a bytes-like object, or a tuple of them), held
 * in @views: as @iov for the calls that gather (parts_get_iov()), or as
 * one contiguous buffer @data for those that do not (parts_get()): the
 * part itself when single, else the parts joined on the stack or in @tmp
 * (PyMem, freed by parts_release()).
 */
#define MAX_PARTS 160
#if MAX_PARTS > DPRPC_IOV_MAX - 1
#error "a message's parts must fit one gathered call (an RRef's header takes one)"
#endif

#define PARTS_STACK 4096

struct parts {
	Py_buffer views[MAX_PARTS];
	struct iovec iov[MAX_PARTS];
	unsigned int n;
	const void *data;
	size_t len;
	void *tmp;		 /* parts joined, too long for the stack */
	char stack[PARTS_STACK]; /* parts joined (no allocation) */
};

static void
parts_release(struct parts *p)
{
	for (unsigned int i = 0; i < p->n; i++)
		PyBuffer_Release(&p->views[i]);
	PyMem_Free(p->tmp);
	p->n = 0;
	p->tmp = NULL;
}

/* Hold the parts of @o as p->iov (p->n of them, p->len bytes in all). */
static int
parts_get_iov(PyObject *o, struct parts *p)
{
	Py_ssize_t n = PyTuple_Check(o) ? PyTuple_GET_SIZE(o) : 1;

	p->n = 0;
	p->len = 0;
	p->data = NULL;
	p->tmp = NULL;
	if (n > MAX_PARTS) {
		PyErr_SetString(PyExc_ValueError, "too many message parts");
		return -1;
	}
	for (Py_ssize_t i = 0; i < n; i++) {
		PyObject *part = PyTuple_Check(o) ? PyTuple_GET_ITEM(o, i) : o;
		Py_buffer *v = &p->views[p->n];

		if (PyObject_GetBuffer(part, v, PyBUF_SIMPLE) != 0) {
			parts_release(p);
			return -1;
		}
		p->iov[p->n++] = (struct iovec){.iov_base = v->buf, .iov_len = (size_t)v->len};
		p->len += (size_t)v->len;
	}
	return 0;
}

/* Hold the parts of @o as one buffer, p->data (p->len bytes). */
static int
parts_get(PyObject *o, struct parts *p)
{
	char *dst;

	if (parts_get_iov(o, p) != 0)
		return -1;
	if (p->n == 1) {
		p->data = p->iov[0].iov_base;
		return 0;
	}
	dst = p->stack;
	if (p->len > sizeof(p->stack)) {
		p->tmp = PyMem_Malloc(p->len);
		if (p->tmp == NULL) {
			parts_release(p);
			PyErr_NoMemory();
			return -1;
		}
		dst = p->tmp;
	}
	p->data = dst;
	for (unsigned int i = 0; i < p->n; i++) {
		if (p->iov[i].iov_len == 0)
			continue;
		memcpy(dst, p->iov[i].iov_base, p->iov[i].iov_len);
		dst += p->iov[i].iov_len;
	}
	return 0;
}

static int
kind_arg(int kind)
{
	if (kind < 0 || kind >= K_NB_HANDLERS) {
		PyErr_Format(PyExc_ValueError, "bad request kind %d", kind);
		return -1;
	}
	return 0;
}

/* The arguments of a call: ([to_rank,] kind, parts[, timeout]), checked;
 * the parts held as c->p.iov until parts_release(&c->p). */
struct call_in {
	unsigned int to;
	int kind;
	uint64_t us;
	struct parts p;
};

static int rank_arg(PyObject *o, unsigned int *rank);

static int
call_in_get(PyObject *args, bool with_to, struct call_in *c)
{
	PyObject *to_o = NULL, *parts, *to = Py_None;
	int ok = with_to ? PyArg_ParseTuple(args, "OiO|O", &to_o, &c->kind, &parts, &to)
			 : PyArg_ParseTuple(args, "iO|O", &c->kind, &parts, &to);

	if (!ok || (with_to && rank_arg(to_o, &c->to) != 0) || kind_arg(c->kind) != 0 ||
		timeout_arg(to, &c->us) != 0)
		return -1;
	return parts_get_iov(parts, &c->p);
}

/* --- Future --------------------------------------------------------------- */

typedef struct {
	PyObject_HEAD struct dprpc_future *f;
} FutureObject;

static PyTypeObject FutureType;

static PyObject *
future_wrap(struct dprpc_future *f)
{
	FutureObject *o = PyObject_New(FutureObject, &FutureType);

	if (o == NULL) {
		dprpc_future_put(f);
		return NULL;
	}
	o->f = f;
	return (PyObject *)o;
}

static void
future_dealloc(FutureObject *o)
{
	if (o->f != NULL && !eal_down)
		dprpc_future_put(o->f);
	PyObject_Free(o);
}

/* Wait with the GIL released, in slices; True if complete, False if
 * @timeout passed first.  Signals interrupt it. */
static PyObject *
future_wait(FutureObject *o, PyObject *args)
{
	PyObject *to = Py_None;
	uint64_t timeout_us = 0, waited = 0;
	int rc;

	if (!PyArg_ParseTuple(args, "|O:wait", &to))
		return NULL;
	if (to != Py_None) {
		double t = PyFloat_AsDouble(to);

		if (t == -1.0 && PyErr_Occurred())
			return NULL;
		timeout_us = t <= 0 ? 1 : (uint64_t)(t * 1e6);
	}
	for (;;) {
		uint64_t slice = WAIT_SLICE_US;

		if (dprpc_future_is_done(o->f))
			Py_RETURN_TRUE;
		if (timeout_us > 0 && timeout_us - waited < slice)
			slice = timeout_us - waited;
		Py_BEGIN_ALLOW_THREADS rc = wait_polling(o->f, slice);
		Py_END_ALLOW_THREADS if (rc != -ETIMEDOUT && rc != -EDEADLK) Py_RETURN_TRUE;
		if (rc == -EDEADLK)
			return raise_errno(EDEADLK, "waiting on the polling thread");
		waited += slice;
		if (timeout_us > 0 && waited >= timeout_us)
			Py_RETURN_FALSE;
		if (PyErr_CheckSignals() != 0)
			return NULL;
	}
}

static PyObject *
future_done(FutureObject *o, PyObject *unused)
{
	return PyBool_FromLong(dprpc_future_is_done(o->f));
}

/* None while pending or done; dprpc._C.Error's args if failed. */
static PyObject *
future_error(FutureObject *o, PyObject *unused)
{
	const struct dprpc_error *e = dprpc_future_error(o->f);

	if (e == NULL)
		Py_RETURN_NONE;
	return error_args(e, e->code);
}

/* result() -> (tag, object) of a message value without out-of-band
 * buffers (its pickle loaded here, read in place); None for one with
 * them (the caller decodes it); raises Error for a failed future. */
static PyObject *
future_result(FutureObject *o, PyObject *unused)
{
	const struct dprpc_error *e = dprpc_future_error(o->f);
	const unsigned char *v;
	PyObject *mv, *obj;
	size_t len;

	if (e != NULL)
		return raise_error(e, e->code);
	v = dprpc_future_value(o->f, &len);
	if (v == NULL || len < 8 || v[1] != 0)
		Py_RETURN_NONE;
	mv = PyMemoryView_FromMemory((char *)(uintptr_t)(v + 8), (Py_ssize_t)len - 8, PyBUF_READ);
	if (mv == NULL)
		return NULL;
	obj = PyObject_CallOneArg(pickle_loads, mv);
	Py_DECREF(mv);
	if (obj == NULL)
		return NULL;
	return Py_BuildValue("(iN)", (int)v[0], obj);
}

static PyObject *
future_cancel(FutureObject *o, PyObject *unused)
{
	return PyLong_FromLong(dprpc_future_cancel(o->f));
}

/* Runs where the future completes (the poller, mostly): hand the job over. */
static void
future_cb(struct dprpc_future *f, void *arg)
{
	wq_push_job(arg);
}

/* add_done_callback(fn, arg): fn(arg) runs on a worker thread once done. */
static PyObject *
future_add_callback(FutureObject *o, PyObject *args)
{
	PyObject *fn, *arg;
	struct wq_job *j;
	int rc;

	if (!PyArg_ParseTuple(args, "OO:add_done_callback", &fn, &arg))
		return NULL;
	j = PyMem_RawMalloc(sizeof(*j));
	if (j == NULL)
		return PyErr_NoMemory();
	j->key = 0;
	j->job = PyTuple_Pack(2, fn, arg);
	if (j->job == NULL) {
		PyMem_RawFree(j);
		return NULL;
	}
	rc = dprpc_future_add_callback(o->f, future_cb, j);
	if (rc != 0) {
		Py_DECREF(j->job);
		PyMem_RawFree(j);
		return raise_errno(rc, "add_done_callback");
	}
	Py_RETURN_NONE;
}

static int
future_getbuffer(FutureObject *o, Py_buffer *view, int flags)
{
	size_t len;
	const void *v = dprpc_future_value(o->f, &len);

	if (v == NULL && dprpc_future_state(o->f) != DPRPC_FUTURE_DONE) {
		PyErr_SetString(PyExc_BufferError, "the future has no value");
		view->obj = NULL;
		return -1;
	}
	/* The value is this future's own copy, kept while the view holds the
	 * object: writable, so that arrays made over it are. */
	return PyBuffer_FillInfo(view, (PyObject *)o, v != NULL ? (void *)(uintptr_t)v : empty_buf,
		(Py_ssize_t)len, 0, flags);
}

static PyBufferProcs future_as_buffer = {.bf_getbuffer = (getbufferproc)future_getbuffer};

static PyMethodDef future_methods[] = {
	{"wait", (PyCFunction)future_wait, METH_VARARGS, "wait([timeout]) -> bool"},
	{"done", (PyCFunction)future_done, METH_NOARGS, "done() -> bool"},
	{"error", (PyCFunction)future_error, METH_NOARGS, "error() -> tuple or None"},
	{"result", (PyCFunction)future_result, METH_NOARGS, "result() -> (tag, obj) or None"},
	{"cancel", (PyCFunction)future_cancel, METH_NOARGS, "cancel() -> int"},
	{"add_done_callback", (PyCFunction)future_add_callback, METH_VARARGS,
		"add_done_callback(fn, arg)"},
	{NULL, NULL, 0, NULL},
};

static PyTypeObject FutureType = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "dprpc._C.Future",
	.tp_basicsize = sizeof(FutureObject),
	.tp_dealloc = (destructor)future_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "A dprpc future (its value is a buffer).",
	.tp_methods = future_methods,
	.tp_as_buffer = &future_as_buffer,
};

/* --- Request -------------------------------------------------------------- */

typedef struct {
	PyObject_HEAD struct dprpc_request *req; /* NULL once answered */
	uint64_t gen;
	int kind;
	Py_ssize_t exports;
} RequestObject;

static PyTypeObject RequestType;

static void
request_dealloc(RequestObject *o)
{
	/* Never leave a caller without an answer (if its agent is still there). */
	if (o->req != NULL && o->gen == agent_gen && agent != NULL)
		(void)dprpc_reply_error(o->req, -EPROTO, "request dropped unanswered");
	PyObject_Free(o);
}

static int
request_live(RequestObject *o)
{
	if (o->req != NULL)
		return 0;
	PyErr_SetString(PyExc_RuntimeError, "the request was answered already");
	return -1;
}

static int
request_getbuffer(RequestObject *o, Py_buffer *view, int flags)
{
	size_t len;
	const void *p;

	if (request_live(o) != 0) {
		view->obj = NULL;
		return -1;
	}
	p = dprpc_request_payload(o->req, &len);
	if (PyBuffer_FillInfo(view, (PyObject *)o, p != NULL ? (void *)(uintptr_t)p : empty_buf,
		    (Py_ssize_t)len, 1, flags) != 0)
		return -1;
	o->exports++;
	return 0;
}

static void
request_releasebuffer(RequestObject *o, Py_buffer *view)
{
	o->exports--;
}

static PyBufferProcs request_as_buffer = {
	.bf_getbuffer = (getbufferproc)request_getbuffer,
	.bf_releasebuffer = (releasebufferproc)request_releasebuffer,
};

static int
request_answerable(RequestObject *o)
{
	if (request_live(o) != 0)
		return -1;
	if (o->exports > 0) {
		PyErr_SetString(PyExc_BufferError, "the payload is still exported");
		return -1;
	}
	return 0;
}

static PyObject *
request_reply(RequestObject *o, PyObject *arg)
{
	struct parts p;
	int rc;

	if (request_answerable(o) != 0 || parts_get_iov(arg, &p) != 0)
		return NULL;
	if (p.len <= PARTS_STACK) { /* one frame or two, staged at once */
		rc = dprpc_reply_iov(o->req, p.iov, p.n);
	} else {
		Py_BEGIN_ALLOW_THREADS rc = dprpc_reply_iov(o->req, p.iov, p.n);
		Py_END_ALLOW_THREADS
	}
	parts_release(&p);
	if (rc == -EMSGSIZE || rc == -ENOBUFS) {
		/* Not sent, the request still held: the caller gets the error. */
		const char *why = rc == -EMSGSIZE ? "the result is longer than max_msg_size"
						  : "no buffer for the result";

		(void)dprpc_reply_error(o->req, rc, why);
		o->req = NULL;
		return raise_errno(rc, why);
	}
	o->req = NULL;
	if (rc < 0 && rc != -EALREADY)
		return raise_errno(rc, "reply");
	Py_RETURN_NONE;
}

static PyObject *
request_reply_error(RequestObject *o, PyObject *args)
{
	int code, rc;
	const char *msg;

	if (!PyArg_ParseTuple(args, "is:reply_error", &code, &msg) || request_answerable(o) != 0)
		return NULL;
	rc = dprpc_reply_error(o->req, code < 0 ? code : -code, msg);
	o->req = NULL;
	if (rc < 0 && rc != -EALREADY)
		return raise_errno(rc, "reply_error");
	Py_RETURN_NONE;
}

static PyObject *
request_reply_busy(RequestObject *o, PyObject *args)
{
	unsigned int after;
	const char *msg;
	int rc;

	if (!PyArg_ParseTuple(args, "Is:reply_busy", &after, &msg) || request_answerable(o) != 0)
		return NULL;
	rc = dprpc_reply_busy(o->req, after, msg);
	o->req = NULL;
	if (rc < 0 && rc != -EALREADY)
		return raise_errno(rc, "reply_busy");
	Py_RETURN_NONE;
}

static PyObject *
request_caller(RequestObject *o, PyObject *unused)
{
	if (request_live(o) != 0)
		return NULL;
	return PyLong_FromUnsignedLong(dprpc_request_caller(o->req));
}

/* Seconds left of the caller's deadline, or None without one. */
static PyObject *
request_remaining(RequestObject *o, PyObject *unused)
{
	uint64_t us;

	if (request_live(o) != 0)
		return NULL;
	us = dprpc_request_remaining_us(o->req);
	if (us == DPRPC_NO_DEADLINE)
		Py_RETURN_NONE;
	return PyFloat_FromDouble((double)us / 1e6);
}

static PyObject *
request_cancelled(RequestObject *o, PyObject *unused)
{
	if (request_live(o) != 0)
		return NULL;
	return PyBool_FromLong(dprpc_request_cancelled(o->req));
}

/* The RRef value a proxy request works on, as bytes (None if none). */
static PyObject *
request_rref_value(RequestObject *o, PyObject *unused)
{
	const void *v;
	size_t len;

	if (request_live(o) != 0)
		return NULL;
	v = dprpc_request_rref_value(o->req, &len);
	if (v == NULL)
		Py_RETURN_NONE;
	return PyBytes_FromStringAndSize(v, (Py_ssize_t)len);
}

/* A stream's next chunk; False when the caller's window is full. */
static PyObject *
request_stream_send(RequestObject *o, PyObject *arg)
{
	struct parts p;
	int rc;

	if (request_live(o) != 0 || parts_get(arg, &p) != 0)
		return NULL;
	/* Waits while the caller's window is full, in slices: signals are
	 * seen between them, and the caller's deadline ends the wait. */
	for (;;) {
		uint64_t left = dprpc_request_remaining_us(o->req);

		if (left == 0) {
			rc = -ETIMEDOUT;
			break;
		}
		Py_BEGIN_ALLOW_THREADS rc = dprpc_stream_send_wait(
			o->req, p.data, p.len, left < WAIT_SLICE_US ? left : WAIT_SLICE_US);
		Py_END_ALLOW_THREADS if (rc != -ETIMEDOUT) break;
		if (PyErr_CheckSignals() != 0) {
			parts_release(&p);
			return NULL;
		}
	}
	parts_release(&p);
	if (rc < 0)
		return raise_errno(rc, "stream_send");
	Py_RETURN_TRUE;
}

static PyObject *
request_stream_end(RequestObject *o, PyObject *args)
{
	int status, rc;

	if (!PyArg_ParseTuple(args, "i:stream_end", &status) || request_answerable(o) != 0)
		return NULL;
	rc = dprpc_stream_end(o->req, status);
	o->req = NULL;
	if (rc < 0)
		return raise_errno(rc, "stream_end");
	Py_RETURN_NONE;
}

/* call_args(cache, cache_max) -> (fn, args, kwargs) of a call by reference
 * (python/dprpc/_serialize.py, tag 2), or None for another message: the
 * function's pickle is looked up in dict @cache (and added while it holds
 * fewer than @cache_max), the arguments' pickle loaded in place. */
static PyObject *
request_call_args(RequestObject *o, PyObject *const *argv, Py_ssize_t argc)
{
	PyObject *key, *fn, *mv, *ak, *r;
	const uint8_t *p;
	Py_ssize_t max;
	uint32_t flen;
	size_t len;

	if (argc != 2 || !PyDict_Check(argv[0])) {
		PyErr_SetString(PyExc_TypeError, "call_args(cache: dict, cache_max: int)");
		return NULL;
	}
	max = PyLong_AsSsize_t(argv[1]);
	if ((max == -1 && PyErr_Occurred()) || request_live(o) != 0)
		return NULL;
	p = dprpc_request_payload(o->req, &len);
	if (p == NULL || len < 8 || p[0] != 2)
		Py_RETURN_NONE;
	flen = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
	if (flen > len - 8) {
		PyErr_SetString(PyExc_ValueError, "a call message shorter than its function");
		return NULL;
	}
	key = PyBytes_FromStringAndSize((const char *)p + 8, flen);
	if (key == NULL)
		return NULL;
	fn = PyDict_GetItemWithError(argv[0], key);
	if (fn != NULL) {
		Py_INCREF(fn);
	} else if (!PyErr_Occurred()) {
		fn = PyObject_CallOneArg(pickle_loads, key);
		if (fn != NULL && PyDict_GET_SIZE(argv[0]) < max &&
			PyDict_SetItem(argv[0], key, fn) != 0)
			Py_CLEAR(fn);
	}
	Py_DECREF(key);
	if (fn == NULL)
		return NULL;
	/* Loaded before the request can be answered: pickle copies out. */
	mv = PyMemoryView_FromMemory(
		(char *)(uintptr_t)(p + 8 + flen), (Py_ssize_t)(len - 8 - flen), PyBUF_READ);
	ak = mv != NULL ? PyObject_CallOneArg(pickle_loads, mv) : NULL;
	Py_XDECREF(mv);
	if (ak == NULL) {
		Py_DECREF(fn);
		return NULL;
	}
	if (!PyTuple_Check(ak) || PyTuple_GET_SIZE(ak) != 2) {
		Py_DECREF(fn);
		Py_DECREF(ak);
		PyErr_SetString(PyExc_ValueError, "a call's arguments are not (args, kwargs)");
		return NULL;
	}
	r = PyTuple_Pack(3, fn, PyTuple_GET_ITEM(ak, 0), PyTuple_GET_ITEM(ak, 1));
	Py_DECREF(fn);
	Py_DECREF(ak);
	return r;
}

/* --- Payload: a request's payload held past its answer ---------------------- */

typedef struct {
	PyObject_HEAD struct dprpc_payload *p;
} PayloadObject;

static void
payload_dealloc(PayloadObject *o)
{
	if (!eal_down) /* at exit, after EAL, its heap is gone */
		dprpc_payload_release(o->p);
	PyObject_Free(o);
}

static int
payload_getbuffer(PayloadObject *o, Py_buffer *view, int flags)
{
	size_t len;
	void *d = dprpc_payload_data(o->p, &len);

	/* Writable, as torch's received tensors are: the memory is ours alone. */
	return PyBuffer_FillInfo(
		view, (PyObject *)o, d != NULL ? d : empty_buf, (Py_ssize_t)len, 0, flags);
}

static PyBufferProcs payload_as_buffer = {.bf_getbuffer = (getbufferproc)payload_getbuffer};

static PyTypeObject PayloadType = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "dprpc._C.Payload",
	.tp_basicsize = sizeof(PayloadObject),
	.tp_dealloc = (destructor)payload_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "A request's payload kept past its answer (a writable buffer).",
	.tp_as_buffer = &payload_as_buffer,
};

/* hold() -> Payload: the payload, valid as long as the object is. */
static PyObject *
request_hold(RequestObject *o, PyObject *unused)
{
	PayloadObject *po;

	if (request_live(o) != 0)
		return NULL;
	po = PyObject_New(PayloadObject, &PayloadType);
	if (po == NULL)
		return NULL;
	po->p = dprpc_request_payload_hold(o->req);
	if (po->p == NULL) {
		PyObject_Free(po);
		return raise_errno(rte_errno, "holding the payload");
	}
	return (PyObject *)po;
}

static PyMethodDef request_methods[] = {
	{"reply", (PyCFunction)request_reply, METH_O, "reply(parts)"},
	{"reply_error", (PyCFunction)request_reply_error, METH_VARARGS, "reply_error(code, msg)"},
	{"reply_busy", (PyCFunction)request_reply_busy, METH_VARARGS,
		"reply_busy(retry_after_us, msg)"},
	{"caller", (PyCFunction)request_caller, METH_NOARGS, "caller() -> rank"},
	{"remaining", (PyCFunction)request_remaining, METH_NOARGS, "remaining() -> float or None"},
	{"cancelled", (PyCFunction)request_cancelled, METH_NOARGS, "cancelled() -> bool"},
	{"rref_value", (PyCFunction)request_rref_value, METH_NOARGS, "rref_value() -> bytes"},
	{"stream_send", (PyCFunction)request_stream_send, METH_O,
		"stream_send(parts) -> True, once sent (waits for the window)"},
	{"stream_end", (PyCFunction)request_stream_end, METH_VARARGS, "stream_end(status)"},
	{"hold", (PyCFunction)request_hold, METH_NOARGS, "hold() -> Payload"},
	{"call_args", (PyCFunction)(void (*)(void))request_call_args, METH_FASTCALL,
		"call_args(cache, cache_max) -> (fn, args, kwargs) | None"},
	{NULL, NULL, 0, NULL},
};

static PyTypeObject RequestType = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "dprpc._C.Request",
	.tp_basicsize = sizeof(RequestObject),
	.tp_dealloc = (destructor)request_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "An incoming request (its payload is a read-only buffer).",
	.tp_methods = request_methods,
	.tp_as_buffer = &request_as_buffer,
};

/* --- RRef ----------------------------------------------------------------- */

typedef struct {
	PyObject_HEAD struct dprpc_rref *r;
	uint64_t gen;
} RRefObject;

static PyTypeObject RRefType;

static PyObject *
rref_wrap(struct dprpc_rref *r)
{
	RRefObject *o = PyObject_New(RRefObject, &RRefType);

	if (o == NULL) {
		dprpc_rref_release(r);
		return NULL;
	}
	o->r = r;
	o->gen = agent_gen;
	return (PyObject *)o;
}

static void
rref_dealloc(RRefObject *o)
{
	if (o->r != NULL && o->gen == agent_gen && agent != NULL)
		(void)dprpc_rref_release(o->r);
	PyObject_Free(o);
}

static int
rref_live(RRefObject *o)
{
	if (o->gen == agent_gen && agent != NULL)
		return 0;
	raise_errno(ESHUTDOWN, "the RRef's agent has shut down");
	return -1;
}

static PyObject *
rref_owner(RRefObject *o, PyObject *unused)
{
	if (rref_live(o) != 0)
		return NULL;
	return PyLong_FromUnsignedLong(dprpc_rref_owner(o->r));
}

static PyObject *
rref_is_owner(RRefObject *o, PyObject *unused)
{
	if (rref_live(o) != 0)
		return NULL;
	return PyBool_FromLong(dprpc_rref_is_owner(o->r));
}

static PyObject *
rref_confirmed(RRefObject *o, PyObject *unused)
{
	if (rref_live(o) != 0)
		return NULL;
	return PyBool_FromLong(dprpc_rref_confirmed_by_owner(o->r));
}

static PyObject *
rref_id(RRefObject *o, PyObject *unused)
{
	if (rref_live(o) != 0)
		return NULL;
	return PyLong_FromUnsignedLongLong(dprpc_rref_id(o->r));
}

/* The value's future (creation, or a fetch by the owner's confirmation). */
static PyObject *
rref_to_here_async(RRefObject *o, PyObject *args)
{
	PyObject *to = Py_None;
	struct dprpc_future *f;
	uint64_t us;

	if (!PyArg_ParseTuple(args, "|O", &to) || timeout_arg(to, &us) != 0 || rref_live(o) != 0)
		return NULL;
	Py_BEGIN_ALLOW_THREADS f = dprpc_rref_to_here_async(o->r, us);
	Py_END_ALLOW_THREADS if (f == NULL) return raise_errno(rte_errno, "to_here");
	return future_wrap(f);
}

static PyObject *
rref_local_value(RRefObject *o, PyObject *unused)
{
	const void *v;
	size_t len;
	int rc;

	if (rref_live(o) != 0)
		return NULL;
	rc = dprpc_rref_local_value(o->r, &v, &len);
	if (rc != 0)
		return raise_errno(rc, "local_value");
	return PyBytes_FromStringAndSize(v, (Py_ssize_t)len);
}

static PyObject *
rref_rpc_async(RRefObject *o, PyObject *args)
{
	struct dprpc_future *f;
	struct call_in c;

	if (rref_live(o) != 0 || call_in_get(args, false, &c) != 0)
		return NULL;
	Py_BEGIN_ALLOW_THREADS f =
		dprpc_rref_rpc_async_iov(o->r, k_ids[c.kind], c.p.iov, c.p.n, c.us);
	Py_END_ALLOW_THREADS parts_release(&c.p);
	if (f == NULL)
		return raise_errno(rte_errno, "rref rpc_async");
	return future_wrap(f);
}

static PyObject *
rref_remote(RRefObject *o, PyObject *args)
{
	struct dprpc_rref *r;
	struct call_in c;

	if (rref_live(o) != 0 || call_in_get(args, false, &c) != 0)
		return NULL;
	Py_BEGIN_ALLOW_THREADS r = dprpc_rref_remote_iov(o->r, k_ids[c.kind], c.p.iov, c.p.n, c.us);
	Py_END_ALLOW_THREADS parts_release(&c.p);
	if (r == NULL)
		return raise_errno(rte_errno, "rref remote");
	return rref_wrap(r);
}

/* Fork data for worker @to (an RRef pickled into a call's arguments). */
static PyObject *
rref_fork_to(RRefObject *o, PyObject *arg)
{
	char buf[DPRPC_RREF_FORK_SIZE];
	unsigned long to = PyLong_AsUnsignedLong(arg);
	int rc;

	if (PyErr_Occurred() || rref_live(o) != 0)
		return NULL;
	rc = dprpc_rref_fork_to(o->r, (unsigned int)to, buf, sizeof(buf));
	if (rc < 0)
		return raise_errno(rc, "fork");
	return PyBytes_FromStringAndSize(buf, rc);
}

static PyObject *
rref_creation_future(RRefObject *o, PyObject *unused)
{
	struct dprpc_future *f;

	if (rref_live(o) != 0)
		return NULL;
	f = dprpc_rref_creation_future(o->r);
	if (f == NULL)
		return raise_errno(rte_errno, "creation future");
	return future_wrap(f);
}

static PyMethodDef rref_methods[] = {
	{"owner", (PyCFunction)rref_owner, METH_NOARGS, "owner() -> rank"},
	{"is_owner", (PyCFunction)rref_is_owner, METH_NOARGS, "is_owner() -> bool"},
	{"confirmed_by_owner", (PyCFunction)rref_confirmed, METH_NOARGS, "-> bool"},
	{"id", (PyCFunction)rref_id, METH_NOARGS, "id() -> int"},
	{"to_here_async", (PyCFunction)rref_to_here_async, METH_VARARGS, "-> Future"},
	{"local_value", (PyCFunction)rref_local_value, METH_NOARGS, "-> bytes"},
	{"rpc_async", (PyCFunction)rref_rpc_async, METH_VARARGS, "(kind, parts, timeout)"},
	{"remote", (PyCFunction)rref_remote, METH_VARARGS, "(kind, parts, timeout) -> RRef"},
	{"fork_to", (PyCFunction)rref_fork_to, METH_O, "fork_to(rank) -> bytes"},
	{"creation_future", (PyCFunction)rref_creation_future, METH_NOARGS, "-> Future"},
	{NULL, NULL, 0, NULL},
};

static PyTypeObject RRefType = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "dprpc._C.RRef",
	.tp_basicsize = sizeof(RRefObject),
	.tp_dealloc = (destructor)rref_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "A handle on an RRef, released when the object goes.",
	.tp_methods = rref_methods,
};

/* --- Stream (the caller's side of rpc_stream) ------------------------------ */

typedef struct {
	PyObject_HEAD struct dprpc_stream *s;
	uint64_t gen;
} StreamObject;

static PyTypeObject StreamType;

static void
stream_dealloc(StreamObject *o)
{
	if (o->s != NULL && o->gen == agent_gen && agent != NULL)
		(void)dprpc_stream_close(o->s);
	PyObject_Free(o);
}

/* next(timeout) -> bytes, or None at the end; raises the stream's error. */
static PyObject *
stream_next(StreamObject *o, PyObject *args)
{
	PyObject *to = Py_None;
	const void *data;
	size_t len;
	uint64_t timeout_us = 0, waited = 0;
	int rc;

	if (!PyArg_ParseTuple(args, "|O", &to))
		return NULL;
	if (o->s == NULL || o->gen != agent_gen || agent == NULL)
		return raise_errno(ESHUTDOWN, "the stream is closed");
	if (to != Py_None) {
		double t = PyFloat_AsDouble(to);

		if (t == -1.0 && PyErr_Occurred())
			return NULL;
		timeout_us = t <= 0 ? 1 : (uint64_t)(t * 1e6);
	}
	for (;;) {
		uint64_t slice = WAIT_SLICE_US;

		if (timeout_us > 0 && timeout_us - waited < slice)
			slice = timeout_us - waited;
		/* The background poller reads the chunks (a stream's waits
		 * need not poll). */
		Py_BEGIN_ALLOW_THREADS rc = dprpc_stream_next(o->s, &data, &len, slice);
		Py_END_ALLOW_THREADS if (rc == 0) return PyBytes_FromStringAndSize(
			data, (Py_ssize_t)len);
		if (rc == DPRPC_STREAM_END)
			Py_RETURN_NONE;
		if (rc != -EAGAIN)
			break;
		waited += slice;
		if (timeout_us > 0 && waited >= timeout_us)
			return raise_errno(ETIMEDOUT, "no chunk within the timeout");
		if (PyErr_CheckSignals() != 0)
			return NULL;
	}
	{
		struct dprpc_future *f = dprpc_stream_future(o->s);
		const struct dprpc_error *e = f != NULL ? dprpc_future_error(f) : NULL;

		if (e == NULL)
			return raise_errno(rc, "stream");
		return raise_error(e, rc);
	}
}

static PyObject *
stream_close(StreamObject *o, PyObject *unused)
{
	if (o->s != NULL && o->gen == agent_gen && agent != NULL)
		(void)dprpc_stream_close(o->s);
	o->s = NULL;
	Py_RETURN_NONE;
}

static PyMethodDef stream_methods[] = {
	{"next", (PyCFunction)stream_next, METH_VARARGS, "next([timeout]) -> bytes or None"},
	{"close", (PyCFunction)stream_close, METH_NOARGS, "close()"},
	{NULL, NULL, 0, NULL},
};

static PyTypeObject StreamType = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "dprpc._C.Stream",
	.tp_basicsize = sizeof(StreamObject),
	.tp_dealloc = (destructor)stream_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "The caller's end of a server stream.",
	.tp_methods = stream_methods,
};

/* --- module functions ------------------------------------------------------ */

static PyObject *
m_init(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = {"name", "rank", "world_size", "init_method", "timeout",
		"rpc_timeout", "run_dir", "eal_args", "world", "max_msg_size", "queue_size",
		"eal_mem_mb", "vdev", "world_key", "world_key_file", "auth_payload", NULL};
	struct dprpc_handler_def defs[K_NB_HANDLERS];
	const char *name, *init_method = NULL, *run_dir = NULL, *eal_args = NULL, *world = NULL;
	const char *vdev = NULL, *key = NULL, *key_file = NULL;
	Py_ssize_t key_len = 0;
	int rank = -1, world_size = -1, auth_payload = 0;
	double timeout = 0, rpc_timeout = 60;
	unsigned int max_msg = 0, qsize = WQ_CAP_DEFAULT, mem_mb = 0;
	struct dprpc_launch_conf c;
	struct dprpc_agent *a;
	char err[512];

	if (!PyArg_ParseTupleAndKeywords(args, kw, "s|iizddzzzIIIzz#zp:init", kwlist, &name, &rank,
		    &world_size, &init_method, &timeout, &rpc_timeout, &run_dir, &eal_args, &world,
		    &max_msg, &qsize, &mem_mb, &vdev, &key, &key_len, &key_file, &auth_payload))
		return NULL;
	if (agent != NULL)
		return raise_errno(EALREADY, "RPC is already initialized");
	if (qsize == 0 || qsize > (1u << 20)) {
		PyErr_SetString(PyExc_ValueError, "queue_size must be 1 to 1048576");
		return NULL;
	}
	pthread_mutex_lock(&wq.mu);
	/* Left from an earlier agent: values freed after its workers ended. */
	while (wq.jobs != NULL) {
		struct wq_job *j = wq.jobs;

		wq.jobs = j->next;
		Py_XDECREF(j->job);
		PyMem_RawFree(j);
	}
	PyMem_RawFree(wq.ring);
	wq.ring = PyMem_RawMalloc(sizeof(*wq.ring) * qsize);
	wq.cap = qsize;
	wq.head = wq.n = 0;
	wq.jobs = NULL;
	wq.jobs_tail = &wq.jobs;
	atomic_store_explicit(&wq.ready, 0, memory_order_relaxed);
	wq.closed = false;
	pthread_mutex_unlock(&wq.mu);
	if (wq.ring == NULL)
		return PyErr_NoMemory();

	for (int k = 0; k < K_NB_HANDLERS; k++)
		defs[k] = (struct dprpc_handler_def){
			k_names[k], h_queue, (void *)(intptr_t)k, DPRPC_HANDLER_INLINE};
	dprpc_launch_conf_init(&c);
	c.name = name;
	c.rank = rank;
	c.world_size = world_size;
	c.init_method = init_method;
	if (timeout > 0)
		c.timeout_us = (uint64_t)(timeout * 1e6);
	c.run_dir = run_dir;
	c.eal_args = eal_args;
	c.world = world;
	c.agent.port.vdev = vdev;
	c.agent.auth.key = key;
	c.agent.auth.key_len = (size_t)key_len;
	c.agent.auth.key_file = key_file;
	if (auth_payload)
		c.agent.auth.mode = DPRPC_AUTH_PAYLOAD;
	c.agent.serve.handlers = defs;
	c.agent.serve.nb_handlers = K_NB_HANDLERS;
	c.agent.rrefs.value_free = value_freed;
	/* The background poller polls: a long wait (shutdown's barrier, a
	 * slow call) parks rather than spin, leaving the CPU to the workers. */
	c.agent.lcores.waiters_park = true;
	c.agent.calls.timeout_us = rpc_timeout > 0 ? (uint64_t)(rpc_timeout * 1e6) : 0;
	if (max_msg != 0) {
		c.agent.calls.max_msg_size = max_msg;
		c.agent.budgets.msg_bytes_peer_max = 4ull * max_msg;
		c.agent.budgets.msg_bytes_max = 16ull * max_msg;
	}
	c.eal_lcores = 1;
	if (mem_mb > 0)
		c.eal_mem_mb = mem_mb;
	err[0] = '\0';
	Py_BEGIN_ALLOW_THREADS a = dprpc_launch(&c, err, sizeof(err));
	Py_END_ALLOW_THREADS if (a == NULL) return raise_errno(rte_errno, err[0] ? err : NULL);
	agent = a;
	if (polling_start() != 0) {
		Py_BEGIN_ALLOW_THREADS(void) dprpc_launch_shutdown(a, false, 0, NULL);
		Py_END_ALLOW_THREADS agent = NULL;
		agent_gen++;
		return raise_errno(EAGAIN, "cannot start the polling thread");
	}
	Py_RETURN_NONE;
}

/* Close the queue: every worker's next_item() returns None once empty. */
static PyObject *
m_close_queue(PyObject *self, PyObject *unused)
{
	pthread_mutex_lock(&wq.mu);
	wq.closed = true;
	pthread_cond_broadcast(&wq.cv);
	pthread_mutex_unlock(&wq.mu);
	Py_RETURN_NONE;
}

/* A barrier of every worker still in the world (not those that left). */
static void
shutdown_barrier(struct dprpc_agent *a, uint64_t timeout_us)
{
	struct dprpc_worker_info infos[DPRPC_MAX_WORKERS];
	const char *names[DPRPC_MAX_WORKERS];
	struct dprpc_error ce;
	unsigned int n = 0;
	int nb = dprpc_worker_info_list(a, infos, DPRPC_MAX_WORKERS);

	for (int i = 0; i < nb && i < DPRPC_MAX_WORKERS; i++)
		if (infos[i].state != DPRPC_PEER_LEFT)
			names[n++] = infos[i].name;
	if (n > 0)
		(void)dprpc_barrier(
			a, names, n, timeout_us ? timeout_us : DPRPC_TIMEOUT_DEFAULT, &ce);
}

static PyObject *
m_shutdown(PyObject *self, PyObject *args)
{
	struct dprpc_error ce;
	int graceful = 1, rc;
	double timeout = 0;
	struct dprpc_agent *a = agent;

	if (!PyArg_ParseTuple(args, "|pd:shutdown", &graceful, &timeout))
		return NULL;
	if (need_agent() != 0)
		return NULL;
	memset(&ce, 0, sizeof(ce));
	Py_BEGIN_ALLOW_THREADS
		/* PyTorch's shutdown: first wait for every worker with the polling
	 * as it is (the others' calls still run at full speed here); the
	 * library's own barrier then finds everyone there.  Its failure is
	 * the shutdown's to report. */
		if (graceful) shutdown_barrier(a, timeout > 0 ? (uint64_t)(timeout * 1e6) : 0);
	/* From here the shutdown's own waits poll. */
	polling_stop();
	rc = dprpc_launch_shutdown(a, graceful, timeout > 0 ? (uint64_t)(timeout * 1e6) : 0, &ce);
	Py_END_ALLOW_THREADS if (rc == -EBUSY || rc == -EDEADLK)
	{
		(void)polling_start();
		return raise_errno(rc, rc == -EBUSY ? "a request is still unanswered"
						    : "shutdown on the polling thread");
	}
	agent = NULL;
	agent_gen++;
	if (rc < 0)
		return raise_error(&ce, rc);
	Py_RETURN_NONE;
}

/* next_item([timeout]) -> (kind, Request or job) | None (timeout or closed) */
static PyObject *
m_next_item(PyObject *self, PyObject *args)
{
	double t = 0;
	struct wq_item it;
	bool got, closed;

	if (!PyArg_ParseTuple(args, "|d", &t))
		return NULL;
	/* The item before is done: the thread works for no request now. */
	dprpc_request_leave(0);
	for (;;) {
		uint64_t slice =
			t > 0 && t * 1e6 < WAIT_SLICE_US ? (uint64_t)(t * 1e6) + 1 : WAIT_SLICE_US;

		Py_BEGIN_ALLOW_THREADS
			/* A worker between requests polls once: new requests come in,
		 * its replies go out, without the background poller. */
			(void) try_poll();
		got = wq_pop(&it, slice, &closed);
		Py_END_ALLOW_THREADS if (got) break;
		if (closed || t > 0)
			Py_RETURN_NONE;
		if (PyErr_CheckSignals() != 0)
			return NULL;
	}
	busy_enter();
	if (it.kind == K_JOB) {
		struct wq_job *j = it.p;
		PyObject *job = j->job;
		uint64_t key = j->key;

		PyMem_RawFree(j);
		if (job == NULL)
			return Py_BuildValue("(iK)", K_FREE, (unsigned long long)key);
		/* The job's reference passes to the caller. */
		return Py_BuildValue("(iN)", K_JOB, job);
	}
	RequestObject *r = PyObject_New(RequestObject, &RequestType);

	if (r == NULL) {
		(void)dprpc_reply_error(it.p, -ENOMEM, "no memory for the request");
		return NULL;
	}
	r->req = it.p;
	r->gen = agent_gen;
	r->kind = it.kind;
	r->exports = 0;
	/* Calls the function makes (nested rpc_sync) keep its caller's
	 * deadline, as a C handler's do. */
	(void)dprpc_request_enter(it.p);
	return Py_BuildValue("(iN)", it.kind, (PyObject *)r);
}

static int
rank_arg(PyObject *o, unsigned int *rank)
{
	unsigned long r = PyLong_AsUnsignedLong(o);

	if (PyErr_Occurred())
		return -1;
	*rank = (unsigned int)r;
	return 0;
}

/* call(to_rank, kind, parts, timeout) -> Future */
static PyObject *
m_call(PyObject *self, PyObject *args)
{
	struct dprpc_future *f;
	struct call_in c;

	if (need_agent() != 0 || call_in_get(args, true, &c) != 0)
		return NULL;
	if (c.p.len <= PARTS_STACK) { /* staged at once */
		f = dprpc_rpc_async_iov(agent, c.to, k_ids[c.kind], c.p.iov, c.p.n, c.us);
	} else {
		Py_BEGIN_ALLOW_THREADS f =
			dprpc_rpc_async_iov(agent, c.to, k_ids[c.kind], c.p.iov, c.p.n, c.us);
		Py_END_ALLOW_THREADS
	}
	parts_release(&c.p);
	if (f == NULL)
		return raise_errno(rte_errno, NULL);
	return future_wrap(f);
}

/* call_sync(to_rank, kind, parts, timeout) -> Future, already complete:
 * rpc_sync's path, one crossing of the GIL. */
static PyObject *
m_call_sync(PyObject *self, PyObject *args)
{
	struct dprpc_future *f;
	struct call_in c;
	PyObject *fo;
	int rc;

	if (need_agent() != 0 || call_in_get(args, true, &c) != 0)
		return NULL;
	Py_BEGIN_ALLOW_THREADS f =
		dprpc_rpc_async_iov(agent, c.to, k_ids[c.kind], c.p.iov, c.p.n, c.us);
	rc = f != NULL ? wait_polling(f, WAIT_SLICE_US) : 0;
	Py_END_ALLOW_THREADS parts_release(&c.p);
	if (f == NULL)
		return raise_errno(rte_errno, NULL);
	fo = future_wrap(f);
	if (fo == NULL || rc != -ETIMEDOUT)
		return fo;
	/* Longer than a slice: wait on, signals checked. */
	PyObject *empty = PyTuple_New(0), *r;

	if (empty == NULL) {
		Py_DECREF(fo);
		return NULL;
	}
	r = future_wait((FutureObject *)fo, empty);
	Py_DECREF(empty);
	if (r == NULL) {
		Py_DECREF(fo);
		return NULL;
	}
	Py_DECREF(r);
	return fo;
}

/* remote(to_rank, kind, parts, timeout) -> RRef */
static PyObject *
m_remote(PyObject *self, PyObject *args)
{
	struct dprpc_rref *r;
	struct call_in c;

	if (need_agent() != 0 || call_in_get(args, true, &c) != 0)
		return NULL;
	Py_BEGIN_ALLOW_THREADS r =
		dprpc_remote_iov(agent, c.to, k_ids[c.kind], c.p.iov, c.p.n, c.us);
	Py_END_ALLOW_THREADS parts_release(&c.p);
	if (r == NULL)
		return raise_errno(rte_errno, NULL);
	return rref_wrap(r);
}

/* rref_create_local(value bytes) -> RRef owned here */
static PyObject *
m_rref_create_local(PyObject *self, PyObject *arg)
{
	struct dprpc_rref *r;
	struct parts p;

	if (need_agent() != 0 || parts_get(arg, &p) != 0)
		return NULL;
	r = dprpc_rref_create_local(agent, p.data, p.len);
	parts_release(&p);
	if (r == NULL)
		return raise_errno(rte_errno, NULL);
	return rref_wrap(r);
}

static PyObject *
m_rref_from_fork(PyObject *self, PyObject *arg)
{
	struct dprpc_rref *r;
	struct parts p;

	if (need_agent() != 0 || parts_get(arg, &p) != 0)
		return NULL;
	r = dprpc_rref_from_fork(agent, p.data, p.len);
	parts_release(&p);
	if (r == NULL)
		return raise_errno(rte_errno, "an RRef from fork data");
	return rref_wrap(r);
}

/* stream_open(to_rank, parts, timeout) -> Stream */
static PyObject *
m_stream_open(PyObject *self, PyObject *args)
{
	PyObject *to_o, *parts, *to = Py_None;
	struct dprpc_stream *s;
	unsigned int to_rank;
	struct parts p;
	uint64_t us;
	StreamObject *o;

	if (!PyArg_ParseTuple(args, "OO|O:stream_open", &to_o, &parts, &to) ||
		rank_arg(to_o, &to_rank) != 0 || timeout_arg(to, &us) != 0 || need_agent() != 0)
		return NULL;
	if (to_rank >= dprpc_world_size(agent))
		return raise_errno(EINVAL, "no such worker");
	if (parts_get(parts, &p) != 0)
		return NULL;
	Py_BEGIN_ALLOW_THREADS s =
		dprpc_stream_open_id(agent, to_rank, k_ids[K_STREAM], p.data, p.len, us);
	Py_END_ALLOW_THREADS parts_release(&p);
	if (s == NULL)
		return raise_errno(rte_errno, NULL);
	o = PyObject_New(StreamObject, &StreamType);
	if (o == NULL) {
		dprpc_stream_close(s);
		return NULL;
	}
	o->s = s;
	o->gen = agent_gen;
	return (PyObject *)o;
}

static PyObject *
info_tuple(const struct dprpc_worker_info *i)
{
	return Py_BuildValue("(sIi)", i->name, i->rank, i->state);
}

/* worker_infos() -> [(name, rank, state)] */
static PyObject *
m_worker_infos(PyObject *self, PyObject *unused)
{
	struct dprpc_worker_info infos[DPRPC_MAX_WORKERS];
	PyObject *l;
	int n;

	if (need_agent() != 0)
		return NULL;
	n = dprpc_worker_info_list(agent, infos, DPRPC_MAX_WORKERS);
	if (n < 0)
		return raise_errno(n, NULL);
	l = PyList_New(0);
	for (int i = 0; l != NULL && i < n && i < DPRPC_MAX_WORKERS; i++) {
		PyObject *t = info_tuple(&infos[i]);

		if (t == NULL || PyList_Append(l, t) != 0) {
			Py_XDECREF(t);
			Py_CLEAR(l);
			break;
		}
		Py_DECREF(t);
	}
	return l;
}

/* self_info() -> (name, rank, world_size) */
static PyObject *
m_self_info(PyObject *self, PyObject *unused)
{
	if (need_agent() != 0)
		return NULL;
	return Py_BuildValue(
		"(sII)", dprpc_agent_name(agent), dprpc_agent_rank(agent), dprpc_world_size(agent));
}

static PyObject *
m_initialized(PyObject *self, PyObject *unused)
{
	return PyBool_FromLong(agent != NULL);
}

/* rpc_timeout() -> float: the agent's default timeout in seconds, 0.0 for
 * none (dprpc_rpc_timeout()). */
static PyObject *
m_rpc_timeout(PyObject *self, PyObject *unused)
{
	if (need_agent() != 0)
		return NULL;
	return PyFloat_FromDouble((double)dprpc_rpc_timeout(agent) / 1e6);
}

/* set_rpc_timeout(seconds): 0, or beyond 1e12 s (inf), for none, as a
 * call's timeout (timeout_arg()); a negative or NaN one is EINVAL, since
 * for a call it means "the default".  No wait: the GIL is kept. */
static PyObject *
m_set_rpc_timeout(PyObject *self, PyObject *arg)
{
	double t = PyFloat_AsDouble(arg);
	uint64_t us;
	int rc;

	if (t == -1.0 && PyErr_Occurred())
		return NULL;
	if (!(t >= 0))
		return raise_errno(EINVAL, "the RPC timeout is 0 (none) or positive seconds");
	if (timeout_arg(arg, &us) != 0 || need_agent() != 0)
		return NULL;
	rc = dprpc_rpc_timeout_set(agent, us);
	if (rc != 0)
		return raise_errno(rc, NULL);
	Py_RETURN_NONE;
}

#define STAT(d, s, f)                                                                  \
	do {                                                                           \
		PyObject *v_ = PyLong_FromUnsignedLongLong((unsigned long long)(s).f); \
		if (v_ == NULL || PyDict_SetItemString((d), #f, v_) != 0) {            \
			Py_XDECREF(v_);                                                \
			Py_DECREF(d);                                                  \
			return NULL;                                                   \
		}                                                                      \
		Py_DECREF(v_);                                                         \
	} while (0)

/* debug_info() -> dict: the agent's counters, RRef counts, usage, queue. */
static PyObject *
m_debug_info(PyObject *self, PyObject *unused)
{
	struct dprpc_agent_stats s;
	struct dprpc_rref_debug r;
	struct dprpc_agent_usage u;
	uint64_t rejected;
	PyObject *d;

	if (need_agent() != 0)
		return NULL;
	if (dprpc_agent_stats_get(agent, &s) != 0 || dprpc_rref_debug_get(agent, &r) != 0 ||
		dprpc_agent_usage_get(agent, &u) != 0)
		return raise_errno(EINVAL, "debug info");
	pthread_mutex_lock(&wq.mu);
	rejected = wq.rejected;
	pthread_mutex_unlock(&wq.mu);
	d = PyDict_New();
	if (d == NULL)
		return NULL;
	STAT(d, s, calls_sent);
	STAT(d, s, calls_ok);
	STAT(d, s, calls_failed);
	STAT(d, s, calls_timed_out);
	STAT(d, s, calls_cancelled);
	STAT(d, s, requests_handled);
	STAT(d, s, requests_unknown);
	STAT(d, s, requests_expired);
	STAT(d, s, requests_cancelled);
	STAT(d, s, rejected_overload);
	STAT(d, s, retransmits);
	STAT(d, s, dropped);
	STAT(d, s, peers_down);
	STAT(d, s, peers_restarted);
	STAT(d, s, rx_frames);
	STAT(d, s, tx_frames);
	STAT(d, r, num_owner_rrefs);
	STAT(d, r, num_forks);
	STAT(d, r, num_owner_handles);
	STAT(d, r, num_users);
	STAT(d, r, num_pending_users);
	STAT(d, r, num_pending_forks);
	STAT(d, u, futures);
	STAT(d, u, requests);
	STAT(d, u, calls);
	STAT(d, u, messages);
	{
		struct {
			uint64_t python_queue_rejected;
		} q = {rejected};

		STAT(d, q, python_queue_rejected);
	}
	return d;
}

/* Names as a C array for the collectives (borrowed from @seq's items). */
static int
names_arg(PyObject *seq, const char **names, unsigned int *n)
{
	Py_ssize_t len = PySequence_Fast_GET_SIZE(seq);

	if (len <= 0 || len > DPRPC_MAX_WORKERS) {
		PyErr_SetString(PyExc_ValueError, "a group of 1 to 64 worker names is needed");
		return -1;
	}
	for (Py_ssize_t i = 0; i < len; i++) {
		names[i] = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(seq, i));
		if (names[i] == NULL)
			return -1;
	}
	*n = (unsigned int)len;
	return 0;
}

/* all_gather(value, names, timeout) -> {rank: bytes} */
static PyObject *
m_all_gather(PyObject *self, PyObject *args)
{
	PyObject *value, *names_o, *seq, *to = Py_None, *d = NULL;
	const char *names[DPRPC_MAX_WORKERS];
	struct dprpc_error ce;
	struct dprpc_gather *g = NULL;
	unsigned int n;
	struct parts p;
	uint64_t us;
	int rc;

	if (!PyArg_ParseTuple(args, "OO|O:all_gather", &value, &names_o, &to) ||
		timeout_arg(to, &us) != 0 || need_agent() != 0)
		return NULL;
	seq = PySequence_Fast(names_o, "names must be a sequence");
	if (seq == NULL)
		return NULL;
	if (names_arg(seq, names, &n) != 0 || parts_get(value, &p) != 0) {
		Py_DECREF(seq);
		return NULL;
	}
	Py_BEGIN_ALLOW_THREADS rc = dprpc_all_gather(agent, names, n, p.data, p.len, us, &g, &ce);
	Py_END_ALLOW_THREADS parts_release(&p);
	Py_DECREF(seq);
	if (rc != 0)
		return raise_error(&ce, rc);
	d = PyDict_New();
	for (unsigned int r = 0; d != NULL && r < DPRPC_MAX_WORKERS; r++) {
		size_t len;
		const void *v;
		PyObject *k, *b;

		if (!(dprpc_gather_members(g) & (1ull << r)))
			continue;
		v = dprpc_gather_value(g, r, &len);
		k = PyLong_FromUnsignedLong(r);
		b = PyBytes_FromStringAndSize(v != NULL ? v : "", v != NULL ? (Py_ssize_t)len : 0);
		if (k == NULL || b == NULL || PyDict_SetItem(d, k, b) != 0)
			Py_CLEAR(d);
		Py_XDECREF(k);
		Py_XDECREF(b);
	}
	dprpc_gather_free(g);
	return d;
}

static PyObject *
m_barrier(PyObject *self, PyObject *args)
{
	PyObject *names_o, *seq, *to = Py_None;
	const char *names[DPRPC_MAX_WORKERS];
	struct dprpc_error ce;
	unsigned int n;
	uint64_t us;
	int rc;

	if (!PyArg_ParseTuple(args, "O|O:barrier", &names_o, &to) || timeout_arg(to, &us) != 0 ||
		need_agent() != 0)
		return NULL;
	seq = PySequence_Fast(names_o, "names must be a sequence");
	if (seq == NULL)
		return NULL;
	if (names_arg(seq, names, &n) != 0) {
		Py_DECREF(seq);
		return NULL;
	}
	Py_BEGIN_ALLOW_THREADS rc = dprpc_barrier(agent, names, n, us, &ce);
	Py_END_ALLOW_THREADS Py_DECREF(seq);
	if (rc != 0)
		return raise_error(&ce, rc);
	Py_RETURN_NONE;
}

static PyObject *
m_eal_cleanup(PyObject *self, PyObject *unused)
{
	int rc;

	if (agent != NULL)
		return raise_errno(EBUSY, "shut RPC down first");
	Py_BEGIN_ALLOW_THREADS rc = dprpc_eal_cleanup();
	Py_END_ALLOW_THREADS eal_down = true;
	return PyLong_FromLong(rc);
}

static PyMethodDef module_methods[] = {
	{"init", (PyCFunction)(void (*)(void))m_init, METH_VARARGS | METH_KEYWORDS,
		"init(name, rank, world_size, init_method, timeout, rpc_timeout, run_dir, "
		"eal_args, "
		"world, max_msg_size, queue_size, eal_mem_mb, vdev, world_key, world_key_file, "
		"auth_payload)"},
	{"shutdown", m_shutdown, METH_VARARGS, "shutdown(graceful, timeout)"},
	{"close_queue", m_close_queue, METH_NOARGS, "close_queue()"},
	{"next_item", m_next_item, METH_VARARGS, "next_item([timeout]) -> (kind, obj) or None"},
	{"call", m_call, METH_VARARGS, "call(to_rank, kind, parts, timeout) -> Future"},
	{"call_sync", m_call_sync, METH_VARARGS, "call_sync(to_rank, kind, parts, timeout)"},
	{"remote", m_remote, METH_VARARGS, "remote(to_rank, kind, parts, timeout) -> RRef"},
	{"rref_create_local", m_rref_create_local, METH_O, "rref_create_local(value) -> RRef"},
	{"rref_from_fork", m_rref_from_fork, METH_O, "rref_from_fork(data) -> RRef"},
	{"stream_open", m_stream_open, METH_VARARGS, "stream_open(to_rank, parts, timeout)"},
	{"worker_infos", m_worker_infos, METH_NOARGS, "-> [(name, rank, state)]"},
	{"self_info", m_self_info, METH_NOARGS, "-> (name, rank, world_size)"},
	{"initialized", m_initialized, METH_NOARGS, "-> bool"},
	{"rpc_timeout", m_rpc_timeout, METH_NOARGS, "rpc_timeout() -> float seconds"},
	{"set_rpc_timeout", m_set_rpc_timeout, METH_O, "set_rpc_timeout(seconds)"},
	{"debug_info", m_debug_info, METH_NOARGS, "-> dict"},
	{"all_gather", m_all_gather, METH_VARARGS, "all_gather(value, names, timeout)"},
	{"barrier", m_barrier, METH_VARARGS, "barrier(names, timeout)"},
	{"eal_cleanup", m_eal_cleanup, METH_NOARGS, "eal_cleanup() -> int"},
	{NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
	PyModuleDef_HEAD_INIT,
	.m_name = "dprpc._C",
	.m_doc = "dprpc's C core: agents, calls, futures, RRefs (use the dprpc package).",
	.m_size = -1,
	.m_methods = module_methods,
};

PyMODINIT_FUNC PyInit__C(void);

PyMODINIT_FUNC
PyInit__C(void)
{
	PyObject *m;

	if (PyType_Ready(&FutureType) < 0 || PyType_Ready(&RequestType) < 0 ||
		PyType_Ready(&PayloadType) < 0 || PyType_Ready(&RRefType) < 0 ||
		PyType_Ready(&StreamType) < 0)
		return NULL;
	m = PyModule_Create(&module_def);
	if (m == NULL)
		return NULL;
	{
		PyObject *pickle = PyImport_ImportModule("pickle");

		pickle_loads = pickle != NULL ? PyObject_GetAttrString(pickle, "loads") : NULL;
		Py_XDECREF(pickle);
		if (pickle_loads == NULL) {
			Py_DECREF(m);
			return NULL;
		}
	}
	for (int k = 0; k < K_NB_HANDLERS; k++)
		k_ids[k] = dprpc_handler_id(k_names[k]);
	wq.jobs_tail = &wq.jobs;
	ErrorType = PyErr_NewExceptionWithDoc("dprpc._C.Error",
		"A dprpc error: args (code, origin, message, retry_after_us, workers).", NULL,
		NULL);
	if (ErrorType == NULL || PyModule_AddObjectRef(m, "Error", ErrorType) < 0 ||
		PyModule_AddObjectRef(m, "Future", (PyObject *)&FutureType) < 0 ||
		PyModule_AddObjectRef(m, "Request", (PyObject *)&RequestType) < 0 ||
		PyModule_AddObjectRef(m, "RRef", (PyObject *)&RRefType) < 0 ||
		PyModule_AddObjectRef(m, "Stream", (PyObject *)&StreamType) < 0 ||
		PyModule_AddIntConstant(m, "K_CALL", K_CALL) < 0 ||
		PyModule_AddIntConstant(m, "K_REMOTE", K_REMOTE) < 0 ||
		PyModule_AddIntConstant(m, "K_RREF_CALL", K_RREF_CALL) < 0 ||
		PyModule_AddIntConstant(m, "K_RREF_REMOTE", K_RREF_REMOTE) < 0 ||
		PyModule_AddIntConstant(m, "K_RREF_FETCH", K_RREF_FETCH) < 0 ||
		PyModule_AddIntConstant(m, "K_STREAM", K_STREAM) < 0 ||
		PyModule_AddIntConstant(m, "K_JOB", K_JOB) < 0 ||
		PyModule_AddIntConstant(m, "K_FREE", K_FREE) < 0 ||
		PyModule_AddIntConstant(m, "ORIGIN_LOCAL", DPRPC_ORIGIN_LOCAL) < 0 ||
		PyModule_AddIntConstant(m, "MAX_FRAME_PAYLOAD", DPRPC_MAX_FRAME_PAYLOAD) < 0 ||
		PyModule_AddIntConstant(m, "MAX_MSG_LIMIT", DPRPC_MAX_MSG_LIMIT) < 0) {
		Py_DECREF(m);
		return NULL;
	}
	return m;
}
