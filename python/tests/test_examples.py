# SPDX-License-Identifier: BSD-3-Clause
"""The Python examples run and check themselves."""
import os
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def test_digits_model_server_answers_like_the_offline_model():
    r = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "python", "digits.py"),
                        "--window", "8", "--passes", "2"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "accuracy on the test split 441/450 = 0.980000; offline model 441/450 = 0.980000: " \
           "equal" in r.stdout
    assert "900 calls, 0 answers unlike the offline model's" in r.stdout
