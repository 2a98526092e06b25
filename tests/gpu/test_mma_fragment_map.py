"""The data movement of src/model_cuda/mc_gemm_mma.cu, emulated on the CPU (no GPU needed).

The kernel never stages W or X in shared memory: each lane's 16-byte loads of W and X rows feed
mma.m16n8k16 directly, with the 16 k slots of each mma a fixed permutation of 16 of a 32-k step's
k, and the D fragments are scattered into shared memory by row of X and weight row before the
warps' sums are added. Whether every product W[n][k] X[r][k] is formed exactly once and lands in
Y[r][n] depends only on that indexing and on the PTX ISA's fragment layouts, which this test
writes out (A row-major: {A[g][2t..]}, {A[g+8][2t..]}, {A[g][2t+8..]}, {A[g+8][2t+8..]}; B
column-major: {B[2t..][g]}, {B[2t+8..][g]}; D: {D[g][2t], D[g][2t+1], D[g+8][2t], D[g+8][2t+1]};
lane = 4 g + t). It walks the kernel's loops (blocks of 16 weight rows, KW warps taking every
KW-th step, PREFETCH steps per round, RT tiles of 8 rows of X, the guards for rows, R and cols)
in float64 and requires Y = X W^T to 1e-12 relative on random inputs (never zero), on shapes
with partial blocks, partial tiles and a partial last step; and mc_gemm_mma_act's SwiGLU blocks
(gate row n0 + g and up row I + n0 + g in fragment rows g and g + 8) against silu(X G^T) (X U^T). A wrong slot map, a swapped fragment
register or a misplaced scatter gives errors of order 1, so the check cannot pass by accident.

Usage: python3 tests/gpu/test_mma_fragment_map.py
"""
import sys

import numpy as np

PREFETCH = 4


def rt_of(R):
    return 1 if R <= 8 else 2 if R <= 16 else 4 if R <= 32 else 8


def silu(x):
    return x / (1.0 + np.exp(-x))


def emulate(W, X, KW, swiglu=False):
    """Y = X W^T as the kernel forms it; swiglu: W = gate | up (2 I rows), a block's fragment rows
    g and g + 8 being gate row n0 + g and up row I + n0 + g (n0 = 8 block), and the result
    silu(gate) up [R][I] (mc_gemm_mma_act's SWIGLU, before its bf16 rounding)"""
    rows, cols = W.shape
    R = X.shape[0]
    RT = rt_of(R)
    outs = rows // 2 if swiglu else rows
    Y = np.full((R, outs), np.nan)
    nsteps = (cols + 31) // 32
    lanes = np.arange(32)
    g, t = lanes >> 2, lanes & 3
    for n0 in range(0, outs, 8 if swiglu else 16):
        def lo_row(gg):  # the weight row of fragment row gg, or None past the weight
            n = n0 + gg
            return n if n < outs else None

        def hi_row(gg):  # the weight row of fragment row gg + 8
            if swiglu:
                return outs + n0 + gg if n0 + gg < outs else None
            n = n0 + gg + 8
            return n if n < rows else None

        part = np.zeros((KW, RT * 8, 16))
        for warp in range(KW):
            acc = np.zeros((32, RT, 4))
            for s0 in range(warp, nsteps, KW * PREFETCH):
                for u in range(PREFETCH):
                    s = s0 + u * KW
                    if s >= nsteps:
                        break
                    # each lane's 16-byte loads: 8 values of its two weight rows and of its rows of X
                    wlo, whi, xq = np.zeros((32, 8)), np.zeros((32, 8)), np.zeros((32, RT, 8))
                    for lane in lanes:
                        k = 32 * s + 8 * t[lane]
                        if k >= cols:
                            continue
                        lo, hi = lo_row(g[lane]), hi_row(g[lane])
                        if lo is not None:
                            wlo[lane] = W[lo, k:k + 8]
                        if hi is not None:
                            whi[lane] = W[hi, k:k + 8]
                        for j in range(RT):
                            if 8 * j + g[lane] < R:
                                xq[lane, j] = X[8 * j + g[lane], k:k + 8]
                    for j in range(RT):
                        for half in range(2):  # words 0,1 then words 2,3 of each load
                            o = 4 * half
                            A, B = np.full((16, 16), np.nan), np.full((16, 8), np.nan)
                            for lane in lanes:
                                gg, tt = g[lane], t[lane]
                                A[gg, 2 * tt:2 * tt + 2] = wlo[lane, o:o + 2]
                                A[gg + 8, 2 * tt:2 * tt + 2] = whi[lane, o:o + 2]
                                A[gg, 2 * tt + 8:2 * tt + 10] = wlo[lane, o + 2:o + 4]
                                A[gg + 8, 2 * tt + 8:2 * tt + 10] = whi[lane, o + 2:o + 4]
                                B[2 * tt:2 * tt + 2, gg] = xq[lane, j, o:o + 2]
                                B[2 * tt + 8:2 * tt + 10, gg] = xq[lane, j, o + 2:o + 4]
                            D = A @ B  # NaN anywhere = a fragment slot nobody filled
                            acc[:, j, 0] += D[g, 2 * t]
                            acc[:, j, 1] += D[g, 2 * t + 1]
                            acc[:, j, 2] += D[g + 8, 2 * t]
                            acc[:, j, 3] += D[g + 8, 2 * t + 1]
            for j in range(RT):  # the scatter into part[warp][row of X][weight row]
                part[warp, 8 * j + 2 * t, g] = acc[:, j, 0]
                part[warp, 8 * j + 2 * t + 1, g] = acc[:, j, 1]
                part[warp, 8 * j + 2 * t, g + 8] = acc[:, j, 2]
                part[warp, 8 * j + 2 * t + 1, g + 8] = acc[:, j, 3]
        if swiglu:
            for o in range(RT * 8 * 8):
                r, n = o >> 3, o & 7
                if r < R and n0 + n < outs:
                    Y[r, n0 + n] = silu(part[:, r, n].sum()) * part[:, r, n + 8].sum()
            continue
        for o in range(RT * 8 * 16):
            r, n = o >> 4, o & 15
            if r < R and n0 + n < rows:
                Y[r, n0 + n] = part[:, r, n].sum()
    return Y


