"""The data movement of src/model_cuda/mc_gemm_wide.cu, emulated on the CPU (no GPU needed).

The kernel copies 64-k tiles of W (128 weight rows) and X (16 NP rows) into shared memory with
16-byte cp.async pieces (piece c of a stage: row c / 8, chunk c % 8; zeros past rows, R or cols),
each 128-byte row's chunk ch stored at chunk ch ^ (row % 8); reads them back with ldmatrix.x4
(lanes 8m .. 8m + 7 give the row addresses of matrix m; lane 4g + t receives row g, columns 2t and
2t + 1 of matrix m in register m) into mma.m16n8k16 fragments (PTX ISA: A {A[g][2t..]},
{A[g+8][2t..]}, {A[g][2t+8..]}, {A[g+8][2t+8..]}; B {B[2t..][g]}, {B[2t+8..][g]}; D {D[g][2t],
D[g][2t+1], D[g+8][2t], D[g+8][2t+1]}); a block's k-tiles are its split's range rotated by the
tile index; split partials are added in split order. This test writes those rules out, walks the
kernel's loops in float64 on random inputs (never zero) and requires Y = X W^T to 1e-12 relative:
shapes with a partial last tile of rows, a partial last k-tile, R of 1 to 64 (NP 1, 2, 4) and
1, 2 or 3 splits. A wrong lane address, register order or rotation, or a swizzle that is not a
bijection within a row, gives errors of order 1 (a product formed twice, missed, or with the wrong
k), so the check cannot pass by accident (mutations tried: the B rows' lane term, the rotation's
modulus). Which bijective swizzle is used matters to bank conflicts only, not to this check.

Usage: python3 tests/gpu/test_wide_fragment_map.py
"""
import sys

import numpy as np

BN, KT, XR, THREADS = 128, 64, 64, 256


def swz(r, c):
    """half-word offset of chunk c of row r in a swizzled tile of 128-byte rows"""
    return r * 64 + ((c ^ (r & 7)) << 3)


def load_tile(sm, src, row0, nrows_tile, k0, nrows_src, cols, row_limit):
    """the cp.async pieces of one tile: piece c = tid + THREADS j -> row c // 8, chunk c % 8"""
    for c in range(nrows_tile * 8):
        r, ch = c >> 3, c & 7
        if r >= row_limit:  # load_x: rows no fragment reads are not loaded
            continue
        n, k = row0 + r, k0 + 8 * ch
        ok = n < nrows_src and k < cols
        sm[swz(r, ch):swz(r, ch) + 8] = src[n, k:k + 8] if ok else 0.0


def ldsm_x4(sm, addr):
    """addr[lane] (half-word offsets); returns regs[lane][m] = (v0, v1)"""
    regs = [[None] * 4 for _ in range(32)]
    for m in range(4):
        rows = [sm[addr[8 * m + j]:addr[8 * m + j] + 8] for j in range(8)]
        for lane in range(32):
            g, t = lane >> 2, lane & 3
            regs[lane][m] = (rows[g][2 * t], rows[g][2 * t + 1])
    return regs


def mma(acc, a, b0, b1):
    """acc[lane] (4 values) += A B for one m16n8k16 from the lanes' fragments"""
    A = np.zeros((16, 16))
    B = np.zeros((16, 8))
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        for e in range(2):
            A[g][2 * t + e] = a[lane][0][e]
            A[g + 8][2 * t + e] = a[lane][1][e]
            A[g][2 * t + 8 + e] = a[lane][2][e]
            A[g + 8][2 * t + 8 + e] = a[lane][3][e]
            B[2 * t + e][g] = b0[lane][e]
            B[2 * t + 8 + e][g] = b1[lane][e]
    D = A @ B
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        acc[lane][0] += D[g][2 * t]
        acc[lane][1] += D[g][2 * t + 1]
        acc[lane][2] += D[g + 8][2 * t]
        acc[lane][3] += D[g + 8][2 * t + 1]


def emulate(W, X, nsplit):
    rows, cols = W.shape
    R = X.shape[0]
    NP = 1 if R <= 16 else 2 if R <= 32 else 4
    nkt = (cols + KT - 1) // KT
    per = (nkt + nsplit - 1) // nsplit
    assert (nsplit - 1) * per < nkt, "an empty split"
    # the inputs padded so that every 16-byte piece of a valid k reads 8 values
    Wp = np.zeros((rows, nkt * KT))
    Wp[:, :cols] = W
    Xp = np.zeros((R, nkt * KT))
    Xp[:, :cols] = X
    P = np.zeros((nsplit, R, rows))
    for tile in range((rows + BN - 1) // BN):
        n0 = tile * BN
        for split in range(nsplit):
            kt0 = split * per
            nk = min(nkt, kt0 + per) - kt0
            rot = tile % nk
            acc = [[[[0.0] * 4 for _ in range(32)] for _ in range(2 * NP)] for _ in range(8)]
            for i in range(nk):
                kt = kt0 + (i + rot) % nk
                sw = np.zeros(BN * KT)
                sx = np.zeros(XR * KT)
                load_tile(sw, Wp, n0, BN, kt * KT, rows, cols, BN)
                load_tile(sx, Xp, 0, XR, kt * KT, R, cols, 16 * NP)
                for warp in range(8):
                    for kk in range(KT // 16):
                        a_addr = [swz(16 * warp + (l & 7) + ((l >> 3) & 1) * 8, 2 * kk + (l >> 4))
                                  for l in range(32)]
                        a = ldsm_x4(sw, a_addr)
                        for p in range(NP):
                            b_addr = [swz(16 * p + (l & 7) + ((l >> 4) << 3),
                                          2 * kk + ((l >> 3) & 1)) for l in range(32)]
                            b = ldsm_x4(sx, b_addr)
                            mma(acc[warp][2 * p], a, [x[0] for x in b], [x[1] for x in b])
                            mma(acc[warp][2 * p + 1], a, [x[2] for x in b], [x[3] for x in b])
            for warp in range(8):
                for lane in range(32):
                    g, t = lane >> 2, lane & 3
                    na = n0 + 16 * warp + g
                    for j in range(2 * NP):
                        for e in range(4):
                            r, n = 8 * j + 2 * t + (e & 1), na + (e >> 1) * 8
                            if r < R and n < rows:
                                P[split, r, n] = acc[warp][j][lane][e]
    Y = P[0].copy()
    for s in range(1, nsplit):
        Y = Y + P[s]
    return Y


def main():
    rng = np.random.default_rng(20261207)
    fails = 0
    cases = [(136, 200, 5, 1), (136, 200, 17, 2), (130, 72, 33, 1), (260, 264, 64, 3),
             (128, 136, 1, 2), (9, 8, 16, 1)]
    for rows, cols, R, nsplit in cases:
        W = rng.uniform(0.05, 1.0, (rows, cols)) * rng.choice([-1.0, 1.0], (rows, cols))
        X = rng.uniform(0.05, 1.0, (R, cols)) * rng.choice([-1.0, 1.0], (R, cols))
        Y = emulate(W, X, nsplit)
        ref = X @ W.T
        scale = np.abs(X) @ np.abs(W).T
        err = float(np.max(np.abs(Y - ref) / scale))
        ok = err < 1e-12
        fails += not ok
        print(f"{'ok  ' if ok else 'FAIL'} rows {rows} cols {cols} R {R} nsplit {nsplit}: "
              f"max |emulated - X W^T| / sum|x w| {err:.2e}")
    print(f"{'PASS' if not fails else 'FAIL'}: {fails} of {len(cases)} cases failed")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
