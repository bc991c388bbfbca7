# SPDX-License-Identifier: BSD-3-Clause
"""Exceptions raised by dprpc, and the mapping from the C library's errors."""
import concurrent.futures
import errno

from . import _C

__all__ = [
    "RPCError",
    "Overloaded",
    "WorkerDownError",
    "WorkerRestartedError",
    "WorkerLeftError",
    "RPCTimeoutError",
    "CancelledError",
]


class RPCError(RuntimeError):
    r"""A call failed in the library (not in the remote function).

    Attributes:
        code (int): the negative errno the library reported.
        origin (str or None): the worker that raised it (``None``: this one).
    """

    def __init__(self, msg, code=0, origin=None):
        super().__init__(msg)
        self.code = code
        self.origin = origin


class Overloaded(RPCError):
    r"""The callee refused the call: its queues were full (``-EBUSY``).

    Attributes:
        retry_after (float): how long the callee suggests waiting before
            calling again, in seconds (0: no hint).
    """

    def __init__(self, msg, code=-errno.EBUSY, origin=None, retry_after=0.0):
        super().__init__(msg, code, origin)
        self.retry_after = retry_after


class _Coded:
    def _set(self, code, origin):
        self.code = code
        self.origin = origin
        return self


class RPCTimeoutError(TimeoutError, _Coded):
    r"""The call's timeout passed before its answer came."""


class WorkerDownError(ConnectionError, _Coded):
    r"""The callee was declared down (silent for the peer timeout)."""


class WorkerRestartedError(ConnectionResetError, _Coded):
    r"""The callee restarted: the call was for its earlier incarnation."""


class WorkerLeftError(ConnectionAbortedError, _Coded):
    r"""The callee left the world or is shutting down."""


class CancelledError(concurrent.futures.CancelledError, _Coded):
    r"""The call was cancelled (:meth:`Future.cancel`)."""


_names = {}


def _origin_name(origin):
    if origin == _C.ORIGIN_LOCAL:
        return None
    try:
        if not _names:
            _names.update({r: n for n, r, _ in _C.worker_infos()})
        return _names.get(origin, str(origin))
    except _C.Error:
        return str(origin)


def _forget_names():
    _names.clear()


def from_error(args):
    r"""The Python exception for a C error tuple ``(code, origin, msg, retry_after_us, workers)``."""
    code, origin, msg = args[0], args[1], args[2]
    where = _origin_name(origin)
    text = msg if msg else errno.errorcode.get(-code, str(code))
    if where is not None:
        text = "%s (on %s)" % (text, where)
    c = -code
    if c in (errno.ETIMEDOUT, errno.ETIME):
        return RPCTimeoutError(c, text)._set(code, where)
    if c == errno.EHOSTDOWN:
        return WorkerDownError(c, text)._set(code, where)
    if c == errno.ECONNRESET:
        return WorkerRestartedError(c, text)._set(code, where)
    if c == errno.ESHUTDOWN:
        if origin == _C.ORIGIN_LOCAL and "init_rpc" in msg:
            return RuntimeError(msg)
        return WorkerLeftError(c, text)._set(code, where)
    if c == errno.ECANCELED:
        return CancelledError(text)._set(code, where)
    if c == errno.EBUSY:
        return Overloaded(text, code, where, args[3] / 1e6)
    if c == errno.EINVAL and origin == _C.ORIGIN_LOCAL:
        return ValueError(text)
    return RPCError(text, code, where)


def raise_from(e):
    r"""Re-raise a :class:`dprpc._C.Error` as its Python exception."""
    raise from_error(e.args) from None
