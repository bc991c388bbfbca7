# SPDX-License-Identifier: BSD-3-Clause
"""The ``torch.distributed.rpc`` API over dprpc."""
import atexit
import gc
import os
import threading

from . import _C
from . import _errors
from . import _server
from . import rref as _rref_mod
from ._errors import raise_from
from ._serialize import TAG_EXC, decode, encode, encode_call
from .futures import Future
from .options import DEFAULT_SHUTDOWN_TIMEOUT, BackendOptions
from .rref import RRef

__all__ = [
    "init_rpc", "shutdown", "rpc_sync", "rpc_async", "remote", "get_worker_info",
    "WorkerInfo", "rpc_stream", "remaining", "all_gather", "barrier", "is_available",
    "get_rpc_timeout", "_set_rpc_timeout", "_get_debug_info",
]

UNSET_RPC_TIMEOUT = -1.0

_lock = threading.Lock()
_state = {"infos": None, "by_name": None, "self": None, "atexit": False}


class WorkerInfo:
    r"""A worker of the world: its ``name`` and ``id`` (its rank)."""

    __slots__ = ("name", "id")

    def __init__(self, name, id):
        self.name = name
        self.id = id

    def __eq__(self, other):
        return isinstance(other, WorkerInfo) and (self.name, self.id) == (other.name, other.id)

    def __hash__(self):
        return hash((self.name, self.id))

    def __repr__(self):
        return "WorkerInfo(id=%d, name=%s)" % (self.id, self.name)

    def __reduce__(self):
        return WorkerInfo, (self.name, self.id)


def is_available():
    r"""True: dprpc's RPC is there (as ``torch.distributed.rpc.is_available``)."""
    return True


def _check_init():
    if _state["self"] is None:
        raise RuntimeError("RPC has not been initialized: call dprpc.init_rpc() first")


def _refresh_infos():
    infos = {r: WorkerInfo(n, r) for n, r, _ in _C.worker_infos()}
    _state["infos"] = infos
    _state["by_name"] = {i.name: i for i in infos.values()}


def _info_of_rank(rank):
    infos = _state["infos"]
    if infos is None or rank not in infos:
        _check_init()
        _refresh_infos()
        infos = _state["infos"]
    if rank not in infos:
        raise ValueError("no worker of rank %d" % rank)
    return infos[rank]


def _rank_of(to):
    by_name = _state["by_name"]
    if type(to) is str:
        if by_name is not None:
            i = by_name.get(to)
            if i is not None:
                return i.id
        _check_init()
        _refresh_infos()
        i = _state["by_name"].get(to)
        if i is None:
            raise ValueError("unknown destination worker %r" % (to,))
        return i.id
    if isinstance(to, WorkerInfo):
        return _rank_of(to.name)
    if isinstance(to, int) and not isinstance(to, bool):
        _info_of_rank(to)
        return to
    raise TypeError("a worker is a name, a rank or a WorkerInfo, not %s" % type(to).__name__)


_remote_exception = _server.remote_exception


def _decode_result(c):
    try:
        r = c.result()  # a message without out-of-band buffers, loaded in C
    except _C.Error as e:
        raise_from(e)
    tag, obj = r if r is not None else decode(c, copy=False)
    if tag == TAG_EXC:
        raise _remote_exception(obj)
    return obj