def main():
    rng = np.random.default_rng(30)
    fails = 0
    # (rows, cols, R, KW): partial 16-row blocks, every RT, cols not a multiple of 32, steps
    # fewer than warps, more steps than one prefetch round
    for rows, cols, R, KW in [(16, 32, 1, 4), (37, 256, 9, 8), (64, 2560, 64, 4), (20, 8, 3, 8),
                              (50, 200, 17, 4), (33, 1000, 33, 8), (5, 1064, 64, 4)]:
        W = rng.uniform(0.05, 1.0, (rows, cols)) * rng.choice([-1.0, 1.0], (rows, cols))
        X = rng.uniform(0.05, 1.0, (R, cols)) * rng.choice([-1.0, 1.0], (R, cols))
        Y = emulate(W, X, KW)
        A = np.abs(X) @ np.abs(W).T
        err = np.max(np.abs(Y - X @ W.T) / A) if not np.isnan(Y).any() else float("inf")
        ok = err <= 1e-12
        fails += not ok
        print("%4d x %-5d R %2d KW %d: max |emulated - X W^T| / (|X| |W|^T) = %.2e %s"
              % (rows, cols, R, KW, err, "ok" if ok else "FAIL"))
    # mc_gemm_mma_act's SWIGLU pairing (I outputs from 2 I weight rows): partial last block, every RT
    for I, cols, R, KW in [(8, 32, 1, 4), (37, 264, 9, 8), (40, 1064, 33, 4), (5, 96, 64, 8)]:
        W = rng.uniform(0.05, 1.0, (2 * I, cols)) * rng.choice([-1.0, 1.0], (2 * I, cols))
        X = rng.uniform(0.05, 1.0, (R, cols)) * rng.choice([-1.0, 1.0], (R, cols))
        Y = emulate(W / np.sqrt(cols), X, KW, swiglu=True)
        G, U = X @ W[:I].T / np.sqrt(cols), X @ W[I:].T / np.sqrt(cols)
        ref = silu(G) * U
        err = np.max(np.abs(Y - ref) / (1.0 + np.abs(ref))) if not np.isnan(Y).any() else float("inf")
        ok = err <= 1e-12
        fails += not ok
        print("swiglu I %3d x %-5d R %2d KW %d: max |emulated - silu(gate) up| / (1 + |.|) = %.2e %s"
              % (I, cols, R, KW, err, "ok" if ok else "FAIL"))
    print("%d failure(s)" % fails)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
