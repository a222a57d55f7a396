#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Reproduce the seed article's worked example with PyTorch and write golden data.

The seed ("Understanding and Coding Self-Attention, Multi-Head Attention,
Cross-Attention and Causal-Attention in LLMs", S. Raschka) embeds the sentence
"Life is short, eat dessert first" with torch.manual_seed(123) and
torch.nn.Embedding(50_000, 3), then draws d_q = d_k = 2, d_v = 4 projection matrices with
torch.rand from the same seed stream and computes self-, multi-head, cross- and causal
attention. This script reproduces those steps, checks the printed embedding, and writes
every input, weight and output as float32 .npy files to tests/data/seed/.
Outputs are computed in float64 from the float32 inputs and rounded once to float32, so
they are the correctly rounded answer the C kernels are compared with. The C tests read these files; they never need PyTorch.

Usage: scripts/make_golden.py [--out tests/data/seed]     (needs Debian's python3-torch)
"""
import argparse
import os
import sys

import numpy as np

try:
    import torch
except ImportError:
    sys.exit("make_golden.py needs PyTorch: apt-get install python3-torch")

# The embedding the seed article prints (4 decimals).
SEED_EMBEDDING = np.array([[0.3374, -0.1778, -0.3035],
                           [0.1794, 1.8951, 0.4954],
                           [0.2692, -0.0770, -1.0205],
                           [-0.2196, -0.3792, 0.7671],
                           [-0.5880, 0.3486, 0.6603],
                           [-1.1925, 0.6984, -1.4097]])


def attention(x_q, x_kv, w_q, w_k, w_v, causal):
    """softmax(X_q W_q (X_kv W_k)^T / sqrt(d_k) + mask) X_kv W_v in float64.

    The causal mask is bottom-right aligned: row i sees key j iff j <= i + (n_kv - n_q).
    """
    q = x_q.double() @ w_q.double()
    k = x_kv.double() @ w_k.double()
    v = x_kv.double() @ w_v.double()
    omega = q @ k.T
    if causal:
        n_q, n_kv = omega.shape
        mask = torch.ones(n_q, n_kv, dtype=torch.bool).tril(diagonal=n_kv - n_q)
        omega = omega.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(omega / k.shape[1] ** 0.5, dim=-1)
    return weights @ v


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests", "data", "seed"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    def save(name, t, dtype=np.float32):
        np.save(os.path.join(args.out, name + ".npy"), np.ascontiguousarray(t.detach().numpy().astype(dtype)))

    # 1. The embedding, exactly as in the seed article.
    sentence = "Life is short, eat dessert first"
    dc = {s: i for i, s in enumerate(sorted(sentence.replace(",", "").split()))}
    sentence_int = torch.tensor([dc[s] for s in sentence.replace(",", "").split()])
    torch.manual_seed(123)
    embed = torch.nn.Embedding(50_000, 3)
    x = embed(sentence_int).detach()
    if not np.allclose(x.numpy(), SEED_EMBEDDING, atol=5e-5):
        sys.exit("embedding differs from the seed article's printout:\n%s" % x)

    # 2. Projections from the same seed stream: W[d_in][d_out] so that Q = X · W.
    d = x.shape[1]
    d_q, d_k, d_v = 2, 2, 4
    w_query, w_key, w_value = torch.rand(d, d_q), torch.rand(d, d_k), torch.rand(d, d_v)

    # 3. Multi-head: h = 3 heads, each with its own projections.
    h = 3
    mh_w_query, mh_w_key, mh_w_value = torch.rand(h, d, d_q), torch.rand(h, d, d_k), torch.rand(h, d, d_v)

    # 4. Cross-attention: keys/values from a second random input of another length (8)
    #    and width (5), with their own key/value projections.
    x2 = torch.rand(8, 5)
    cross_w_key, cross_w_value = torch.rand(5, d_k), torch.rand(5, d_v)

    save("x", x)
    save("w_query", w_query), save("w_key", w_key), save("w_value", w_value)
    save("mh_w_query", mh_w_query), save("mh_w_key", mh_w_key), save("mh_w_value", mh_w_value)
    save("x2", x2), save("cross_w_key", cross_w_key), save("cross_w_value", cross_w_value)

    # Outputs computed in float64, rounded once to float32. Multi-head outputs concatenate heads: [seq][h * d_v].
    self_out = attention(x, x, w_query, w_key, w_value, causal=False)
    causal_out = attention(x, x, w_query, w_key, w_value, causal=True)
    mh_out = torch.cat([attention(x, x, mh_w_query[i], mh_w_key[i], mh_w_value[i], False)
                        for i in range(h)], dim=1)
    mh_causal_out = torch.cat([attention(x, x, mh_w_query[i], mh_w_key[i], mh_w_value[i], True)
                               for i in range(h)], dim=1)
    cross_out = attention(x, x2, w_query, cross_w_key, cross_w_value, causal=False)
    save("self_out", self_out)
    save("causal_out", causal_out)
    save("multihead_out", mh_out)
    save("multihead_causal_out", mh_causal_out)
    save("cross_out", cross_out)

    # The seed's step-by-step quantities for the second word ("is"), for readers.
    x_2 = x[1]
    print("embedding:\n", x)
    print("query_2:", (x_2 @ w_query).numpy(), "context_vector_2:", self_out[1].numpy())
    print("wrote golden data to", os.path.normpath(args.out))


if __name__ == "__main__":
    main()
