# SPDX-License-Identifier: BSD-3-Clause
"""Messages: pickle protocol 5, large buffers out of band.

A message is an 8-byte header (tag, number of out-of-band buffers n), then
with n > 0 the n buffer lengths and the pickle's length (8 bytes each),
the pickle, and each buffer at a 64-byte boundary of the message.  Tag 0
is a value, 1 an exception raised by the remote function.  Tag 2 is a
call of a function named by reference, without out-of-band buffers: the
header's last 4 bytes give the length of the function's pickle, which
follows, then the pickle of (args, kwargs); both sides cache the
function's pickle, which pickle otherwise looks up in its module each time.
"""
import io
import pickle
import types
import struct
import sys
import threading

TAG_VALUE = 0
TAG_EXC = 1
TAG_CALL = 2
_CALL_HEAD = struct.Struct("<BB2xI")
_FN_CACHE_MAX = 4096
_fn_out = {}  # a function -> (the call's header, its pickle)
# Arguments of these types hold no RRef and no large buffer.
_PLAIN = frozenset((type(None), bool, int, float, complex, str))
_fn_in = {}  # a function's pickle -> the function
_NO_ARGS = pickle.dumps(((), None), protocol=5)
_ALIGN = 64
_MAX_BUFFERS = 64
# Arguments at least this large go through the out-of-band pickler.
_BIG = 1 << 14
_HEAD = (bytes(8), bytes([TAG_EXC]) + bytes(7))
_ZERO = bytes(_ALIGN)

_tls = threading.local()


def _mod(name):
    r"""A module if the program imported it (no object of it exists otherwise)."""
    return sys.modules.get(name)


def fork_destination():
    r"""The rank an RRef being pickled now is forked to (None outside a call)."""
    return getattr(_tls, "dest", None)


def _rebuild_tensor(buf, dtype, shape):
    import numpy
    import torch
    return torch.from_numpy(numpy.frombuffer(buf, dtype=dtype).reshape(shape))


class _Pickler(pickle.Pickler):
    r"""Sends bytes and CPU tensors out of band too (numpy arrays already are)."""

    def reducer_override(self, obj):
        t = type(obj)
        if t is bytes and len(obj) >= _BIG:
            return bytes, (pickle.PickleBuffer(obj),)
        torch = _mod("torch")
        if torch is not None and t is torch.Tensor and _mod("numpy") is not None:
            if (obj.device.type == "cpu" and not obj.requires_grad and obj.layout == torch.strided
                    and obj.dtype not in (torch.bfloat16, torch.complex32)
                    and obj.numel() * obj.element_size() >= _BIG):
                a = obj.detach().contiguous().numpy()
                return _rebuild_tensor, (pickle.PickleBuffer(a), a.dtype.str, a.shape)
        return NotImplemented


_SMALL = frozenset((type(None), bool, int, float, str, tuple, list, dict))


def _big(o):
    t = type(o)
    if t in _SMALL:
        return False
    if t is bytes or t is bytearray:
        return len(o) >= _BIG
    np = _mod("numpy")
    if np is not None and t is np.ndarray:
        return o.nbytes >= _BIG
    torch = _mod("torch")
    return torch is not None and t is torch.Tensor


def encode(obj, tag=TAG_VALUE, dest=None, big=False):
    r"""The parts of a message holding ``obj`` (a tuple of bytes-like objects).

    ``dest`` is the rank RRefs inside ``obj`` are forked to; ``big`` asks
    for the out-of-band pickler (the caller saw a large argument).
    """
    if type(obj) in _PLAIN:  # no RRef inside: no destination to note
        return _HEAD[tag], pickle.dumps(obj, protocol=5)
    prev = getattr(_tls, "dest", None)
    _tls.dest = dest
    try:
        if not big:
            return _HEAD[tag], pickle.dumps(obj, protocol=5)
        bufs = []
        f = io.BytesIO()
        _Pickler(f, protocol=5, buffer_callback=bufs.append).dump(obj)
        data = f.getbuffer()
        raws = []
        for b in bufs:
            try:
                raws.append(b.raw())
            except BufferError:  # not contiguous: send this object in band
                raws = None
                break
        if not raws or len(raws) > _MAX_BUFFERS:
            return _HEAD[tag], pickle.dumps(obj, protocol=5)
    finally:
        _tls.dest = prev
    n = len(raws)
    head = struct.pack("<BB6x%dQQ" % n, tag, n, *[r.nbytes for r in raws], data.nbytes)
    parts = [head, data]
    off = len(head) + data.nbytes
    for r in raws:
        pad = -off % _ALIGN
        if pad:
            parts.append(_ZERO[:pad])
            off += pad
        parts.append(r)
        off += r.nbytes
    return tuple(parts)


