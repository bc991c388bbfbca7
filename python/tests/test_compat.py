# SPDX-License-Identifier: BSD-3-Clause
"""One script under torch.distributed.rpc and under dprpc gives the same results;
Ctrl-C interrupts a waiting call."""
import os
import signal
import threading
import time

import pytest

import helpers
from conftest import free_port, run_world

torch = pytest.importorskip("torch")

_rpc = None  # the library of this process: torch.distributed.rpc or dprpc


@helpers.dprpc.functions.async_execution  # torch's decorator sets the same attribute
def async_add_chained(to, x, y, z):
    return _rpc.rpc_async(to, torch.add, args=(x, y)).then(lambda fut: fut.wait() + z)


def script(rpc, rank):
    r"""torch.distributed.rpc's docstring examples, and a little more, written for ``rpc``."""
    out = []
    if rank == 0:
        out.append(rpc.rpc_sync("w1", torch.add, args=(torch.ones(2), 3)).tolist())
        fut1 = rpc.rpc_async("w1", torch.add, args=(torch.ones(2), 3))
        fut2 = rpc.rpc_async("w1", min, args=(1, 2))
        out.append((fut1.wait() + fut2.wait()).tolist())
        rref1 = rpc.remote("w1", torch.add, args=(torch.ones(2), 3))
        rref2 = rpc.remote("w1", torch.add, args=(torch.ones(2), 1))
        out.append((rref1.to_here() + rref2.to_here()).tolist())
        out.append(rpc.rpc_sync("w1", async_add_chained,
                                args=("w0", torch.ones(2), 1, 1)).tolist())
        c = rpc.remote("w1", helpers.make_counter, args=(3,))
        out.append(c.rpc_sync().incr(4))
        out.append(c.to_here().n)
        out.append(rpc.rpc_sync("w1", helpers.rref_to_here, args=(rref1,)).tolist())
        try:
            rpc.rpc_sync("w1", helpers.raise_boom, args=("x",))
        except Exception as e:  # torch 1.13 raises RuntimeError, dprpc Boom: both name it
            out.append("Boom" in str(e) and "On WorkerInfo(id=1, name=w1)" in str(e))
        out.append(rpc.get_worker_info("w1").id)
        out.append(rpc.get_rpc_timeout())  # the options' default, 60 s
        rpc._set_rpc_timeout(12.5)
        out.append(rpc.get_rpc_timeout())
        rpc._set_rpc_timeout(60)
        big = torch.arange(1 << 16, dtype=torch.float32)
        out.append(float(rpc.rpc_sync("w1", torch.sum, args=(big,))))
        del rref1, rref2, c
    return out


def _run(lib, rank, port, q):
    global _rpc
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE="2", TP_SOCKET_IFNAME="lo")
    try:
        if lib == "torch":
            import torch.distributed.rpc as rpc
            opts = rpc.TensorPipeRpcBackendOptions(init_method="tcp://127.0.0.1:%d" % port)
        else:
            import dprpc as rpc
            opts = rpc.BackendOptions(run_dir=os.environ["DPRPC_TEST_RUN_DIR"])
        _rpc = rpc
        rpc.init_rpc("w%d" % rank, rank=rank, world_size=2, rpc_backend_options=opts)
        out = script(rpc, rank)
        rpc.shutdown()
        q.put((rank, "ok", out))
    except BaseException:
        import traceback
        q.put((rank, "error", traceback.format_exc()))
        os._exit(1)



def test_the_same_script_under_torch_and_dprpc():
    import multiprocessing
    import shutil
    import tempfile
    results = {}
    for lib in ("torch", "dprpc"):
        ctx = multiprocessing.get_context("spawn")
        q = ctx.Queue()
        port = free_port()
        d = tempfile.mkdtemp(prefix="dprpc-t")
        os.environ["DPRPC_TEST_RUN_DIR"] = d
        ps = [ctx.Process(target=_run, args=(lib, r, port, q)) for r in range(2)]
        for p in ps:
            p.start()
        got = {}
        try:
            while len(got) < 2:
                r, st, v = q.get(timeout=240)
                got[r] = (st, v)
                assert st == "ok", "%s worker%d:\n%s" % (lib, r, v)
            for p in ps:
                p.join(120)
        finally:
            for p in ps:
                if p.is_alive():
                    p.kill()
            shutil.rmtree(d, ignore_errors=True)
        results[lib] = got[0][1]
    assert results["dprpc"] == results["torch"]
    assert results["dprpc"][:3] == [[4.0, 4.0], [5.0, 5.0], [6.0, 6.0]]


def w_ctrl_c(rank, n):
    if rank != 0:
        return None
    import dprpc
    threading.Timer(0.5, os.kill, args=(os.getpid(), signal.SIGINT)).start()
    t0 = time.monotonic()
    try:
        dprpc.rpc_sync("worker1", helpers.sleep_then, args=(3.0, 1))
        what = "returned"
    except KeyboardInterrupt:
        what = "interrupted"
    took = time.monotonic() - t0
    return what, took < 2.5


def test_ctrl_c_interrupts_a_waiting_call():
    assert run_world(w_ctrl_c, 2)[0] == ("interrupted", True)
