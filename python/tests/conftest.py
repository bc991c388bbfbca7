# SPDX-License-Identifier: BSD-3-Clause
"""Worlds of worker processes for the tests, started as PyTorch's RPC tests start them:
spawned, meeting through env:// (MASTER_ADDR, MASTER_PORT) with RANK and WORLD_SIZE."""
import glob
import multiprocessing
import os
import shutil
import socket
import tempfile
import traceback

import pytest

import dprpc

WORLD_TIMEOUT = 240  # s: a whole world's run, on a loaded 2-CPU machine


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _entry(fn, rank, world_size, port, run_dir, q, args, opts, init):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE=str(world_size), DPRPC_TEST_RUN_DIR=run_dir)
    try:
        if init:
            o = dprpc.BackendOptions(run_dir=run_dir, **(opts or {}))
            dprpc.init_rpc("worker%d" % rank, rpc_backend_options=o)
        r = fn(rank, world_size, *args)
        if init:
            dprpc.shutdown()
        q.put((rank, "ok", r))
    except BaseException:
        q.put((rank, "error", traceback.format_exc()))
        raise


def run_world(fn, world_size=2, args=(), opts=None, init=True, expect_exit=None, port=None):
    r"""Run ``fn(rank, world_size, *args)`` in ``world_size`` spawned workers.

    With ``init`` each worker is ``worker<rank>``, initialised before and
    shut down after ``fn``.  Returns ``{rank: fn's result}``; fails the test
    with the worker's traceback if any raised.  ``expect_exit`` maps ranks
    to the exit codes expected instead of 0 (a worker that kills itself).
    """
    ctx = multiprocessing.get_context("spawn")
    q = ctx.Queue()
    port = port or free_port()
    run_dir = tempfile.mkdtemp(prefix="dprpc-t")
    o = dict(opts or {})
    procs = [ctx.Process(target=_entry, args=(fn, r, world_size, port, run_dir, q, args, o, init))
             for r in range(world_size)]
    for p in procs:
        p.start()
    expect_exit = expect_exit or {}
    results, errors = {}, []
    try:
        want = world_size - len(expect_exit)
        while len(results) + len(errors) < want:
            rank, status, value = q.get(timeout=WORLD_TIMEOUT)
            if status == "ok":
                results[rank] = value
            else:
                errors.append("worker%d:\n%s" % (rank, value))
        for p in procs:
            p.join(WORLD_TIMEOUT)
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
                p.join()
        leftovers = os.listdir(run_dir) if os.path.isdir(run_dir) else []
        shutil.rmtree(run_dir, ignore_errors=True)
        for r, p in enumerate(procs):
            if r in expect_exit:  # killed workers leave their EAL directory
                for d in glob.glob("/var/run/dpdk/dprpc-%d-*" % p.pid):
                    shutil.rmtree(d, ignore_errors=True)
    assert not errors, "\n".join(errors)
    for r, p in enumerate(procs):
        assert p.exitcode == expect_exit.get(r, 0), "worker%d exited %s" % (r, p.exitcode)
        if r not in expect_exit:
            assert not glob.glob("/var/run/dpdk/dprpc-%d-*" % p.pid), "EAL directory left"
    if not expect_exit:
        assert leftovers == [], "memif directory left: %s" % leftovers
    return results


@pytest.fixture
def world():
    return run_world
