"""Eqs. (1)-(6) (memorization-capacity-of-mha §3) written out literally, independently of the
package: in NumPy over a data set, and in torch for one example (autograd-friendly)."""

import numpy as np
import torch


def numpy_forward(E, e, W_Q, W_K, W_V, W_O, W_D, skip=False):
    """Eqs. (1)-(6) example by example, written independently of the package."""
    H = W_Q.shape[0]
    out = []
    for t in range(len(e)):
        Et = E if E.ndim == 2 else E[t]
        p = []
        for h in range(H):
            a = Et @ W_K[h] @ W_Q[h].T @ e[t]  # (1)
            th = np.exp(a - a.max()) / np.exp(a - a.max()).sum()  # (2)
            p.append(W_V[h].T @ (Et.T @ th))  # (3)-(4)
        o = W_O.T @ np.concatenate(p) + (e[t] if skip else 0)  # (5)
        out.append(W_D.T @ o)  # (6)
    return np.array(out)


def literal_forward(params, E, e):
    """y_hat for one example (E (n, d), e (d,)) from one model's parameters, head by head, in torch."""
    ps = []
    for h in range(params["W_Q"].shape[0]):
        alpha = E @ params["W_K"][h] @ params["W_Q"][h].T @ e  # (1)
        theta = torch.softmax(alpha, dim=0)  # (2)
        z = E.T @ theta  # (3)
        ps.append(params["W_V"][h].T @ z)  # (4)
    o = params["W_O"].T @ torch.cat(ps)  # (5)
    return params["W_D"].T @ o  # (6)
