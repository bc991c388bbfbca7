# SPDX-License-Identifier: BSD-3-Clause
"""Decorators for functions run by RPC, as ``torch.distributed.rpc.functions``."""
import functools

__all__ = ["async_execution"]


def async_execution(fn):
    r"""Mark ``fn`` as returning a Future, the call answered when it completes.

    The callee runs ``fn`` on an RPC worker thread and, instead of
    answering with its return value, answers with the value (or the
    exception) of the :class:`~dprpc.Future` it returns, once that is
    done; the thread is free meanwhile.  Any object with
    ``add_done_callback(cb)``, ``wait()`` and ``value()`` will do, a
    ``torch.futures.Future`` too.

    Example::

        >>> @dprpc.functions.async_execution
        ... def async_add_chained(to, x, y, z):
        ...     return dprpc.rpc_async(to, torch.add, args=(x, y)).then(
        ...         lambda fut: fut.wait() + z)
    """
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)

    wrapper._wrapped_async_rpc_function = fn
    return wrapper


def is_async(fn):
    r"""Whether ``fn`` (a function or a bound method) is an async_execution function."""
    # A bound method reads its function's attributes.
    return getattr(fn, "_wrapped_async_rpc_function", None) is not None
