"""Expected values of the examples, computed by hand with numpy from DESIGN §3.

Nothing here imports ``refcompiler``: the point is an oracle for the oracle.
Initial values follow the graph file's rules (DESIGN §10): seeded floats are
``default_rng(seed).standard_normal(shape).astype(float32)``, seeded integers
``default_rng(seed).integers(low, high, size=shape, dtype=int32)``, no init is
zeros. Each example is written as its initial values plus one run, a plain
function of the values at entry, so that two runs are ``run(run(initial))``.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

F32 = np.float32

__all__ = ["EXAMPLES", "expected", "normal", "integers"]


def normal(seed: int, shape: tuple[int, ...]) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def integers(seed: int, shape: tuple[int, ...], low: int, high: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(low, high, size=shape, dtype=np.int32)


def zeros(shape: tuple[int, ...]) -> np.ndarray:
    return np.zeros(shape, np.float32)


def histogram_by_hand(x: np.ndarray, lo: float, hi: float, k: int) -> np.ndarray:
    """k equal bins over [lo, hi), values outside clipped to the end bins (one loop, no numpy binning)."""
    counts = np.zeros(k, np.float32)
    width = (hi - lo) / k
    for value in x.ravel().tolist():
        j = int(np.floor((value - lo) / width))
        counts[min(max(j, 0), k - 1)] += 1
    return counts


# ------------------------------------------------------------ read_then_save

def read_then_save_initial() -> dict[str, np.ndarray]:
    return {"A": normal(1, (4,)), "out": zeros((4,))}


def read_then_save_run(v: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    W = normal(3, (4,))
    A = v["A"]
    # both reads of A see its value at entry, although A is saved
    return {"A": A + W, "out": A * A}


# ------------------------------------------------------ quantization_profile

def quantization_profile_initial() -> dict[str, np.ndarray]:
    return {"A": normal(2, (4,)), "minmax": np.array([0.0, 0.0], np.float32), "hist": zeros((8,))}


def quantization_profile_run(v: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    W = normal(3, (4,))
    s = v["A"] + W
    minmax = np.array([min(v["minmax"][0], s.min()), max(v["minmax"][1], s.max())], np.float32)
    hist = v["hist"] + histogram_by_hand(s, -2.0, 2.0, 8)
    return {"A": np.tanh(s), "minmax": minmax, "hist": hist}


# ---------------------------------------------------------- embedding_update

def embedding_update_initial() -> dict[str, np.ndarray]:
    return {
        "ids": integers(4, (5,), 0, 6),
        "grad": normal(5, (5, 3)),
        "table": normal(6, (6, 3)),
        "acc": zeros((5, 3)),
        "looked_up": zeros((5, 3)),
        "running_total": zeros((5, 3)),
    }


def embedding_update_run(v: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    ids, grad = v["ids"], v["grad"]
    table = v["table"].copy()
    rows = np.stack([table[i].copy() for i in ids.tolist()])  # lookups see the table before the update
    for k, i in enumerate(ids.tolist()):  # a repeated id adds each of its rows, in order
        table[i] = table[i] + grad[k]
    acc = v["acc"] + np.maximum(rows, F32(0))
    return {**v, "table": table, "acc": acc, "looked_up": rows, "running_total": acc.copy()}


# -------------------------------------------------------------- sgd_momentum

def sgd_momentum_initial() -> dict[str, np.ndarray]:
    return {"x": normal(11, (4, 3)), "w": normal(12, (3, 2)), "v": normal(13, (3, 2)), "loss": zeros((1,))}


def sgd_momentum_run(v: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    x, w, vel = v["x"], v["w"], v["v"]
    target = normal(14, (4, 2))
    err = np.matmul(x, w) - target
    xt = np.transpose(x).copy()  # transpose produces a tensor of its own
    grad = np.matmul(xt, err)
    v_new = F32(0.9) * vel + grad  # v first, then w from the new v
    w_new = w - F32(0.05) * v_new
    loss = (err * err).sum().reshape(1)
    return {"x": x, "w": w_new, "v": v_new, "loss": loss}


# --------------------------------------------------------------- clamped_ids

def clamped_ids_initial() -> dict[str, np.ndarray]:
    return {"ids": integers(10, (5,), -3, 6), "grad": normal(8, (5, 2)), "table": normal(9, (6, 2)), "rows": zeros((5, 2))}


def clamped_ids_run(v: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    clamped = np.array([max(int(i), 0) for i in v["ids"].tolist()], np.int32)  # max with the constant floor [0]
    table = v["table"].copy()
    rows = np.stack([table[i].copy() for i in clamped.tolist()])
    for k, i in enumerate(clamped.tolist()):
        table[i] = table[i] + v["grad"][k]
    return {**v, "ids": clamped, "table": table, "rows": rows}


EXAMPLES: dict[str, tuple[Callable[[], dict[str, np.ndarray]], Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]]] = {
    "read_then_save": (read_then_save_initial, read_then_save_run),
    "quantization_profile": (quantization_profile_initial, quantization_profile_run),
    "embedding_update": (embedding_update_initial, embedding_update_run),
    "sgd_momentum": (sgd_momentum_initial, sgd_momentum_run),
    "clamped_ids": (clamped_ids_initial, clamped_ids_run),
}


def expected(example: str, runs: int) -> dict[str, np.ndarray]:
    """Every placeholder and owned variable of ``examples/<example>.json`` after ``runs`` runs."""
    initial, run = EXAMPLES[example]
    values = initial()
    for _ in range(runs):
        values = run(values)
    return values
