# SPDX-License-Identifier: BSD-3-Clause
"""Functions the tests run on other workers (importable there by name)."""
import os
import time

import dprpc


class Boom(Exception):
    pass


class TwoArgError(Exception):
    def __init__(self, a, b):
        super().__init__(a, b)


def add(a, b):
    return a + b


def noop():
    return None


def whoami():
    return dprpc.get_worker_info().name


def kw(a, b=2, *, c=3):
    return (a, b, c)


def raise_boom(msg):
    raise Boom(msg)


def raise_two_arg():
    raise TwoArgError(1, 2)


def sleep_then(sec, v):
    time.sleep(sec)
    return v


def remaining():
    return dprpc.remaining()


def nested(chain, v):
    r"""Call along ``chain`` (names), adding 1 at each hop."""
    if not chain:
        return v
    return dprpc.rpc_sync(chain[0], nested, args=(chain[1:], v + 1))


@dprpc.functions.async_execution
def async_add_chained(to, x, y, z):
    return dprpc.rpc_async(to, add, args=(x, y)).then(lambda fut: fut.wait() + z)


@dprpc.functions.async_execution
def async_not_a_future():
    return 5


def echo(x):
    return x


def tokens(n):
    for i in range(n):
        yield "tok%d" % i


def tokens_then_fail(n):
    for i in range(n):
        yield i
    raise Boom("stream broke")


def rref_to_here(rref):
    return rref.to_here()


def rref_owner_name(rref):
    return rref.owner_name()


def pid():
    return os.getpid()


def die(code):
    os._exit(code)


def debug(key):
    return dprpc._get_debug_info()[key]


class Counter:
    def __init__(self, start=0):
        self.n = start

    def incr(self, k=1):
        self.n += k
        return self.n

    def value(self):
        return self.n

    @dprpc.functions.async_execution
    def incr_later(self, k):
        f = dprpc.Future()
        f.set_result(self.incr(k))
        return f


def make_counter(start):
    return Counter(start)


def add_one_in_place(a):
    r"""Where the callee's array lives, whether it is writable, and its sum after ``a += 1``."""
    base = a
    while getattr(base, "base", None) is not None:
        base = base.base
    if isinstance(base, memoryview):
        base = base.obj
    a += 1
    return type(base).__name__, a.flags.writeable, int(a.sum())


class Holder:
    r"""An RRef's value whose method reports where its array argument lives."""

    def where(self, a):
        return add_one_in_place(a)


def remaining_of_a_nested_call(to):
    r"""The time left that a call made from here (default timeout) has on ``to``."""
    return dprpc.rpc_sync(to, remaining)
