# SPDX-License-Identifier: BSD-3-Clause
"""remote() and RRefs: to_here, owners, proxies, forks across workers, release."""
import operator
import time

import dprpc
import helpers
from conftest import run_world


def _wait_count(key, want, worker=None, limit=20.0):
    r"""Poll a debug counter (here, or on ``worker``) until it is ``want``; its last value."""
    end = time.monotonic() + limit
    while True:
        v = (dprpc._get_debug_info()[key] if worker is None
             else dprpc.rpc_sync(worker, helpers.debug, args=(key,)))
        if v == want or time.monotonic() > end:
            return v
        time.sleep(0.01)


def w_basic(rank, n):
    if rank != 0:
        return None
    out = {}
    r = dprpc.remote("worker1", operator.add, args=(10, 5))
    out["to_here"] = r.to_here()
    out["owner"] = (r.owner(), r.owner_name(), r.is_owner())
    out["confirmed"] = r.confirmed_by_owner()
    try:
        r.local_value()
    except RuntimeError as e:
        out["local_value"] = "owner" in str(e)
    # A mutable value: proxies change it on its owner; to_here sees it.
    c = dprpc.remote("worker1", helpers.make_counter, args=(5,))
    out["proxy_sync"] = c.rpc_sync().incr(2)
    out["proxy_async"] = c.rpc_async().incr(3).wait()
    out["proxy_remote"] = c.remote().value().to_here()
    out["async_method"] = c.rpc_sync().incr_later(1)
    out["counter"] = c.to_here().n
    # Owned here: remote() to self and RRef(value).
    mine = dprpc.remote("worker0", helpers.make_counter, args=(1,))
    out["mine"] = (mine.is_owner(), mine.local_value().incr(), mine.to_here().n)
    local = dprpc.RRef([1, 2])
    local.local_value().append(3)
    out["local"] = dprpc.rpc_sync("worker1", helpers.rref_to_here, args=(local,))
    # A failed creation raises at to_here().
    bad = dprpc.remote("worker1", operator.truediv, args=(1, 0))
    try:
        bad.to_here()
    except ZeroDivisionError:
        out["bad"] = True
    del r, c, mine, local, bad
    out["owned_after"] = _wait_count("num_owner_rrefs", 0, worker="worker1")
    out["users_after"] = _wait_count("num_users", 0)
    out["objects_after"] = (_wait_count("python_owned_objects", 0, worker="worker1"),
                            _wait_count("python_owned_objects", 0))
    return out


def test_remote_to_here_proxies_and_owners():
    out = run_world(w_basic, 2)[0]
    assert out["to_here"] == 15
    assert out["owner"][1:] == ("worker1", False)
    assert out["owner"][0] == dprpc.WorkerInfo("worker1", 1)
    assert out["confirmed"] is True
    assert out["local_value"] is True
    assert (out["proxy_sync"], out["proxy_async"], out["proxy_remote"]) == (7, 10, 10)
    assert out["async_method"] == 11
    assert out["counter"] == 11
    assert out["mine"] == (True, 2, 2)
    assert out["local"] == [1, 2, 3]
    assert out["bad"] is True
    assert out["owned_after"] == 0 and out["users_after"] == 0
    # The owners dropped the Python objects behind the freed values.
    assert out["objects_after"] == (0, 0)


def w_fork(rank, n):
    if rank == 0:
        r = dprpc.remote("worker1", helpers.make_counter, args=(41,))
        r.rpc_sync().incr()
        # worker2 gets a fork of it, reads it through the owner and a proxy.
        seen = dprpc.rpc_sync("worker2", helpers.rref_to_here, args=(r,)).n
        owner = dprpc.rpc_sync("worker2", helpers.rref_owner_name, args=(r,))
        del r
        left = _wait_count("num_owner_rrefs", 0, worker="worker1")
        forks = _wait_count("num_forks", 0, worker="worker1")
        return seen, owner, left, forks
    return None


def test_an_rref_forked_across_three_workers_is_released():
    r = run_world(w_fork, 3)
    assert r[0] == (42, "worker1", 0, 0)


def w_debug_leaks(rank, n):
    # Every worker checks its own contexts once the world is quiet.
    if rank == 0:
        refs = [dprpc.remote("worker%d" % (i % n), helpers.add, args=(i, i)) for i in range(20)]
        vals = [x.to_here() for x in refs]
        del refs
    dprpc.barrier()
    users = _wait_count("num_users", 0)
    owned = _wait_count("num_owner_rrefs", 0)
    objects = _wait_count("python_owned_objects", 0)
    dprpc.barrier()
    return (vals if rank == 0 else None), users, owned, objects


def test_many_rrefs_leave_no_context():
    r = run_world(w_debug_leaks, 3)
    assert r[0][0] == [2 * i for i in range(20)]
    for rank in range(3):
        assert r[rank][1:] == (0, 0, 0)
