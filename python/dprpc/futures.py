# SPDX-License-Identifier: BSD-3-Clause
"""Futures, as ``torch.futures.Future``: the result of ``rpc_async()``, or made by hand."""
import threading

from . import _C
from ._errors import CancelledError, raise_from

__all__ = ["Future", "wait_all", "collect_all"]

_PENDING, _DONE, _FAILED = 0, 1, 2
# Guards every future's state and callback list: held for a few
# statements, never while a callback runs or a thread waits.
_lock = threading.Lock()


class Future:
    r"""The eventual result of an asynchronous call, or of anything else.

    A Future made by :func:`dprpc.rpc_async` completes when the callee's
    answer comes; one made by hand (``Future()``) completes with
    :meth:`set_result` or :meth:`set_exception`, e.g. in a function
    decorated with :func:`dprpc.functions.async_execution`.

    Callbacks (:meth:`then`, :meth:`add_done_callback`) of an RPC's future
    run on one of the RPC worker threads; those of a future made by hand
    run in the thread that completes it.  A callback added to a future
    that is done already runs at once, in the calling thread.
    """

    __slots__ = ("_c", "_decode", "_state", "_value", "_cbs", "_cond", "__weakref__")

    def __init__(self, *, _c=None, _decode=None):
        self._c = _c
        self._decode = _decode
        self._state = _PENDING
        self._value = None
        self._cbs = None
        self._cond = None

    # -- completion -------------------------------------------------------
    def _resolve(self):
        r"""Decode the C future's outcome once (it is done)."""
        try:
            v, st = self._decode(self._c), _DONE
        except BaseException as e:  # the remote exception, or the library's
            v, st = e, _FAILED
        with _lock:
            if self._state != _PENDING:
                return
            self._value, self._state = v, st
            cbs, self._cbs = self._cbs, None
            if self._cond is not None:
                with self._cond:
                    self._cond.notify_all()
        self._c = None  # the value is decoded: the C future may go
        if cbs:
            self._run(cbs)

    def _run(self, cbs):
        for cb in cbs or ():
            try:
                cb(self)
            except Exception:  # as torch: a failing callback does not stop the others
                import traceback
                traceback.print_exc()

    def _set(self, v, st):
        with _lock:
            if self._state != _PENDING or self._c is not None:
                raise RuntimeError("this Future is completed already (or is an RPC's)")
            self._value, self._state = v, st
            cbs, self._cbs = self._cbs, None
            if self._cond is not None:
                with self._cond:
                    self._cond.notify_all()
        self._run(cbs)

    def set_result(self, result):
        r"""Complete the future with ``result`` (only a future made by hand)."""
        self._set(result, _DONE)

    def set_exception(self, result):
        r"""Complete the future with the exception ``result``."""
        if not isinstance(result, BaseException):
            raise TypeError("set_exception takes an exception")
        self._set(result, _FAILED)

    # -- queries ------------------------------------------------------------
    def done(self):
        r"""Whether the future has completed (with a value or an exception)."""
        if self._state != _PENDING:
            return True
        c = self._c
        if c is not None and c.done():
            self._resolve()
            return True
        return False

    def wait(self, timeout=None):
        r"""Block until done, then return the value or raise the exception.

        Args:
            timeout (float, optional): seconds to wait at most; ``None``
                waits as long as it takes.  Not in torch's signature.

        Raises:
            TimeoutError: ``timeout`` passed first (the future stays pending).
        """
        if self._state == _PENDING:
            c = self._c
            if c is not None:
                if not c.wait(timeout):
                    raise TimeoutError("the future is not done after %s s" % timeout)
                self._resolve()
            else:
                with _lock:
                    if self._state == _PENDING and self._cond is None:
                        self._cond = threading.Condition(threading.Lock())
                    cond = self._cond
                if cond is not None:
                    with cond:
                        if not cond.wait_for(lambda: self._state != _PENDING, timeout):
                            raise TimeoutError("the future is not done after %s s" % timeout)
        if self._state == _FAILED:
            raise self._value
        return self._value

    def value(self):
        r"""The value of a completed future (raises its exception if it failed)."""
        if not self.done():
            raise RuntimeError("the future is not done yet: use wait()")
        if self._state == _FAILED:
            raise self._value
        return self._value

    def exception(self):
        r"""The exception of a failed future, or None."""
        if not self.done():
            raise RuntimeError("the future is not done yet: use wait()")
        return self._value if self._state == _FAILED else None

    # -- callbacks ----------------------------------------------------------
    def add_done_callback(self, callback):
        r"""Call ``callback(fut)`` once this future is done; returns None."""
        with _lock:
            if self._state == _PENDING:
                # The first callback of an RPC's future hooks the C future.
                hook = self._c is not None and self._cbs is None
                if self._cbs is None:
                    self._cbs = []
                self._cbs.append(callback)
                pending = True
            else:
                pending = False
        if not pending:
            callback(self)
        elif hook:
            self._c.add_done_callback(Future._resolve, self)

    def then(self, callback):
        r"""A new future completed with ``callback(self)``'s result (or exception)."""
        out = Future()

        def chain(f):
            try:
                out.set_result(callback(f))
            except BaseException as e:
                out.set_exception(e)

        self.add_done_callback(chain)
        return out

    def cancel(self):
        r"""Cancel the call: the callee stops it if it has not run it yet.

        Beyond torch.  Returns True if the future is (now or already)
        cancelled, False if it completed first.  Its :meth:`wait` then
        raises :class:`dprpc.CancelledError`.
        """
        c = self._c
        if c is None:
            return self._state == _FAILED and isinstance(self._value, CancelledError)
        rc = c.cancel()
        if rc < 0:
            return False
        return rc in (0, 1)

    def __repr__(self):
        st = ("pending", "done", "failed")[self._state]
        return "<dprpc.Future %s>" % st


def wait_all(futures):
    r"""Wait for every future; their values in order (the first exception raised)."""
    return [f.wait() for f in futures]


def collect_all(futures):
    r"""A future completed with ``futures`` (the list) once all of them are done."""
    futures = list(futures)
    out = Future()
    if not futures:
        out.set_result(futures)
        return out
    left = [len(futures)]
    lock = threading.Lock()

    def one(_):
        with lock:
            left[0] -= 1
            last = left[0] == 0
        if last:
            out.set_result(futures)

    for f in futures:
        f.add_done_callback(one)
    return out


def _c_error(c):
    r"""Raise the error of a failed C future."""
    raise_from(_C.Error(*c.error()))
