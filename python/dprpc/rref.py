# SPDX-License-Identifier: BSD-3-Clause
"""RRefs, as ``torch.distributed.rpc.RRef``, over the C library's RRefs.

The C value of an RRef this layer makes is ``_server.RVAL`` (flags, the
key of the object in its owner's table) and, for a value that cannot
change (numbers, strings, bytes, tuples of those), the value's message:
to_here() of such a value reads it from the owner's confirmation, in the
round trip remote() makes anyway.  Any other value is fetched from the
live object on its owner, so that to_here() sees what proxy calls did.
"""
from . import _C
from . import _server
from ._errors import raise_from
from ._serialize import TAG_EXC, args_are_big, decode, encode, fork_destination
from .futures import Future

__all__ = ["RRef"]

_api = None  # the api module (it imports this one)


def _decode_value(c):
    r"""The object in a C future's message value (raising a remote exception)."""
    err = c.error()
    if err is not None:
        raise_from(_C.Error(*err))
    tag, obj = decode(c, copy=False)
    if tag == TAG_EXC:
        raise _api._remote_exception(obj)
    return obj


class RRef:
    r"""A reference to a value on some worker (its owner).

    Made by :func:`dprpc.remote`, or ``RRef(value)`` for a value owned
    here.  Passed in a call's arguments (or returned), it is forked to the
    receiver with the owner's knowledge; the owner frees the value once
    every RRef to it is gone.

    Args:
        value (object): the value this worker owns.
    """

    __slots__ = ("_c", "__weakref__")

    def __init__(self, value, type_hint=None):
        _api._check_init()
        try:
            self._c = _C.rref_create_local(_server.keep(value))
        except _C.Error as e:
            raise_from(e)

    @classmethod
    def _wrap(cls, c):
        r = cls.__new__(cls)
        r._c = c
        return r

    def owner(self):
        r"""The :class:`WorkerInfo` of the owner."""
        return _api._info_of_rank(self._c.owner())

    def owner_name(self):
        r"""The owner's name."""
        return self.owner().name

    def is_owner(self):
        r"""Whether this worker owns the value."""
        return self._c.is_owner()

    def confirmed_by_owner(self):
        r"""Whether the owner has confirmed this reference (always True on the owner)."""
        return self._c.confirmed_by_owner()

    def _wait_created(self, timeout):
        f = Future(_c=self._c.creation_future(), _decode=lambda c: c.error())
        err = f.wait(None if timeout is None or timeout <= 0 else timeout + 1.0)
        if err is not None:
            raise_from(_C.Error(*err))

    def local_value(self):
        r"""The value itself, on the owner.

        Raises:
            RuntimeError: this worker is not the owner.
        """
        if not self._c.is_owner():
            raise RuntimeError("local_value() is for the owner, which is %s" % self.owner_name())
        try:
            raw = self._c.local_value()
        except _C.Error:
            self._wait_created(None)
            raw = self._c.local_value()
        return _server.owned(raw)

    def to_here(self, timeout=-1.0):
        r"""A copy of the value, fetched from the owner (blocking).

        Args:
            timeout (float): seconds; -1 for the default RPC timeout, 0
                for none.
        """
        if self._c.is_owner():
            return self.local_value()
        try:
            f = self._c.to_here_async(timeout)
        except _C.Error as e:
            raise_from(e)
        f.wait()  # signals interrupt it
        err = f.error()
        if err is not None:
            raise_from(_C.Error(*err))
        raw = memoryview(f)
        flags, _ = _server.RVAL.unpack_from(raw)
        if flags & (_server.IMMUTABLE | _server.RAISED):
            tag, obj = decode(raw[_server.RVAL.size:], copy=False)
            if tag == TAG_EXC:
                raise _server.remote_exception(obj)
            return obj
        try:
            c = self._c.rpc_async(_C.K_RREF_FETCH, b"", timeout)
        except _C.Error as e:
            raise_from(e)
        return Future(_c=c, _decode=_decode_value).wait()

    def _proxy_call(self, kind, name, args, kwargs, timeout):
        parts = encode((name, args, kwargs), dest=self._c.owner(),
                       big=args_are_big(args, kwargs))
        try:
            if kind == "remote":
                return RRef._wrap(self._c.remote(_C.K_RREF_REMOTE, parts, timeout))
            return Future(_c=self._c.rpc_async(_C.K_RREF_CALL, parts, timeout),
                          _decode=_decode_value)
        except _C.Error as e:
            raise_from(e)

    def rpc_sync(self, timeout=-1.0):
        r"""A proxy: ``rref.rpc_sync().m(*a)`` runs ``m`` on the value, on its owner, and waits."""
        return _Proxy(self, "sync", timeout)

    def rpc_async(self, timeout=-1.0):
        r"""A proxy: ``rref.rpc_async().m(*a)`` returns a Future of ``m``'s result."""
        return _Proxy(self, "async", timeout)

    def remote(self, timeout=-1.0):
        r"""A proxy: ``rref.remote().m(*a)`` returns an RRef to ``m``'s result, on the owner."""
        return _Proxy(self, "remote", timeout)

    def __reduce__(self):
        dest = fork_destination()
        if dest is None:
            raise RuntimeError("an RRef can be pickled only into an RPC's arguments or result")
        try:
            return _from_fork, (self._c.fork_to(dest),)
        except _C.Error as e:
            raise_from(e)

    def __repr__(self):
        try:
            kind = "OwnerRRef" if self._c.is_owner() else "UserRRef"
            return "%s(RRefId = %#x, owner = %s)" % (kind, self._c.id(), self.owner_name())
        except Exception:
            return "RRef(shut down)"


def _from_fork(data):
    try:
        return RRef._wrap(_C.rref_from_fork(data))
    except _C.Error as e:
        raise_from(e)


class _Proxy:
    __slots__ = ("_rref", "_kind", "_timeout")

    def __init__(self, rref, kind, timeout):
        self._rref, self._kind, self._timeout = rref, kind, timeout

    def __getattr__(self, name):
        rref, kind, timeout = self._rref, self._kind, self._timeout

        def call(*args, **kwargs):
            r = rref._proxy_call(kind, name, args, kwargs, timeout)
            return r.wait() if kind == "sync" else r

        return call
