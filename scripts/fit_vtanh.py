#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The coefficients of vf_tanh's polynomial (kernels/simd/vtanh.h, VTANH_C0..C6).

tanh(a) ~ a + a^3 * P(a^2) on [0, VTANH_SPLIT]: P of degree 6 fitted to
f(z) = (tanh(a)/a - 1)/z, z = a^2, by least squares weighted with the relative error of
the result (Lawson's iteration towards minimax), then rounded to float32. Prints the
coefficients and the relative truncation error of the rounded polynomial (evaluated in
double) in units of 2^-24. The float32 evaluation error is measured by
tests/simd/test_vtanh.c.
"""
import numpy as np

SPLIT = 0.5625
a = np.linspace(1e-4, SPLIT, 20001)
z = a * a
t = np.tanh(a)
f = (t / a - 1) / z
V = np.vstack([z**k for k in range(7)]).T
w = z * a / t  # d(result)/result per unit error in P
W = np.ones_like(z)
for _ in range(60):
    c, *_ = np.linalg.lstsq(V * (w * W)[:, None], f * w * W, rcond=None)
    W = W * np.abs((V @ c - f) * w)
    W /= W.sum()
c32 = c.astype(np.float32).astype(np.float64)
rel = np.abs((a + a**3 * (V @ c32) - t) / t)
print("coefficients:", ", ".join(repr(np.float32(x)) for x in c))
print("max relative truncation error: %.3f * 2^-24" % (rel.max() / 2**-24))
