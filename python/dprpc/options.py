# SPDX-License-Identifier: BSD-3-Clause
"""``init_rpc()``'s options, as ``TensorPipeRpcBackendOptions``."""
import enum

__all__ = ["BackendOptions", "BackendType"]

DEFAULT_RPC_TIMEOUT_SEC = 60.0
DEFAULT_NUM_WORKER_THREADS = 16
DEFAULT_INIT_METHOD = "env://"
DEFAULT_SHUTDOWN_TIMEOUT = 30.0


class BackendType(enum.Enum):
    r"""The one backend: RPC over DPDK."""
    DPRPC = "DPRPC"


class BackendOptions:
    r"""Options of :func:`dprpc.init_rpc`.

    Args:
        rpc_timeout (float): default timeout of calls, in seconds; 0 for
            none.  Default 60.
        num_worker_threads (int): threads that run the Python functions
            called on this worker.  Default 16.
        init_method (str): ``"env://"`` (``MASTER_ADDR``, ``MASTER_PORT``)
            or ``"tcp://HOST:PORT"``: where the workers meet.
        world (str, optional): a world map of your own (workers' MACs,
            IPv4 addresses and ports, memif links; see docs/worlds.md):
            then no store is used, and the rank and world size are the map's.
        vdev (str, optional): the port that reaches the workers no link of
            the map reaches, as a DPDK vdev string (e.g.
            ``"net_af_packet0,iface=eth1"`` or a ``net_memif`` port).
        eal_args (str, optional): EAL arguments, when this process has no
            EAL yet, e.g. real ports: ``"-l 0-3 -a 0000:3b:00.0"``.
            Default: the no-NIC set (docs/launch.md).
        run_dir (str, optional): where rank 0 makes the directory of the
            memif sockets (default ``$TMPDIR`` or ``/tmp``).
        max_msg_size (int, optional): largest request or result, in bytes
            (default 8 MiB; at most about 93 MB).
        queue_size (int): incoming calls waiting for a worker thread
            before further ones are refused with :class:`dprpc.Overloaded`.
            Default 4096.
        init_timeout (float): how long the rendezvous may take, seconds.
            Default 60.
        eal_mem_mb (int): memory of the no-NIC EAL, in MB (default 256): it
            holds messages being reassembled, so raise it with max_msg_size.
        world_key (bytes, optional): the world key, at least 16 bytes, the
            same on every worker: every frame is then tagged with it and a
            frame whose tag is wrong is refused (docs/security.md).
            Nothing is encrypted.
        world_key_file (str, optional): a file whose bytes are the world
            key, instead of ``world_key``.
        auth_payload (bool): with a key, the tags cover the payloads too
            (default: the headers only).
    """

    def __init__(self, rpc_timeout=DEFAULT_RPC_TIMEOUT_SEC,
                 num_worker_threads=DEFAULT_NUM_WORKER_THREADS,
                 init_method=DEFAULT_INIT_METHOD, world=None, eal_args=None, run_dir=None,
                 max_msg_size=None, queue_size=4096, init_timeout=60.0, eal_mem_mb=0,
                 vdev=None, world_key=None, world_key_file=None, auth_payload=False):
        if num_worker_threads < 1:
            raise ValueError("num_worker_threads must be at least 1")
        if rpc_timeout < 0:
            raise ValueError("rpc_timeout must be 0 (none) or positive")
        self.rpc_timeout = float(rpc_timeout)
        self.num_worker_threads = int(num_worker_threads)
        self.init_method = init_method
        self.world = world
        self.eal_args = eal_args
        self.run_dir = run_dir
        self.max_msg_size = max_msg_size
        self.queue_size = int(queue_size)
        self.init_timeout = float(init_timeout)
        self.eal_mem_mb = int(eal_mem_mb)
        self.vdev = vdev
        if world_key is not None and world_key_file is not None:
            raise ValueError("give world_key or world_key_file, not both")
        if world_key is not None and len(bytes(world_key)) < 16:
            raise ValueError("world_key must have at least 16 bytes")
        self.world_key = None if world_key is None else bytes(world_key)
        self.world_key_file = world_key_file
        self.auth_payload = bool(auth_payload)

    @classmethod
    def from_any(cls, opts):
        r"""Options from ours, from torch's backend options (duck-typed), or None."""
        if opts is None:
            return cls()
        if isinstance(opts, cls):
            return opts
        kw = {}
        for name in ("rpc_timeout", "num_worker_threads", "init_method"):
            v = getattr(opts, name, None)
            if v is not None:
                kw[name] = v
        return cls(**kw)
