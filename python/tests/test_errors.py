# SPDX-License-Identifier: BSD-3-Clause
"""The C library's errors as Python exceptions, one errno at a time (no world needed)."""
import concurrent.futures
import errno

import pytest

import dprpc
from dprpc import _errors

CASES = [
    (errno.ETIMEDOUT, dprpc.RPCTimeoutError, TimeoutError),
    (errno.ETIME, dprpc.RPCTimeoutError, TimeoutError),
    (errno.EHOSTDOWN, dprpc.WorkerDownError, ConnectionError),
    (errno.ECONNRESET, dprpc.WorkerRestartedError, ConnectionResetError),
    (errno.ESHUTDOWN, dprpc.WorkerLeftError, ConnectionAbortedError),
    (errno.ECANCELED, dprpc.CancelledError, concurrent.futures.CancelledError),
    (errno.EBUSY, dprpc.Overloaded, dprpc.RPCError),
    (errno.EIO, dprpc.RPCError, RuntimeError),
]


@pytest.mark.parametrize("code,cls,base", CASES)
def test_each_library_error_has_its_exception(code, cls, base):
    # From worker 3 (not this one: no world here, so it is named by rank).
    e = _errors.from_error((-code, 3, "what happened", 2500))
    assert type(e) is cls and isinstance(e, base)
    assert e.code == -code and e.origin == "3"
    assert "what happened (on 3)" in str(e)
    if cls is dprpc.Overloaded:
        assert e.retry_after == pytest.approx(0.0025)
