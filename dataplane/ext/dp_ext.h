/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the agent offers a module that extends it (rref/, collective/): with
 * dp_rcu.h and dp_log.h, the whole of the dataplane such a module sees.
 * The dataplane never names the module (lib/extensions.c lists them; what
 * the rref extension does in each op: docs/architecture.md, "Modules").
 * Never installed.
 *
 * Life cycle of an extension on one agent, all on the thread that creates
 * or destroys the agent:
 *   init     during dprpc_agent_create(), after the agent's pools exist and
 *            before its port opens; sets *state (even when it fails, so
 *            that free releases what init made); may register reserved
 *            handlers (dp_register(..., internal = true)).
 *   held_requests
 *            in dprpc_agent_destroy(), after the agent's lcores stopped,
 *            before anything changes: how many request objects the
 *            extension keeps that its quiesce will answer (any other
 *            request kept refuses the destroy, -EBUSY).
 *   quiesce  in dprpc_agent_destroy(), once it decided to go on (nothing
 *            but the extensions' held requests is kept): fail whatever
 *            waits for something that will never come, answering the
 *            requests that wait on it.
 *   closing  at the start of the teardown: send nothing more.
 *   free     at the end of the teardown (and after a failed create):
 *            release everything, without messages.
 * And on the poller, once every timer period (100 us):
 *   timer    retry deferred work; returns how much it did (0: nothing).
 * And on the poller, when the liveness of a peer changes (where the
 * application's conf.liveness.peer_event is told, and on a restart, which it is
 * not told of):
 *   peer_event  (may be NULL) see enum dp_peer_event.  Must not block;
 *            may take read-side sections (dp_rcu_read_lock()) and send.
 */
#ifndef DP_EXT_H
#define DP_EXT_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <dprpc/dprpc_agent.h>
#include <dprpc/dprpc_future.h>
#include <dprpc/dprpc_rpc.h>
#include <dprpc/dprpc_handler.h>

#include "dp_log.h"

/* What happened to a peer (the peer_event op). */
enum dp_peer_event {
	/* Declared down (silent for peer_timeout_us): its pending calls have
	 * just failed with -EHOSTDOWN; new ones fail until it is heard from. */
	DP_PEER_EV_DOWN = 0,
	/* A peer declared down is heard from again, same incarnation. */
	DP_PEER_EV_UP = 1,
	/* A frame of a newer incarnation of the peer: it restarted and holds
	 * nothing of its past; the server state kept for it is cleared and
	 * its pending calls have just failed with -ECONNRESET. */
	DP_PEER_EV_RESTARTED = 2,
	/* A worker joined the world as @rank (the world's size is now
	 * above it); @rank is this agent's own when it has just joined
	 * (dprpc_world_join(): its rank is known from then on). */
	DP_PEER_EV_JOINED = 3,
};

struct dp_ext_ops {
	const char *name;
	int (*init)(struct dprpc_agent *a, const struct dprpc_agent_conf *c, void **state);
	unsigned int (*timer)(void *state);
	unsigned int (*held_requests)(void *state);
	void (*quiesce)(void *state);
	void (*closing)(void *state);
	void (*free)(void *state);
	void (*peer_event)(void *state, unsigned int rank, enum dp_peer_event ev);
};

/* The length of a message gathered from @cnt buffers (the public *_iov()
 * calls, at most @max buffers): 0, -EINVAL (a NULL array or buffer, more
 * than @max buffers) or -EMSGSIZE (the sum overflows). */
static inline int
dp_iov_len(const struct iovec *iov, unsigned int cnt, unsigned int max, size_t *len)
{
	size_t sum = 0;

	if ((iov == NULL && cnt > 0) || cnt > max)
		return -EINVAL;
	for (unsigned int i = 0; i < cnt; i++) {
		if (iov[i].iov_base == NULL && iov[i].iov_len > 0)
			return -EINVAL;
		if (iov[i].iov_len > SIZE_MAX - sum)
			return -EMSGSIZE;
		sum += iov[i].iov_len;
	}
	*len = sum;
	return 0;
}

/* The most extensions an agent carries. */
#define DP_EXT_MAX 4

/* lib/extensions.c: the extensions every agent carries, NULL-terminated,
 * in the order they are initialised (and freed in reverse). */
extern const struct dp_ext_ops *const dp_extensions[];

/* @ops's state on @a, NULL if @a carries no such extension or its init
 * has not run.  Any thread; the state lives as long as the agent. */
void *dp_ext_state(const struct dprpc_agent *a, const struct dp_ext_ops *ops);

/* --- the agent -------------------------------------------------------- */

/* A number unique to @a among the agents this process ever created (for
 * naming DPDK objects).  Any thread. */
unsigned int dp_agent_instance(const struct dprpc_agent *a);
/* The default timeout of @a (dprpc_rpc_timeout(): conf.calls.timeout_us
 * until dprpc_rpc_timeout_set()), read relaxed.  Any thread. */
uint64_t dp_agent_default_timeout_us(const struct dprpc_agent *a);
/* conf.calls.max_msg_size of @a.  Any thread. */
uint32_t dp_agent_max_msg(const struct dprpc_agent *a);
/* True if @a's io lcore polls it (a waiter then need not poll). */
bool dp_agent_has_io_lcore(const struct dprpc_agent *a);
/* True if the calling thread is @a's poller right now (inside
 * dprpc_poll() on @a, a handler or callback it runs inline included). */
bool dp_on_poller(const struct dprpc_agent *a);
/* A future's progress hook (dprpc_future_set_progress()) for @agent: poll
 * it once if nobody else does.  -1 when the waiter should park instead
 * (another thread polls); -EDEADLK when the waiter is @agent's poller
 * itself, which nobody else can relieve (dprpc_progress_fn_t). */
int dp_progress(void *agent);

/* From now on (for the rest of @a's life) the application's calls fail at
 * once with ESHUTDOWN (dprpc_rpc_async*(), dprpc_rpc_sync*(): nothing is
 * sent), and the application's handlers are no longer run: a request for
 * one is answered -ESHUTDOWN.  Calls to and requests for the handlers
 * extensions registered (dp_register(..., internal = true)) still go, so
 * that RRef messages and collectives can finish.  What races with it goes
 * or is refused.  Any thread (graceful shutdown, collective/). */
void dp_refuse_calls(struct dprpc_agent *a);
/* True once dp_refuse_calls() ran on @a.  Any thread. */
bool dp_agent_refusing(const struct dprpc_agent *a);

/* The rank of worker @to for a call by names: -1 with rte_errno EINVAL
 * (a NULL argument) or ENOENT (no such worker). */
int dp_resolve(const struct dprpc_agent *a, const char *to, const char *hname);
/* Wait for @fut (polling when nobody else does), up to @timeout_us (0: no
 * limit), copy its value out and put it: dprpc_rpc_sync()'s returns, but a
 * value longer than *@out_len is released, not kept for
 * dprpc_rpc_sync_take().  On @a's poller the wait fails -EDEADLK if @fut
 * is pending. */
int dp_sync_wait(struct dprpc_agent *a, struct dprpc_future *fut, uint64_t timeout_us, void *out,
	size_t *out_len, struct dprpc_error *err);

/* --- handlers and requests -------------------------------------------- */

/* Register a handler, reserved names ("dprpc." prefix) allowed when
 * @internal.  Errors as dprpc_register(). */
int dp_register(struct dprpc_agent *a, const char *name, dprpc_handler_fn_t fn, void *arg,
	enum dprpc_handler_mode mode, bool internal);

/* Hooks a module sets on a request it holds (dp_req_set_hook()). */
struct dp_req_hook {
	/* Called by dprpc_reply()/dprpc_reply_error() before anything is
	 * sent, on the replying thread, with what the handler answers; may
	 * change what goes to the caller.  May run more than once if the
	 * reply fails (-ENOBUFS) and the handler replies again. */
	void (*reply)(
		struct dprpc_request *req, uint32_t *status, const void **data, uint32_t *len);
	/* Called once when the request is released, answered or not. */
	void (*release)(struct dprpc_request *req);
};

/* Set @req's hook and its two arguments (read back with
 * dp_req_hook_arg()).  The thread that holds the request. */
void dp_req_set_hook(
	struct dprpc_request *req, const struct dp_req_hook *hook, void *arg0, void *arg1);
void *dp_req_hook_arg(const struct dprpc_request *req, unsigned int i);
void dp_req_set_hook_arg(struct dprpc_request *req, unsigned int i, void *arg);
/* The request's input value: a buffer, living until the request is
 * released, that the handler reads besides its payload
 * (dprpc_request_rref_value()).  NULL (and *len 0) when none was set. */
void dp_req_set_input(struct dprpc_request *req, const void *val, uint32_t len);
const void *dp_req_input(const struct dprpc_request *req, uint32_t *len);
/* Hand @req (taken by an inline handler) to the handler @handler_id with
 * @payload as its payload (pointing into the request's frame or living
 * until the request is released).  Runs it inline, or queues it to the
 * handler lcores when called on the poller; off the poller it runs on the
 * calling thread whatever its mode.  -ENOENT (no such handler) or -EBUSY
 * (pool full): nothing ran, the request is still the caller's to answer.
 * A handler that passed its request on (here, or to a callback) returns
 * DPRPC_DEFERRED: the handler contract (dprpc_handler.h) holds for reserved
 * handlers too, and is enforced on them alike. */
int dp_redispatch(
	struct dprpc_request *req, uint32_t handler_id, const void *payload, uint32_t len);
/* Release @req unanswered (its frame, message and hook too; at the end of
 * the handler run that holds it, if one does).  Nothing if it was answered
 * already. */
void dp_request_free(struct dprpc_request *req);

#endif /* DP_EXT_H */
