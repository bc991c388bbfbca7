# SPDX-License-Identifier: BSD-3-Clause
"""The callee's side: the worker threads, and what each kind of request runs.

The C core queues every incoming request (dprpc._C.next_item()); the
worker threads take them with the GIL released and run them here.  The
objects behind the RRefs this worker owns live in ``_objects``, by the key
their C value carries (see rref.py for the value's layout).
"""
import itertools
import pickle
import struct
import sys
import threading
import traceback

from . import _C
from . import _serialize
from ._serialize import (_HEAD, _PLAIN, TAG_EXC, TAG_VALUE, decode, decode_call, decode_request,
                         encode)
from .functions import is_async

_tls = threading.local()
_HEAD_VALUE = _HEAD[TAG_VALUE]
_dumps = pickle.dumps
_objects = {}
_keys = itertools.count(1)
_threads = []
_self = {"name": None, "rank": None}

# An RRef's value in C: flags, key; with IMMUTABLE, the value's message
# follows (to_here() needs no second round trip).
RVAL = struct.Struct("<B7xQ")
IMMUTABLE = 1
RAISED = 2  # the creating function raised: the exception's message follows
_SNAPSHOT_MAX = 1 << 16
_SIMPLE = (int, float, bool, complex, str, bytes, type(None), range)


def current_request():
    r"""The request the calling worker thread is running, or None."""
    return getattr(_tls, "req", None)


def _immutable(o, depth=0):
    t = type(o)
    if t in _SIMPLE:
        return True
    if (t is tuple or t is frozenset) and depth < 3 and len(o) <= 64:
        return all(_immutable(x, depth + 1) for x in o)
    return False


def keep(obj):
    r"""Own ``obj`` as an RRef's value here; the C value to store for it."""
    key = next(_keys)
    _objects[key] = obj
    if type(obj) in _PLAIN:
        return RVAL.pack(IMMUTABLE, key), _HEAD_VALUE, _dumps(obj, 5)
    if _immutable(obj):
        parts = encode(obj)
        if sum(len(p) for p in parts) <= _SNAPSHOT_MAX:
            return (RVAL.pack(IMMUTABLE, key),) + parts
    return RVAL.pack(0, key)


def owned(value):
    r"""The object behind an RRef value owned here (bytes of the C value)."""
    if value is None or len(value) < RVAL.size:
        raise RuntimeError("not an RRef value of dprpc's Python layer")
    flags, key = RVAL.unpack_from(value)
    if flags & RAISED:
        raise remote_exception(decode(memoryview(value)[RVAL.size:], copy=True)[1])
    try:
        return _objects[key]
    except KeyError:
        raise RuntimeError("the RRef's value is gone from its owner") from None


def _answer_value(req, v):
    if type(v) in _PLAIN:  # nothing to fork or send apart
        req.reply((_HEAD_VALUE, _dumps(v, 5)))
    else:
        req.reply(encode(v, dest=req.caller(), big=_serialize._big(v)))


def _answer_keep(req, v):
    req.reply(keep(v))


def exception_parts(e):
    r"""The message of exception ``e`` raised here: its type, traceback, this worker."""
    tb = "".join(traceback.format_exception(type(e), e, e.__traceback__))
    try:
        return encode((type(e), tb, _self["name"], _self["rank"]), TAG_EXC)
    except Exception:  # a class pickle cannot name: the text still goes
        return encode((None, tb, _self["name"], _self["rank"]), TAG_EXC)


def remote_exception(payload):
    r"""The exception a callee raised, rebuilt: its type where it can be, the remote traceback."""
    etype, tb, name, rank = payload
    msg = "On WorkerInfo(id=%s, name=%s):\n%s" % (rank, name, tb)
    exc = None
    if isinstance(etype, type) and issubclass(etype, BaseException):
        try:
            exc = etype(msg)
        except Exception:
            exc = None
    if exc is None:
        exc = RuntimeError(msg)
    try:
        exc.remote_traceback = tb
        exc.origin = name
    except AttributeError:
        pass
    return exc


