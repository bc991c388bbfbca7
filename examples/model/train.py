#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Train the digits MLP that examples/model serves, or check the shipped files.

  train.py [--out DIR]      train (fixed seed) and write DIR/digits_mlp.bin
                            and DIR/digits_test.bin (default: this folder)
  train.py --verify [DIR]   load both files back into scikit-learn's
                            MLPClassifier and check that its predictions on
                            the test split are the ones stored, and so is
                            its number of correct answers

The data set is the handwritten digits that scikit-learn ships
(sklearn.datasets.load_digits: 1797 images of 8x8 pixels, values 0..16,
10 classes), split 75/25 (stratified, random_state 0): 1347 to train,
450 to test.  The model: MLPClassifier(hidden_layer_sizes=(512,),
activation="relu", random_state=0, max_iter=500) on pixels / 16.  After
training its weights are rounded to float32 and put back into the model,
so the model scored here is exactly the one the C server runs.

File formats (little-endian; README.md beside this file):
  digits_mlp.bin   "DMLP", u32 version 1, u32 n_in, u32 n_hidden,
                   u32 n_out, then float32 W1[n_in][n_hidden],
                   b1[n_hidden], W2[n_hidden][n_out], b2[n_out].
                   hidden = relu(x W1 + b1), logits = hidden W2 + b2,
                   class = argmax(logits) (first maximum), x = pixels / 16.
  digits_test.bin  "DTST", u32 version 1, u32 n, u32 n_pixels (64),
                   u32 correct (how many of the n the model classifies
                   right), then n records of n_pixels u8 pixels, u8 label,
                   u8 the model's prediction.
"""
import argparse
import os
import struct
import sys
import warnings

import numpy as np
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier

HERE = os.path.dirname(os.path.abspath(__file__))
HIDDEN = 512
SEED = 0


def split():
    x, y = load_digits(return_X_y=True)
    return train_test_split(x, y, test_size=0.25, random_state=SEED, stratify=y)


def to_f32(model):
    """Round the weights to float32 and put them back (as float64)."""
    model.coefs_ = [c.astype(np.float32).astype(np.float64) for c in model.coefs_]
    model.intercepts_ = [b.astype(np.float32).astype(np.float64) for b in model.intercepts_]


def forward_f32(model, x):
    """The C server's arithmetic in numpy float32: logits."""
    w1, w2 = (c.astype(np.float32) for c in model.coefs_)
    b1, b2 = (b.astype(np.float32) for b in model.intercepts_)
    h = np.maximum(x.astype(np.float32) / np.float32(16) @ w1 + b1, 0)
    return h @ w2 + b2


def write(out, model, xte, yte):
    w1, w2 = model.coefs_
    b1, b2 = model.intercepts_
    n_in, n_hidden = w1.shape
    n_out = w2.shape[1]
    pred = model.predict(xte / 16)
    correct = int((pred == yte).sum())
    with open(os.path.join(out, "digits_mlp.bin"), "wb") as f:
        f.write(b"DMLP" + struct.pack("<4I", 1, n_in, n_hidden, n_out))
        for a in (w1, b1, w2, b2):
            f.write(np.ascontiguousarray(a, dtype="<f4").tobytes())
    with open(os.path.join(out, "digits_test.bin"), "wb") as f:
        f.write(b"DTST" + struct.pack("<4I", 1, len(yte), xte.shape[1], correct))
        rec = np.concatenate([xte.astype(np.uint8), yte.astype(np.uint8)[:, None],
                              pred.astype(np.uint8)[:, None]], axis=1)
        f.write(rec.tobytes())
    return pred, correct


def train(out):
    xtr, xte, ytr, yte = split()
    model = MLPClassifier(hidden_layer_sizes=(HIDDEN,), activation="relu",
                          random_state=SEED, max_iter=500)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model.fit(xtr / 16, ytr)
    to_f32(model)
    pred, correct = write(out, model, xte, yte)
    # The float32 arithmetic must not flip a class: the smallest gap
    # between the two largest logits says how far from a flip it is.
    logits = forward_f32(model, xte)
    top = np.sort(logits, axis=1)
    gap = float((top[:, -1] - top[:, -2]).min())
    if not np.array_equal(logits.argmax(axis=1), pred):
        sys.exit("train.py: float32 forward pass disagrees with the model")
    print(f"trained in {model.n_iter_} iterations; test split: {correct}/{len(yte)} "
          f"correct, accuracy {correct / len(yte):.6f}; smallest top-2 logit gap {gap:.4f}")


def load(d):
    with open(os.path.join(d, "digits_mlp.bin"), "rb") as f:
        raw = f.read()
    assert raw[:4] == b"DMLP", "digits_mlp.bin: bad magic"
    ver, n_in, n_hidden, n_out = struct.unpack_from("<4I", raw, 4)
    assert ver == 1
    a = np.frombuffer(raw, dtype="<f4", offset=20).astype(np.float64)
    sizes = [n_in * n_hidden, n_hidden, n_hidden * n_out, n_out]
    assert len(a) == sum(sizes), "digits_mlp.bin: wrong length"
    parts = np.split(a, np.cumsum(sizes)[:-1])
    w1 = parts[0].reshape(n_in, n_hidden)
    w2 = parts[2].reshape(n_hidden, n_out)
    with open(os.path.join(d, "digits_test.bin"), "rb") as f:
        raw = f.read()
    assert raw[:4] == b"DTST", "digits_test.bin: bad magic"
    ver, n, n_pix, correct = struct.unpack_from("<4I", raw, 4)
    assert ver == 1 and n_pix == n_in
    rec = np.frombuffer(raw, dtype=np.uint8, offset=20).reshape(n, n_pix + 2)
    return (w1, parts[1], w2, parts[3]), rec[:, :n_pix], rec[:, n_pix], rec[:, n_pix + 1], correct


def verify(d):
    (w1, b1, w2, b2), x, label, stored, correct = load(d)
    # An MLPClassifier of the same shape (one step on the test split sets
    # up its classes and layers), then the shipped weights.
    model = MLPClassifier(hidden_layer_sizes=(w1.shape[1],), activation="relu",
                          random_state=SEED, max_iter=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(x / 16, label)
    model.coefs_ = [w1, w2]
    model.intercepts_ = [b1, b2]
    pred = model.predict(x / 16)
    bad = int((pred != stored).sum())
    got = int((pred == label).sum())
    print(f"verify: {len(label)} test images, scikit-learn's predictions differ from "
          f"the stored ones on {bad}; {got} correct (stored {correct}), "
          f"accuracy {got / len(label):.6f}")
    return 0 if bad == 0 and got == correct else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=HERE)
    ap.add_argument("--verify", nargs="?", const=HERE, metavar="DIR")
    args = ap.parse_args()
    if args.verify:
        return verify(args.verify)
    train(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
