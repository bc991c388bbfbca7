# SPDX-License-Identifier: BSD-3-Clause
"""dprpc against torch.distributed.rpc: the same calls, same script, back to back.

    PYTHONPATH=build/python /usr/bin/python3 perf/pybench.py [--pairs 11] [--perf build/perf/dprpc-perf]

Each pair runs a world of two worker processes on dprpc, then one on
torch.distributed.rpc (TensorPipe), in either order (alternating), and
measures on worker 0, calling worker 1:

  sync_p50_us, sync_p99_us   rpc_sync of a no-op function
  async_w1_rps, async_w32_rps rpc_async with 1 and 32 calls in flight
  remote_p50_us              remote() + to_here() of a no-op's result
  mib_arg_Bps                rpc_sync with a 1 MiB NumPy array argument
                             (the callee returns its length): bytes per second

With --perf it also runs dprpc's C rpc_sync (dprpc-perf latency, same
machine, same minute) in each pair, so the Python layer's own cost shows.
The report gives, per figure, each library's median over the pairs, the
ratio of medians and the median of the per-pair ratios, and the load
average.  The machine is noisy: compare only within one run.
"""
import argparse
import json
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import time

N_SYNC = 3000
N_REMOTE = 1000
N_MIB = 200
RATE_SECONDS = 1.0
WARMUP = 300


def noop():
    return None


def length(a):
    return len(a)


def _pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))]


def _rate(rpc, window, seconds):
    futs = []
    done = 0
    t0 = time.perf_counter()
    end = t0 + seconds
    while True:
        while len(futs) < window:
            futs.append(rpc.rpc_async("w1", noop))
        futs.pop(0).wait()
        done += 1
        if done % 64 == 0 and time.perf_counter() >= end:
            break
    for f in futs:
        f.wait()
    return done / (time.perf_counter() - t0)


def measure(rpc, np):
    out = {}
    for _ in range(WARMUP):
        rpc.rpc_sync("w1", noop)
    lat = []
    for _ in range(N_SYNC):
        t = time.perf_counter()
        rpc.rpc_sync("w1", noop)
        lat.append(time.perf_counter() - t)
    out["sync_p50_us"] = _pct(lat, 0.5) * 1e6
    out["sync_p99_us"] = _pct(lat, 0.99) * 1e6
    out["async_w1_rps"] = _rate(rpc, 1, RATE_SECONDS)
    out["async_w32_rps"] = _rate(rpc, 32, RATE_SECONDS)
    lat = []
    for _ in range(N_REMOTE):
        t = time.perf_counter()
        rpc.remote("w1", noop).to_here()
        lat.append(time.perf_counter() - t)
    out["remote_p50_us"] = _pct(lat, 0.5) * 1e6
    a = np.ones(1 << 18, dtype=np.float32)  # 1 MiB
    for _ in range(10):
        rpc.rpc_sync("w1", length, args=(a,))
    t = time.perf_counter()
    for _ in range(N_MIB):
        assert rpc.rpc_sync("w1", length, args=(a,)) == len(a)
    out["mib_arg_Bps"] = N_MIB * a.nbytes / (time.perf_counter() - t)
    return out


def worker(lib, rank, port, q):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE="2")
    import numpy as np
    if lib == "dprpc":
        import dprpc as rpc
        opts = rpc.BackendOptions(rpc_timeout=60)
    else:
        import torch.distributed.rpc as rpc
        os.environ.setdefault("TP_SOCKET_IFNAME", "lo")
        opts = rpc.TensorPipeRpcBackendOptions(rpc_timeout=60,
                                               init_method="tcp://127.0.0.1:%d" % port)
    rpc.init_rpc("w%d" % rank, rank=rank, world_size=2, rpc_backend_options=opts)
    res = measure(rpc, np) if rank == 0 else None
    rpc.shutdown()
    if rank == 0:
        q.put(res)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_world(lib):
    ctx = multiprocessing.get_context("spawn")
    q = ctx.Queue()
    port = free_port()
    ps = [ctx.Process(target=worker, args=(lib, r, port, q)) for r in range(2)]
    for p in ps:
        p.start()
    res = q.get(timeout=600)
    for p in ps:
        p.join(120)
        if p.exitcode != 0:
            raise RuntimeError("%s worker exited %s" % (lib, p.exitcode))
    return res


