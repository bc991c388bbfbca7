# SPDX-License-Identifier: BSD-3-Clause
"""The digits model server of examples/model, in Python, over dprpc.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/digits.py [--window 16] [--passes 3]

Starts two workers, as torchrun would (RANK, WORLD_SIZE, MASTER_ADDR,
MASTER_PORT): "server" serves the 64-512-10 MLP of examples/model
(digits_mlp.bin) with dynamic batching; "client" sends every image of the
test split (digits_test.bin) with --window calls in flight, checks each
answer against the class the offline scikit-learn model gave, and reports
the accuracy (441/450 = 0.980000, the offline model's) and the latency.
It exits non-zero on any difference.

The server's classify() is an @async_execution function: it queues the
image with a Future and returns at once, freeing its RPC thread; one
batching thread takes whatever is queued (up to --max-batch) each time it
is free, computes the batch with NumPy, and completes the futures.
"""
import argparse
import os
import queue
import socket
import struct
import sys
import threading
import time

import numpy as np

import dprpc as rpc

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "..", "model", "digits_mlp.bin")
TEST = os.path.join(HERE, "..", "model", "digits_test.bin")


def load_model(path):
    r"""``(W1, b1, W2, b2)`` from digits_mlp.bin (format: examples/model/README.md)."""
    with open(path, "rb") as f:
        raw = f.read()
    magic, ver, n_in, n_hid, n_out = struct.unpack_from("<4sIIII", raw)
    if magic != b"DMLP" or ver != 1:
        raise ValueError("%s: not a digits model" % path)
    a = np.frombuffer(raw, dtype="<f4", offset=20)
    sizes = [n_in * n_hid, n_hid, n_hid * n_out, n_out]
    parts, off = [], 0
    for n in sizes:
        parts.append(a[off:off + n])
        off += n
    return (parts[0].reshape(n_in, n_hid), parts[1], parts[2].reshape(n_hid, n_out), parts[3])


def load_test(path):
    r"""``(pixels[n, 64] uint8, labels, predictions, correct)`` from digits_test.bin."""
    with open(path, "rb") as f:
        raw = f.read()
    magic, ver, n, npix, correct = struct.unpack_from("<4sIIII", raw)
    if magic != b"DTST" or ver != 1:
        raise ValueError("%s: not a digits test split" % path)
    rec = np.frombuffer(raw, dtype=np.uint8, offset=20).reshape(n, npix + 2)
    return rec[:, :npix], rec[:, npix], rec[:, npix + 1], correct


class Batcher:
    r"""Dynamic batching: a batch is whatever waits when the computing thread is free."""

    def __init__(self, model, max_batch):
        self.w1, self.b1, self.w2, self.b2 = model
        self.max_batch = max_batch
        self.q = queue.SimpleQueue()
        self.batches = 0
        self.items = 0
        threading.Thread(target=self._run, name="batcher", daemon=True).start()

    def submit(self, pixels):
        fut = rpc.Future()
        self.q.put((pixels, fut))
        return fut

    def _run(self):
        while True:
            batch = [self.q.get()]
            while len(batch) < self.max_batch:
                try:
                    batch.append(self.q.get_nowait())
                except queue.Empty:
                    break
            x = np.stack([p for p, _ in batch]).astype(np.float32) / 16.0
            hidden = np.maximum(x @ self.w1 + self.b1, 0.0)
            classes = np.argmax(hidden @ self.w2 + self.b2, axis=1)
            self.batches += 1
            self.items += len(batch)
            for (_, fut), c in zip(batch, classes):
                fut.set_result(int(c))


_batcher = None


@rpc.functions.async_execution
def classify(pixels):
    r"""The class of one 8x8 image (64 bytes, pixels 0..16): a Future of it."""
    return _batcher.submit(np.frombuffer(pixels, dtype=np.uint8))


def batch_stats():
    return _batcher.batches, _batcher.items


def client(window, passes):
    pixels, labels, preds, correct = load_test(TEST)
    n = len(labels)
    right = 0
    lat = []
    mismatches = 0
    for p in range(passes):
        inflight = []
        for i in range(n):
            inflight.append((i, time.perf_counter(),
                             rpc.rpc_async("server", classify, args=(pixels[i].tobytes(),))))
            while len(inflight) >= window or (i == n - 1 and inflight):
                j, t0, fut = inflight.pop(0)
                c = fut.wait()
                lat.append(time.perf_counter() - t0)
                mismatches += c != preds[j]
                if p == 0:
                    right += c == labels[j]
    lat.sort()
    batches, items = rpc.rpc_sync("server", batch_stats)
    print("client: accuracy on the test split %d/%d = %.6f; offline model %d/%d = %.6f: %s"
          % (right, n, right / n, correct, n, correct / n,
             "equal" if right == correct else "DIFFERENT"))
    print("client: %d calls, %d answers unlike the offline model's; latency p50 %.1f us, "
          "p99 %.1f us; the server computed %d batches (%.1f images each)"
          % (len(lat), mismatches, lat[len(lat) // 2] * 1e6, lat[len(lat) * 99 // 100] * 1e6,
             batches, items / max(batches, 1)))
    return 0 if right == correct and mismatches == 0 else 1


def worker(rank, args):
    global _batcher
    name = "server" if rank == 0 else "client"
    if rank == 0:
        _batcher = Batcher(load_model(MODEL), args.max_batch)
    rpc.init_rpc(name)
    rc = client(args.window, args.passes) if rank == 1 else 0
    rpc.shutdown()
    return rc


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--window", type=int, default=16, help="calls in flight")
    ap.add_argument("--passes", type=int, default=3, help="passes over the test split")
    ap.add_argument("--max-batch", type=int, default=32)
    args = ap.parse_args()
    if "RANK" in os.environ:  # started by a launcher: one worker
        return worker(int(os.environ["RANK"]), args)
    with socket.socket() as s:  # no launcher: start both workers here
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    import subprocess
    procs = []
    for rank in range(2):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port))
        procs.append(subprocess.Popen([sys.executable] + sys.argv, env=env))
    rcs = [p.wait(timeout=600) for p in procs]
    return max(rcs)


if __name__ == "__main__":
    sys.exit(main())
