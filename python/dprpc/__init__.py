# SPDX-License-Identifier: BSD-3-Clause
r"""dprpc: PyTorch's distributed RPC over DPDK.

``import dprpc as rpc`` in place of ``import torch.distributed.rpc as rpc``
runs a program that uses ``init_rpc``, ``rpc_sync``, ``rpc_async``,
``remote``, RRefs, ``@functions.async_execution`` and ``shutdown``.
"""
from . import functions
from ._errors import (CancelledError, Overloaded, RPCError, RPCTimeoutError, WorkerDownError,
                      WorkerLeftError, WorkerRestartedError)
from .api import (UNSET_RPC_TIMEOUT, WorkerInfo, _get_debug_info, _set_rpc_timeout, all_gather,
                  barrier, get_rpc_timeout, get_worker_info, init_rpc, is_available, remaining,
                  remote, rpc_async, rpc_stream, rpc_sync, shutdown)
from .futures import Future, collect_all, wait_all
from .options import BackendOptions, BackendType
from .rref import RRef

# torch.distributed.rpc's names for the same things.
TensorPipeRpcBackendOptions = BackendOptions
_all_gather = all_gather
_barrier = barrier

__all__ = [
    "init_rpc", "shutdown", "rpc_sync", "rpc_async", "remote", "rpc_stream", "RRef",
    "Future", "wait_all", "collect_all", "get_worker_info", "get_rpc_timeout", "WorkerInfo",
    "BackendOptions", "BackendType", "TensorPipeRpcBackendOptions", "functions", "remaining",
    "all_gather", "barrier", "is_available", "RPCError", "Overloaded", "RPCTimeoutError",
    "WorkerDownError", "WorkerRestartedError", "WorkerLeftError", "CancelledError",
]