def _answer_exc(req, e, keep=False):
    parts = exception_parts(e)
    if keep:  # an RRef's creation: the RRef holds the exception
        parts = (RVAL.pack(RAISED, 0),) + parts
    try:
        req.reply(parts)
    except _C.Error:
        pass  # answered already (the library sent the error)


def _answer(req, fn, r, answer):
    r"""Answer now, or once the Future an async_execution function returned is done."""
    if not is_async(fn):
        try:
            answer(req, r)
        except _C.Error:
            pass  # the reply failed: the library answered the caller with the error
        except Exception as e:  # the result would not pickle
            _answer_exc(req, e, answer is _answer_keep)
        return

    def done(f):
        try:
            answer(req, f.wait())
        except _C.Error:
            pass
        except BaseException as e:
            _answer_exc(req, e, answer is _answer_keep)

    if not callable(getattr(r, "add_done_callback", None)):
        _answer_exc(req, TypeError("an async_execution function must return a Future, not %s"
                                   % type(r).__name__), answer is _answer_keep)
        return
    r.add_done_callback(done)


def _run(req, answer, on_rref):
    _tls.req = req
    try:
        fn, args, kwargs = decode_call(req) if not on_rref else decode_request(req)[1]
        if on_rref:
            fn = getattr(owned(req.rref_value()), fn)
        r = fn(*args, **kwargs) if kwargs else fn(*args)
    except BaseException as e:
        _answer_exc(req, e, answer is _answer_keep)
        return
    finally:
        _tls.req = None
    _answer(req, fn, r, answer)


def _h_call(req):
    _run(req, _answer_value, False)


def _h_remote(req):
    _run(req, _answer_keep, False)


def _h_rref_call(req):
    _run(req, _answer_value, True)


def _h_rref_remote(req):
    _run(req, _answer_keep, True)


def _h_rref_fetch(req):
    try:
        _answer_value(req, owned(req.rref_value()))
    except _C.Error:
        pass
    except BaseException as e:
        _answer_exc(req, e)


def _h_stream(req):
    _tls.req = req
    try:
        fn, args, kwargs = decode_call(req)
        caller = req.caller()
        for item in fn(*args, **(kwargs or {})):
            req.stream_send(encode(item, dest=caller))  # waits for the window
        req.stream_end(0)
    except _C.Error as e:  # cancelled, caller gone, ...: end with that status
        try:
            req.stream_end(e.args[0])
        except (_C.Error, RuntimeError):
            pass
    except BaseException as e:
        try:
            req.stream_send(exception_parts(e))
            req.stream_end(0)
        except (_C.Error, RuntimeError):
            pass
    finally:
        _tls.req = None


def _h_job(job):
    fn, arg = job
    fn(arg)


def _h_free(key):
    _objects.pop(key, None)


_HANDLERS = {
    _C.K_CALL: _h_call,
    _C.K_REMOTE: _h_remote,
    _C.K_RREF_CALL: _h_rref_call,
    _C.K_RREF_REMOTE: _h_rref_remote,
    _C.K_RREF_FETCH: _h_rref_fetch,
    _C.K_STREAM: _h_stream,
    _C.K_JOB: _h_job,
    _C.K_FREE: _h_free,
}


def _loop():
    next_item = _C.next_item
    handlers = _HANDLERS
    while True:
        item = next_item()
        if item is None:
            return
        try:
            handlers[item[0]](item[1])
        except BaseException:  # never lose a worker thread
            traceback.print_exc(file=sys.stderr)
        item = None


def start(n, name, rank):
    r"""Start ``n`` worker threads."""
    _self["name"], _self["rank"] = name, rank
    for i in range(n):
        t = threading.Thread(target=_loop, name="dprpc-worker-%d" % i, daemon=True)
        t.start()
        _threads.append(t)


def owned_count():
    r"""How many objects behind RRef values this worker keeps."""
    return len(_objects)


def stop():
    r"""Let the worker threads finish what is queued and end; forget owned values."""
    _C.close_queue()
    for t in _threads:
        if t is not threading.current_thread():
            t.join()
    _threads.clear()
    _objects.clear()
