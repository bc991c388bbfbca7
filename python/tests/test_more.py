# SPDX-License-Identifier: BSD-3-Clause
"""Beyond PyTorch, and the hard cases: streams, collectives, large arrays, a killed worker."""
import os
import time

import numpy as np
import pytest

import dprpc
import helpers
from conftest import run_world


def w_stream(rank, n):
    if rank != 0:
        return None
    toks = list(dprpc.rpc_stream("worker1", helpers.tokens, args=(5,)))
    got = []
    try:
        for x in dprpc.rpc_stream("worker1", helpers.tokens_then_fail, args=(3,)):
            got.append(x)
    except helpers.Boom as e:
        err = "stream broke" in str(e)
    return toks, got, err


def test_rpc_stream_yields_in_order_and_raises():
    assert run_world(w_stream, 2)[0] == (["tok0", "tok1", "tok2", "tok3", "tok4"], [0, 1, 2],
                                         True)


def w_long_stream(rank, n):
    if rank != 0:
        return None
    got = []
    for x in dprpc.rpc_stream("worker1", helpers.tokens, args=(600,)):
        got.append(x)
        if len(got) % 50 == 0:
            time.sleep(0.01)  # a slow reader: the producer waits for its window
    return got


def test_a_stream_longer_than_the_window_waits_for_a_slow_reader():
    assert run_world(w_long_stream, 2)[0] == ["tok%d" % i for i in range(600)]


def w_collectives(rank, n):
    got = dprpc.all_gather({"rank": rank})
    dprpc.barrier()
    pair = dprpc.all_gather(rank * 10, names=["worker0", "worker2"]) if rank in (0, 2) else None
    dprpc.barrier(["worker0", "worker1", "worker2"])
    return got, pair


def test_all_gather_and_barrier():
    r = run_world(w_collectives, 3)
    for rank in range(3):
        got, pair = r[rank]
        assert got == {"worker%d" % i: {"rank": i} for i in range(3)}
        if rank != 1:
            assert pair == {"worker0": 0, "worker2": 20}


def w_big(rank, n):
    if rank != 0:
        return None
    rng = np.random.default_rng(7)
    a = rng.integers(0, 2**63, size=(64 << 20) // 8, dtype=np.int64)
    b = dprpc.rpc_sync("worker1", helpers.echo, args=(a,), timeout=120)
    raw = os.urandom(3 << 20)
    c = dprpc.rpc_sync("worker1", helpers.echo, args=(raw,))
    return bool(np.array_equal(a, b)), b.dtype.str, b.shape, c == raw, b.flags.writeable


def test_a_64_mib_array_crosses_byte_exact():
    r = run_world(w_big, 2, opts={"max_msg_size": (64 << 20) + (1 << 16), "eal_mem_mb": 1024})
    assert r[0] == (True, "<i8", ((64 << 20) // 8,), True, True)


def w_in_place(rank, n):
    if rank != 0:
        return None
    a = np.zeros(1 << 16, dtype=np.int64)  # 512 KiB: reassembled by the library
    return dprpc.rpc_sync("worker1", helpers.add_one_in_place, args=(a,)), int(a.sum())


def test_a_large_argument_is_the_library_s_memory_and_writable():
    # The callee's array is a view of the request's reassembled payload,
    # held past the answer (no copy), and writable as torch's tensors are;
    # the caller's own array is untouched.
    assert run_world(w_in_place, 2)[0] == (("Payload", True, 1 << 16), 0)


def w_in_place_proxy(rank, n):
    if rank != 0:
        return None
    a = np.zeros(1 << 16, dtype=np.int64)
    rref = dprpc.remote("worker1", helpers.Holder)
    return rref.rpc_sync().where(a), rref.rpc_async().where(a).wait(), int(a.sum())


def test_a_proxy_s_large_argument_is_the_library_s_memory_too():
    # Through an RRef proxy the array goes out of band as well.
    got = ("Payload", True, 1 << 16)
    assert run_world(w_in_place_proxy, 2)[0] == (got, got, 0)


def w_killed(rank, n):
    if rank == 1:
        time.sleep(120)  # the call below ends this process first
        return None
    t0 = time.monotonic()
    try:
        # The callee dies while it handles the call: it never answers.
        dprpc.rpc_sync("worker1", helpers.die, args=(3,), timeout=30)
        got = None
    except dprpc.WorkerDownError as e:
        got = (type(e).__name__, isinstance(e, ConnectionError))
    took = time.monotonic() - t0
    again = None
    try:
        dprpc.rpc_sync("worker1", helpers.noop, timeout=30)
    except dprpc.WorkerDownError:
        again = "down"
    dprpc.shutdown(graceful=False)
    return got, took < 30, again


def test_a_killed_worker_fails_calls_fast():
    r = run_world(_killed_entry, 2, init=False, expect_exit={1: 3})
    got, fast, again = r[0]
    assert got == ("WorkerDownError", True)
    assert fast is True
    assert again == "down"


def _killed_entry(rank, n):
    # The killed worker's sockets stay in the test's folder, which the
    # harness removes.
    dprpc.init_rpc("worker%d" % rank, rpc_backend_options=dprpc.BackendOptions(
        run_dir=os.environ["DPRPC_TEST_RUN_DIR"]))
    return w_killed(rank, n)


def w_agent_store(rank, n):
    os.environ["TORCHELASTIC_USE_AGENT_STORE"] = "True"
    dprpc.init_rpc("worker%d" % rank, rpc_backend_options=dprpc.BackendOptions(
        run_dir=os.environ["DPRPC_TEST_RUN_DIR"]))
    v = dprpc.rpc_sync("worker%d" % (1 - rank), helpers.add, args=(rank, 10))
    dprpc.shutdown()
    return v


def test_under_torchrun_the_store_takes_the_next_port():
    import socket
    # A store of torchrun's agent holds MASTER_PORT: here, any listener.
    port = __import__("conftest").free_port()
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))
        s.listen()
        r = run_world(w_agent_store, 2, init=False, port=port)
    assert r == {0: 10, 1: 11}


def w_own_world(rank, n):
    d = os.environ["DPRPC_TEST_RUN_DIR"]
    world = ("a 0 02:00:00:00:00:01 127.100.1.1 7000; b 1 02:00:00:00:00:02 127.100.1.2 7000")
    vdev = "net_memif%d,role=%s,socket=%s/ab.sock,socket-abstract=no" % (
        rank, "server" if rank == 0 else "client", d)
    dprpc.init_rpc("ab"[rank], rpc_backend_options=dprpc.BackendOptions(world=world, vdev=vdev))
    me = dprpc.get_worker_info()
    v = dprpc.rpc_sync("ab"[1 - rank], helpers.whoami)
    dprpc.shutdown()
    return me.name, me.id, v


def test_a_world_map_and_a_port_of_ones_own():
    r = run_world(w_own_world, 2, init=False)
    assert r == {0: ("a", 0, "b"), 1: ("b", 1, "a")}
