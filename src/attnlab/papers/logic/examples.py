"""The two fully connected examples of the text's §1, as executable networks.

**OR of ANDs** (eq. 1.1): with X = (X_1, ..., X_6) in {0, 1}^6,
    Y = h(C ReLU(B X - 1)),   B = [[1,1,0,0,0,0], [0,0,1,1,0,0], [0,0,0,0,1,1]],  C = (1, 1, 1),
h(x) = 1 if x >= 1 else 0. Hidden unit j is ReLU(X_{2j-1} + X_{2j} - 1) = X_{2j-1} AND X_{2j},
so Y = (X_1 X_2) OR (X_3 X_4) OR (X_5 X_6). (B is absent from attnlab's copy of the text, lost
in the extraction of the PDF; this is the matrix the sentence describes.) With X_i i.i.d. Bernoulli(p), P(Y = 1) = 1 - (1 - p^2)^3.

**Happy / sad** (eq. 1.3-1.7): words receive, present, pass, exam, punishment one-hot in
R^5; a word pair is the sum of its two codes; Y = C ReLU(B X - 1) with
    B = [[1,1,0,0,0], [0,0,1,1,0], [1,0,0,0,1]]   (rows: happy, happy, sad)
    C = [[1,1,0], [0,0,1]]                         (rows: happy, sad)
so "receive present" and "pass exam" give (1, 0) and "receive punishment" gives (0, 1).
"""

from __future__ import annotations

import itertools

import numpy as np

OR_B = np.array([[1, 1, 0, 0, 0, 0], [0, 0, 1, 1, 0, 0], [0, 0, 0, 0, 1, 1]], dtype=np.float64)
OR_C = np.ones((1, 3))

WORDS = ("receive", "present", "pass", "exam", "punishment")
MOOD_B = np.array([[1, 1, 0, 0, 0], [0, 0, 1, 1, 0], [1, 0, 0, 0, 1]], dtype=np.float64)
MOOD_C = np.array([[1, 1, 0], [0, 0, 1]], dtype=np.float64)
MOOD_RULES = {("receive", "present"): (1, 0), ("pass", "exam"): (1, 0), ("receive", "punishment"): (0, 1)}


def or_of_ands(X: np.ndarray) -> np.ndarray:
    """Y = h(C ReLU(B X - 1)) for X (S, 6) in {0, 1}: (S,) in {0, 1}."""
    hidden = np.maximum(np.asarray(X, np.float64) @ OR_B.T - 1.0, 0.0)
    return (hidden @ OR_C.T >= 1.0).astype(np.int64)[:, 0]


def or_of_ands_truth(X: np.ndarray) -> np.ndarray:
    """The logic of eq. 1.1 evaluated directly."""
    X = np.asarray(X).astype(bool)
    return ((X[:, 0] & X[:, 1]) | (X[:, 2] & X[:, 3]) | (X[:, 4] & X[:, 5])).astype(np.int64)


def all_binary(n: int) -> np.ndarray:
    """Every vector of {0, 1}^n, (2^n, n)."""
    return np.array(list(itertools.product((0, 1), repeat=n)))


def or_probability(p: float) -> float:
    """P(Y = 1) by summing the network's output over all 64 inputs with Bernoulli(p) weights."""
    X = all_binary(6)
    weights = np.prod(np.where(X == 1, p, 1 - p), axis=1)
    return float(weights @ or_of_ands(X))


def word_code(word: str) -> np.ndarray:
    return np.eye(len(WORDS))[WORDS.index(word)]


def mood(pair: tuple[str, str]) -> np.ndarray:
    """(happy, sad) = C ReLU(B (x_w1 + x_w2) - 1) for a word pair."""
    x = word_code(pair[0]) + word_code(pair[1])
    return MOOD_C @ np.maximum(MOOD_B @ x - 1.0, 0.0)
