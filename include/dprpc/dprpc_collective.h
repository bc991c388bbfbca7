/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Collectives over a group of workers and graceful shutdown (PyTorch's
 * _all_gather, _barrier, _wait_all_workers and shutdown(graceful)):
 * docs/collective.md in the source tree.
 *
 * A group is a set of workers, given as a list of names, or of ranks to
 * the _id forms (NULL and 0: the whole world, less the workers this worker
 * knows to have left it, DPRPC_PEER_LEFT: dprpc_world_leave(); NULL and
 * DPRPC_WORLD_LIVE: the live world, below); the calling worker must be in
 * it.  Its leader is the member of lowest rank.  Every member calls
 * dprpc_all_gather() (or dprpc_barrier(), or their _id forms) with the
 * same group, by names or by ranks, listed in any order; each call
 * carries the group's next sequence number on the calling worker (one
 * counter per group and worker, counting every call, failed ones
 * included), so the calls that meet are the k-th call of each member, and
 * collectives over different groups never mix, concurrent or not.
 * Each member sends its value to the leader (a call to the reserved
 * handler "dprpc.coll.gather"; the leader's own goes to itself); the leader
 * keeps the requests deferred and, once every member's has come, answers
 * each with the whole set.  Nothing blocks the leader's poller: the
 * requests wait in a table it alone touches.
 *
 * Failures are reported with the workers concerned, never swallowed.  A
 * failed collective fills the caller's struct dprpc_error (if any): code,
 * origin (the worker that decided: the leader, or this worker), a message
 * naming the workers concerned, and workers, their mask (bit r: rank r):
 * those that did not arrive (-ETIMEDOUT, -EHOSTDOWN), or the leader when
 * the call to it failed; 0 when no worker is to blame (-EINVAL, -EBUSY,
 * -ENOMEM, ...).  A collective whose members have not all arrived by the
 * earliest deadline among those that did fails for all of them with
 * -ETIMEDOUT, naming the absent ones; one whose absent member is declared
 * down fails at once with -EHOSTDOWN; a member arriving later for that
 * sequence number is answered the same failure at once.  A call to the
 * leader that fails (the leader is down, restarted, never answers) names
 * the leader.
 *
 * The live world (workers NULL, n DPRPC_WORLD_LIVE) is the whole world less
 * the workers that left it and those declared down: the members up now.
 * Its collectives have their own sequence numbers.  Its leader is its
 * lowest rank not declared down (as the caller sees it; a caller whose
 * call to a leader fails because that leader is declared down meanwhile
 * sends again to the next one, within its timeout).  The leader leaves
 * out every member it has declared down (before or while the collective
 * waits) and answers once all the others arrived: the result's
 * dprpc_gather_members() says who took part.  A member left out that
 * arrives later gets -EHOSTDOWN, naming the members left out.  The members
 * must agree on who is down: one taken for up by some and down by others
 * can split them between two leaders, which then time out.
 */
#ifndef DPRPC_COLLECTIVE_H
#define DPRPC_COLLECTIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <dprpc/dprpc_agent.h>
#include <dprpc/dprpc_future.h>

#ifdef __cplusplus
extern "C" {
#endif

/** As @p n with NULL workers: the live world (the whole world less the
 * workers that left it and those declared down; see the file comment). */
#define DPRPC_WORLD_LIVE 0xffffffffu

/** Largest value one worker contributes to dprpc_all_gather(). */
#define DPRPC_GATHER_VALUE_MAX 65536u

/**
 * A leader that does not answer: how long after its own timeout a member
 * gives up on the leader (in microseconds).  The leader fails a collective
 * at its members' deadline and answers; this margin covers the answer's
 * way back.
 */
#define DPRPC_COLL_GRACE_US 250000u

/** The result of a dprpc_all_gather() (or _id()): opaque, owned by the
 * caller. */
struct dprpc_gather;

/**
 * Gather one value from every member of a group, on every member
 * (PyTorch's _all_gather).
 *
 * @param workers  the group's member names (@p n of them, each once, the
 *                 caller among them); NULL with @p n 0: the whole world
 *                 but the workers that left it (DPRPC_PEER_LEFT here);
 *                 NULL with @p n DPRPC_WORLD_LIVE: the live world, less
 *                 the workers declared down too (the file comment).
 * @param value,len this worker's value, copied before return; @p len up to
 *                 DPRPC_GATHER_VALUE_MAX (@p value may be NULL when 0).
 *                 The whole set (8 bytes per member plus each value,
 *                 rounded up to 8, plus 40) must fit the leader's and each
 *                 member's max_msg_size, else -EMSGSIZE on every member.
 * @param timeout_us how long this worker waits for the others, from this
 *                 call; DPRPC_TIMEOUT_DEFAULT (the agent's default
 *                 timeout) or DPRPC_TIMEOUT_NONE (0: no limit).  A leader
 *                 that does not answer is given DPRPC_COLL_GRACE_US more.
 * @param result   on success, receives the set: owned by the caller, to
 *                 be freed with dprpc_gather_free(); it does not depend on
 *                 the agent (it may outlive it); dprpc_gather_members()
 *                 says whose values it holds (the live world's: those that
 *                 took part).  Untouched on failure.
 * @param err      if not NULL, receives the error of a failure (message
 *                 and the workers concerned); untouched on success.
 * @return 0; -ETIMEDOUT (members did not arrive in time: err->workers);
 *         -EHOSTDOWN (an absent member was declared down, or the leader
 *         was: err->workers; over the live world: the leader and every
 *         member after it were, or this worker was left out as declared
 *         down by the leader: err->workers those left out); -ESHUTDOWN
 *         (the leader's agent was destroyed meanwhile); any other error of
 *         the call to the leader (dprpc_rpc.h; err->workers names the
 *         leader); -EMSGSIZE (@p len over DPRPC_GATHER_VALUE_MAX, or the
 *         set over a max_msg_size); -EBUSY (this worker is in another
 *         collective over the same group right now); -EDEADLK (called on
 *         the agent's polling thread: nothing sent); -EINVAL (NULL agent
 *         or result, NULL workers with n neither 0 nor DPRPC_WORLD_LIVE, n
 *         over the world, a NULL name or a name twice, the caller not a
 *         member, NULL value with len > 0); -ENOENT (a name not in the
 *         world); -ENOMEM.  A failure consumes the sequence number all the
 *         same.
 *
 * Thread context: any thread but the agent's polling thread (an inline
 * handler, a callback: -EDEADLK) and its handler lcores, which must not
 * block; the calling thread polls the agent while it waits if nobody else
 * does.
 */
int dprpc_all_gather(struct dprpc_agent *agent, const char *const *workers, unsigned int n,
	const void *value, size_t len, uint64_t timeout_us, struct dprpc_gather **result,
	struct dprpc_error *err);

/**
 * dprpc_all_gather() of a group given by ranks (dprpc_worker_rank()), for
 * callers that keep ranks rather than names.
 *
 * @param ranks    the group's member ranks (@p n of them, each once, the
 *                 caller's among them), read during the call only; NULL
 *                 with @p n 0 or DPRPC_WORLD_LIVE: as dprpc_all_gather()'s
 *                 NULL workers.
 * @return as dprpc_all_gather() (every errno, @p err filled), with ranks
 *         for names: -ENOENT for a rank not in the world (not below
 *         dprpc_world_size()), -EINVAL for a rank twice.
 *
 * Thread context: as dprpc_all_gather().
 */
int dprpc_all_gather_id(struct dprpc_agent *agent, const unsigned int *ranks, unsigned int n,
	const void *value, size_t len, uint64_t timeout_us, struct dprpc_gather **result,
	struct dprpc_error *err);

/**
 * Wait until every member of a group has called it (PyTorch's _barrier):
 * dprpc_all_gather() of empty values, whose returns (every errno, filled
 * @p err) and thread context it has.
 */
int dprpc_barrier(struct dprpc_agent *agent, const char *const *workers, unsigned int n,
	uint64_t timeout_us, struct dprpc_error *err);

/**
 * dprpc_barrier() of a group given by ranks: dprpc_all_gather_id() of
 * empty values, whose @p ranks, returns (every errno, filled @p err) and
 * thread context it has.
 */
int dprpc_barrier_id(struct dprpc_agent *agent, const unsigned int *ranks, unsigned int n,
	uint64_t timeout_us, struct dprpc_error *err);

/**
 * The value member @p rank gave.
 * @param len receives its length (may be NULL).
 * @return a pointer into @p g, valid until dprpc_gather_free(g), aligned to
 *         8 bytes (NULL with *len 0 for an empty value); NULL with
 *         rte_errno EINVAL (NULL @p g) or ENOENT (@p rank not a member).
 * Thread context: any thread; @p g is only read.
 */
const void *dprpc_gather_value(const struct dprpc_gather *g, unsigned int rank, size_t *len);

/** The group's members, one bit per rank (0, rte_errno EINVAL, for a NULL
 * @p g).  Any thread; @p g is only read. */
uint64_t dprpc_gather_members(const struct dprpc_gather *g);

/** The collective's sequence number in its group: 1 for the group's first
 * on every member, then 2, ... (0, rte_errno EINVAL, for a NULL @p g).
 * Any thread; @p g is only read. */
uint64_t dprpc_gather_seq(const struct dprpc_gather *g);

/** Free a result (NULL is ignored).  Any thread. */
void dprpc_gather_free(struct dprpc_gather *g);

/**
 * Shut this worker down and destroy its agent (PyTorch's shutdown()).
 *
 * Graceful (@p graceful true), in this order, all within @p timeout_us
 * (from this call; DPRPC_TIMEOUT_DEFAULT: the agent's default timeout;
 * DPRPC_TIMEOUT_NONE: no limit):
 *  1. a barrier of the whole world but the workers that left it
 *     (every worker still in it calls dprpc_shutdown()); with the agent's
 *     conf.liveness.shutdown_live, of the live world (DPRPC_WORLD_LIVE): the
 *     workers declared down are left out rather than failing it;
 *  2. the application's new calls fail with ESHUTDOWN, and requests other
 *     workers still send to the application's handlers are answered
 *     -ESHUTDOWN (RRef messages and collectives still go);
 *  3. the calls still in flight and the requests being handled (deferred
 *     ones included) are waited for;
 *  4. RRefs: dprpc_rref_shutdown() (every handle's reference dropped and
 *     its owner told; the values owned here released by the others);
 *  5. the calls this sent (RRef deletions) are waited for;
 *  6. the world is left (dprpc_world_leave(): the workers still up
 *     acknowledge, having read every answer this worker sent, the
 *     barrier's included; they see it DPRPC_PEER_LEFT, not down); a
 *     worker that does not acknowledge in time is logged, not returned;
 *  7. the agent is destroyed (dprpc_agent_destroy()): every resource
 *     released, calls still pending fail -ESHUTDOWN.
 * A barrier that fails does not stop it: steps 2-7 still run, each with
 * what is left of the timeout (at least one poll), and the barrier's error
 * is returned, naming the workers that did not arrive (a worker the leader
 * has declared down fails it at once, -EHOSTDOWN, as does a leader this
 * worker has declared down).  A leak of RRefs is
 * logged (dprpc_rref_dump()), not returned.
 *
 * Not graceful: steps 2 and 7 only (PyTorch's shutdown(graceful=False)):
 * the local worker stops, its pending calls fail -ESHUTDOWN.
 *
 * Afterwards the process may create agents again, with the same names (a
 * new world).
 *
 * @param err if not NULL, receives the error of a failed barrier (or of a
 *            refused destroy); untouched on success.
 * @return 0: the agent is destroyed; the barrier's error (-ETIMEDOUT,
 *         -EHOSTDOWN, ... as dprpc_barrier()): the agent is destroyed all
 *         the same; -EBUSY: the application still holds a deferred request
 *         unanswered after the timeout, and the agent is NOT destroyed
 *         (it refuses calls; answer the request, then
 *         dprpc_agent_destroy()); -EDEADLK (called on the agent's polling
 *         thread: nothing done); -EINVAL (NULL agent: nothing done).
 *
 * Thread context: as dprpc_agent_destroy() (not the agent's lcores or
 * callbacks), and no other call on the agent may follow.
 */
int dprpc_shutdown(
	struct dprpc_agent *agent, bool graceful, uint64_t timeout_us, struct dprpc_error *err);

#ifdef __cplusplus
}
#endif

#endif /* DPRPC_COLLECTIVE_H */