def decode(buf, copy):
    r"""``(tag, object)`` of a message in ``buf``.

    With ``copy`` false the object's out-of-band buffers are views of
    ``buf`` (which they keep alive); with ``copy`` true they are copies.
    """
    mv = memoryview(buf)
    try:
        tag, n = mv[0], mv[1]
        if n == 0:
            return tag, pickle.loads(mv[8:])
        lens = struct.unpack_from("<%dQ" % (n + 1), mv, 8)
        off = 8 + 8 * (n + 1)
        data = mv[off:off + lens[n]]
        off += lens[n]
        bufs = []
        for ln in lens[:n]:
            off += -off % _ALIGN
            b = mv[off:off + ln]
            bufs.append(bytearray(b) if copy else b)
            off += ln
        return tag, pickle.loads(data, buffers=bufs)
    finally:
        mv.release()


def args_are_big(args, kwargs):
    r"""Whether a call's arguments hold a large buffer at the top level."""
    if args:
        for a in args:
            if _big(a):
                return True
    if kwargs:
        for a in kwargs.values():
            if _big(a):
                return True
    return False


def _by_reference(fn):
    r"""Whether pickle names ``fn`` by reference alone (its pickle never changes)."""
    t = type(fn)
    if t is types.FunctionType:
        return True
    if t is types.BuiltinFunctionType:
        owner = getattr(fn, "__self__", None)
        return owner is None or isinstance(owner, (types.ModuleType, type))
    return False


def encode_call(fn, args, kwargs, dest):
    r"""The parts of a call's request: ``fn(*args, **kwargs)``, RRefs forked to ``dest``."""
    hf = _fn_out.get(fn)
    if hf is None:
        if not _by_reference(fn):
            return encode((fn, args, kwargs), dest=dest, big=True)
        fb = pickle.dumps(fn, protocol=5)
        hf = (_CALL_HEAD.pack(TAG_CALL, 0, len(fb)), fb)
        if len(_fn_out) < _FN_CACHE_MAX:
            _fn_out[fn] = hf
    if not kwargs:
        if not args:
            return hf[0], hf[1], _NO_ARGS
        for a in args:
            if type(a) not in _PLAIN:
                break
        else:
            # No RRef to fork, no buffer to send apart: pickle them as they are.
            return hf[0], hf[1], pickle.dumps((args, None), protocol=5)
    if args_are_big(args, kwargs):
        return encode((fn, args, kwargs), dest=dest, big=True)
    prev = getattr(_tls, "dest", None)
    _tls.dest = dest
    try:
        data = pickle.dumps((args, kwargs), protocol=5)
    finally:
        _tls.dest = prev
    return hf[0], hf[1], data


def decode_request(req):
    r"""``(tag, object)`` of the message of request ``req``.

    Out-of-band buffers are views of the request's payload, which
    ``req.hold()`` keeps past the answer: the callee's arrays are the
    library's reassembled message, not a copy of it.
    """
    mv = memoryview(req)
    try:
        held = mv[1] != 0
    finally:
        mv.release()
    return decode(req.hold() if held else req, copy=False)


def decode_call(req):
    r"""``(fn, args, kwargs)`` of a call's request ``req``."""
    c = req.call_args(_fn_in, _FN_CACHE_MAX)  # a call by reference, read in C
    return c if c is not None else decode_request(req)[1]