def c_rpc_sync_p50(perf):
    r = subprocess.run([perf, "--", "latency", "--duration", "1", "--repeat", "1", "--json"],
                       capture_output=True, text=True, timeout=120, check=True)
    d = json.loads(r.stdout.strip().splitlines()[-1])
    return d.get("rtt_p50_us") or d["runs"][0]["rtt_p50_us"]


KEYS = ["sync_p50_us", "sync_p99_us", "async_w1_rps", "async_w32_rps", "remote_p50_us",
        "mib_arg_Bps"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=11)
    ap.add_argument("--perf", default=None, help="dprpc-perf, for the C rpc_sync beside")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    pairs = []
    for i in range(args.pairs):
        order = ("dprpc", "torch") if i % 2 == 0 else ("torch", "dprpc")
        got = {lib: run_world(lib) for lib in order}
        if args.perf:
            got["c"] = {"sync_p50_us": c_rpc_sync_p50(args.perf)}
        pairs.append(got)
        d, t = got["dprpc"], got["torch"]
        print("pair %2d  dprpc sync p50 %7.2f us  torch %7.2f us  | w32 %9.0f / %7.0f calls/s"
              "  | remote %7.2f / %7.2f us  | 1 MiB %6.2f / %5.2f GB/s%s" % (
                  i + 1, d["sync_p50_us"], t["sync_p50_us"], d["async_w32_rps"],
                  t["async_w32_rps"], d["remote_p50_us"], t["remote_p50_us"],
                  d["mib_arg_Bps"] / 1e9, t["mib_arg_Bps"] / 1e9,
                  "  | C sync p50 %.2f us" % got["c"]["sync_p50_us"] if args.perf else ""),
              flush=True)
    report = {"pairs": len(pairs), "loadavg": os.getloadavg(), "figures": {}}
    print("\n%-15s %12s %12s %14s %18s" % ("figure", "dprpc", "torch", "ratio of medians",
                                           "median pair ratio"))
    for k in KEYS:
        dv = [p["dprpc"][k] for p in pairs]
        tv = [p["torch"][k] for p in pairs]
        ratios = [a / b for a, b in zip(dv, tv)]
        md, mt = statistics.median(dv), statistics.median(tv)
        report["figures"][k] = {"dprpc": md, "torch": mt, "ratio_of_medians": md / mt,
                                "median_pair_ratio": statistics.median(ratios)}
        print("%-15s %12.2f %12.2f %14.4f %18.4f" % (k, md, mt, md / mt,
                                                     statistics.median(ratios)))
    ds = [p["dprpc"]["sync_p50_us"] for p in pairs]
    rs = [p["dprpc"]["remote_p50_us"] / p["dprpc"]["sync_p50_us"] for p in pairs]
    report["remote_over_sync"] = statistics.median(rs)
    print("\ndprpc remote()+to_here() p50 / rpc_sync p50: median of pairs %.2f" %
          report["remote_over_sync"])
    if args.perf:
        cs = [p["c"]["sync_p50_us"] for p in pairs]
        diff = [a - b for a, b in zip(ds, cs)]
        report["python_minus_c_sync_p50_us"] = statistics.median(diff)
        report["c_sync_p50_us"] = statistics.median(cs)
        print("dprpc Python rpc_sync p50 - C rpc_sync p50: median of pairs %.2f us "
              "(C p50 median %.2f us)" % (statistics.median(diff), statistics.median(cs)))
    print("load average at the end: %.2f %.2f %.2f" % os.getloadavg())
    if args.json:
        print(json.dumps(report))


if __name__ == "__main__":
    sys.exit(main())