def init_rpc(name, backend=None, rank=-1, world_size=None, rpc_backend_options=None):
    r"""Join the world as worker ``name`` (blocks until every worker has).

    Args:
        name (str): this worker's name, unique in the world (``[A-Za-z0-9_.:-]``,
            up to 31 characters).
        backend: ignored (there is one backend); any value is accepted so
            that torch code passes its own.
        rank (int): this worker's rank; -1 takes ``RANK`` from the environment.
        world_size (int): workers in the world; None takes ``WORLD_SIZE``.
        rpc_backend_options (BackendOptions): see :class:`dprpc.BackendOptions`;
            torch's options are read for ``rpc_timeout``,
            ``num_worker_threads`` and ``init_method``.

    The workers meet through ``init_method`` (``env://``: rank 0 listens
    on ``MASTER_ADDR:MASTER_PORT``; under torchrun, whose agent holds that
    port with its own store, on ``MASTER_PORT + 1``); on one machine they
    are joined by memif links made for them, with no NIC or hugepages
    needed.

    Raises:
        RuntimeError: RPC is initialized already, or the world did not form
            (the message names the workers missing).
        ValueError: a bad name, rank or world size.
    """
    opts = BackendOptions.from_any(rpc_backend_options)
    init_method = opts.init_method
    if (init_method in (None, "env://")
            and os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True"):
        # Under torchrun the agent's own store holds MASTER_PORT: dprpc's
        # store, which speaks another protocol, takes the next port.
        init_method = "tcp://%s:%d" % (os.environ.get("MASTER_ADDR", "127.0.0.1"),
                                       int(os.environ["MASTER_PORT"]) + 1)
    with _lock:
        if _state["self"] is not None:
            raise RuntimeError("RPC is already initialized")
        try:
            _C.init(name, rank=-1 if rank is None else rank,
                    world_size=-1 if world_size is None else world_size,
                    init_method=init_method, timeout=opts.init_timeout,
                    rpc_timeout=opts.rpc_timeout, run_dir=opts.run_dir,
                    eal_args=opts.eal_args, world=opts.world,
                    max_msg_size=opts.max_msg_size or 0, queue_size=opts.queue_size,
                    eal_mem_mb=opts.eal_mem_mb, vdev=opts.vdev, world_key=opts.world_key,
                    world_key_file=opts.world_key_file, auth_payload=opts.auth_payload)
        except _C.Error as e:
            code, _, msg = e.args[0], e.args[1], e.args[2]
            if code in (-22,):
                raise ValueError(msg) from None
            raise RuntimeError("init_rpc failed: %s" % msg) from None
        me, my_rank, _ = _C.self_info()
        _errors._forget_names()
        _refresh_infos()
        _state["self"] = _state["infos"][my_rank]
        _server.start(opts.num_worker_threads, me, my_rank)
        if not _state["atexit"]:
            atexit.register(_at_exit)
            _state["atexit"] = True


def shutdown(graceful=True, timeout=DEFAULT_SHUTDOWN_TIMEOUT):
    r"""Leave the world.

    Args:
        graceful (bool): wait for every worker to call shutdown() too, and
            for the calls in flight on every side (torch's default), before
            this worker goes; False stops at once, failing its pending calls.
        timeout (float): seconds the graceful steps may take.
    """
    with _lock:
        _check_init()
        # Futures caught in reference cycles (an exception's traceback)
        # are returned to the agent before it goes.
        gc.collect()
        try:
            _C.shutdown(graceful, timeout)
            err = None
        except _C.Error as e:
            err = e
        finally:
            _server.stop()
            _state["self"] = _state["infos"] = _state["by_name"] = None
            _errors._forget_names()
        if err is not None:
            raise RuntimeError("shutdown: %s" % (err.args[2],)) from None


def _at_exit():
    if _state["self"] is not None:
        try:
            shutdown(graceful=False, timeout=1.0)
        except Exception:
            pass
    gc.collect()
    try:
        _C.eal_cleanup()
    except _C.Error:
        pass


def get_worker_info(worker_name=None):
    r"""The :class:`WorkerInfo` of ``worker_name``, or of this worker for None."""
    _check_init()
    if worker_name is None:
        return _state["self"]
    return _info_of_rank(_rank_of(worker_name))


def get_rpc_timeout():
    r"""The default timeout of RPCs, in seconds.

    It is the ``rpc_timeout`` of the :class:`BackendOptions` given to
    :func:`init_rpc` (60 by default) until :func:`_set_rpc_timeout`
    changes it, and bounds every call made without a timeout of its own
    (``timeout=-1``, the default): :func:`rpc_sync`, :func:`rpc_async`,
    :func:`remote`, :func:`rpc_stream`, :meth:`RRef.to_here` and the RRef
    proxies, :func:`all_gather` and :func:`barrier`.

    Returns:
        ``float`` indicating the RPC timeout in seconds; 0 for none.

    Raises:
        RuntimeError: RPC is not initialized.
    """
    _check_init()
    return _C.rpc_timeout()


def _set_rpc_timeout(rpcTimeoutSeconds):
    r"""Set the default timeout of RPCs (see :func:`get_rpc_timeout`).

    If an RPC made from now on without a timeout of its own is not
    completed within this time, it raises :class:`dprpc.RPCTimeoutError`;
    RPCs already made keep the timeout they were made with.  To give one
    RPC a timeout of its own, pass ``timeout`` to :func:`rpc_sync`,
    :func:`rpc_async`, :func:`remote`, ...

    Args:
        rpcTimeoutSeconds (float): timeout value in seconds; 0 (or
            ``math.inf``) for none.  Kept to the microsecond (torch keeps
            whole milliseconds, so that below 1 ms it means none there).

    Raises:
        RuntimeError: RPC is not initialized.
        ValueError: a negative timeout, or NaN (torch takes them; for a call
            a negative timeout means the default).
        TypeError: not a number.
    """
    _check_init()
    if not rpcTimeoutSeconds >= 0:
        raise ValueError("the RPC timeout is 0 (none) or positive seconds, not %r"
                         % (rpcTimeoutSeconds,))
    try:
        _C.set_rpc_timeout(rpcTimeoutSeconds)
    except _C.Error as e:
        raise_from(e)


def _get_debug_info():
    r"""This worker's counters: calls, requests, RRefs, resources in use."""
    _check_init()
    d = _C.debug_info()
    d["python_owned_objects"] = _server.owned_count()
    return d


def _call_parts(func, args, kwargs, rank):
    if args is None:
        args = ()
    elif type(args) is not tuple:
        args = tuple(args)
    return encode_call(func, args, kwargs or None, rank)


def rpc_sync(to, func, args=None, kwargs=None, timeout=UNSET_RPC_TIMEOUT):
    r"""Run ``func(*args, **kwargs)`` on worker ``to`` and return its result.

    Args:
        to (str or int or WorkerInfo): the callee.
        func (Callable): any picklable callable: a module-level function, a
            builtin such as ``operator.add`` or ``torch.add``.
        args (tuple): positional arguments; kwargs (dict): keyword ones.
        timeout (float): seconds; -1 (default) for the RPC timeout of
            :class:`BackendOptions`, 0 for none.

    Raises:
        the exception ``func`` raised on the callee (its type where it can be
        rebuilt, the remote traceback in its message), or
        :class:`dprpc.RPCTimeoutError`, :class:`dprpc.WorkerDownError`,
        :class:`dprpc.Overloaded`, ... for the library's errors.
    """
    rank = _rank_of(to)
    parts = _call_parts(func, args, kwargs, rank)
    try:
        c = _C.call_sync(rank, _C.K_CALL, parts, timeout)
    except _C.Error as e:
        raise_from(e)
    return _decode_result(c)


def rpc_async(to, func, args=None, kwargs=None, timeout=UNSET_RPC_TIMEOUT):
    r"""As :func:`rpc_sync`, but return at once a :class:`Future` of the result."""
    rank = _rank_of(to)
    parts = _call_parts(func, args, kwargs, rank)
    try:
        c = _C.call(rank, _C.K_CALL, parts, timeout)
    except _C.Error as e:
        raise_from(e)
    return Future(_c=c, _decode=_decode_result)


def remote(to, func, args=None, kwargs=None, timeout=UNSET_RPC_TIMEOUT):
    r"""Run ``func`` on worker ``to``, which keeps the result; return an :class:`RRef` to it.

    The RRef comes back at once; ``to_here()`` waits for the value.
    ``timeout`` bounds the creation (seconds; -1 default, 0 none).
    """
    rank = _rank_of(to)
    parts = _call_parts(func, args, kwargs, rank)
    try:
        return RRef._wrap(_C.remote(rank, _C.K_REMOTE, parts, timeout))
    except _C.Error as e:
        raise_from(e)


def rpc_stream(to, func, args=None, kwargs=None, timeout=UNSET_RPC_TIMEOUT):
    r"""Iterate over what generator function ``func`` yields on worker ``to``.

    Beyond torch: server streaming (e.g. tokens).  Each item crosses as it
    is yielded, under flow control; ``timeout`` bounds the whole stream.
    An exception in ``func`` is raised by the iterator.
    """
    rank = _rank_of(to)
    parts = _call_parts(func, args, kwargs, rank)
    try:
        s = _C.stream_open(rank, parts, timeout)
    except _C.Error as e:
        raise_from(e)
    return _StreamIter(s)


class _StreamIter:
    def __init__(self, s):
        self._s = s

    def __iter__(self):
        return self

    def __next__(self):
        if self._s is None:
            raise StopIteration
        try:
            chunk = self._s.next()
        except _C.Error as e:
            self.close()
            raise_from(e)
        if chunk is None:
            self.close()
            raise StopIteration
        tag, obj = decode(chunk, copy=False)
        if tag == TAG_EXC:
            self.close()
            raise _remote_exception(obj)
        return obj

    def close(self):
        r"""Stop reading (cancels the stream if the callee still sends)."""
        if self._s is not None:
            self._s.close()
            self._s = None

    def __del__(self):
        self.close()


def remaining():
    r"""Seconds left before the caller's deadline, in a function run by RPC.

    Beyond torch: the caller's timeout travels with its call.  None when
    the caller set none, or outside a function run by RPC.
    """
    req = _server.current_request()
    return None if req is None else req.remaining()


def _group(names):
    if names is None:
        _check_init()
        if _state["infos"] is None:
            _refresh_infos()
        return [i.name for i in sorted(_state["infos"].values(), key=lambda i: i.id)]
    return [n.name if isinstance(n, WorkerInfo) else n for n in names]


def all_gather(obj, names=None, timeout=UNSET_RPC_TIMEOUT):
    r"""Gather ``obj`` from every worker of ``names`` (all by default): ``{name: obj}``.

    Every worker of the group calls it.  A worker's object pickles to at
    most 64 KiB.  On failure the exception names the workers that did not
    arrive.
    """
    group = _group(names)
    try:
        got = _C.all_gather(encode(obj), group, timeout)
    except _C.Error as e:
        raise_from(e)
    return {_info_of_rank(r).name: decode(v, copy=True)[1] for r, v in got.items()}


def barrier(names=None, timeout=UNSET_RPC_TIMEOUT):
    r"""Wait until every worker of ``names`` (all by default) has called it."""
    group = _group(names)
    try:
        _C.barrier(group, timeout)
    except _C.Error as e:
        raise_from(e)


_rref_mod._api = __import__(__name__, fromlist=["_"])
