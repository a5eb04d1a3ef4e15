"""The Triton kernel of engine/kernels/fused_moe.py (a module of its own: jit helpers must be module globals,
and importing it needs triton)."""
import triton
import triton.language as tl


@triton.jit
def _e2m1(code):
    """4-bit code (sign bit 3, exponent bits 2-1, mantissa bit 0) -> fp32 value."""
    e = (code >> 1) & 3
    m = (code & 1).to(tl.float32)
    mag = tl.where(e == 0, m * 0.5, (1.0 + m * 0.5) * tl.exp2((e - 1).to(tl.float32)))
    return tl.where((code & 8) != 0, -mag, mag)


@triton.jit
def moe_nvfp4_gemm(X, W, WS, WG, ROWS, BEXP, TOPW, Y,
                   n_pairs, N, K, K_PER_SPLIT, stride_xm, stride_we, stride_wn, stride_se, stride_sn, stride_ym,
                   stride_ys,
                   TOPK: tl.constexpr, GATHER: tl.constexpr, RELU2: tl.constexpr, WEIGHTED: tl.constexpr,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                   DOT: tl.constexpr, PREC: tl.constexpr):
    """Y[row] = act(X[src(row)] @ dequant(W[expert(row)]).T) (* routing weight), for padded rows sorted
    by expert. GATHER: X rows are tokens (row -> pair // TOPK); else X is already in padded row order.
    Grid (row blocks, N tiles, K slices): program (m, n, s) adds K[s * K_PER_SPLIT, +K_PER_SPLIT) into slab s
    of Y (``stride_ys`` apart; split-K only without RELU2 / WEIGHTED, which need the whole sum). A block of
    padding rows (expert -1) loads and multiplies nothing."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    e_raw = tl.load(BEXP + pid_m)
    e = tl.maximum(e_raw, 0)
    k_end = tl.where(e_raw >= 0, K_PER_SPLIT, 0)  # a padding block (-1): no loads, no dots, nothing stored
    k_lo = tl.program_id(2) * K_PER_SPLIT  # split-K: this program's slice of K (one slice without split-K)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    pair = tl.load(ROWS + rows)
    valid = (pair < n_pairs) & ((pair * 0 + e_raw) >= 0)
    src = rows
    if GATHER:
        src = pair // TOPK
    n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    nmask = n < N
    j = tl.arange(0, BLOCK_K // 2)
    g = tl.load(WG + e).to(tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    Y += tl.program_id(2).to(tl.int64) * stride_ys  # split-K partials: one [rows, N] slab per slice
    for kk in range(0, k_end, BLOCK_K):
        k0 = k_lo + kk
        ke = k0 + 2 * j  # even elements (low nibbles); odd = ke + 1 (high nibbles)
        kmask = ke < K
        xe = tl.load(X + src[:, None].to(tl.int64) * stride_xm + ke[None, :],
                     mask=valid[:, None] & kmask[None, :], other=0.0)
        xo = tl.load(X + src[:, None].to(tl.int64) * stride_xm + ke[None, :] + 1,
                     mask=valid[:, None] & kmask[None, :], other=0.0)
        p = tl.load(W + e.to(tl.int64) * stride_we + n[:, None].to(tl.int64) * stride_wn + (k0 // 2 + j)[None, :],
                    mask=nmask[:, None] & kmask[None, :], other=0).to(tl.int32)
        s = tl.load(WS + e.to(tl.int64) * stride_se + n[:, None].to(tl.int64) * stride_sn + (ke // 16)[None, :],
                    mask=nmask[:, None] & kmask[None, :], other=0.0).to(tl.float32) * g
        we = (_e2m1(p & 15) * s).to(DOT)  # [BN, BK/2]
        wo = (_e2m1(p >> 4) * s).to(DOT)
        acc += tl.dot(xe.to(DOT), tl.trans(we), out_dtype=tl.float32, input_precision=PREC)
        acc += tl.dot(xo.to(DOT), tl.trans(wo), out_dtype=tl.float32, input_precision=PREC)
    if RELU2:
        acc = tl.maximum(acc, 0.0)
        acc = acc * acc
    if WEIGHTED:
        w = tl.load(TOPW + pair, mask=valid, other=0.0).to(tl.float32)
        acc = acc * w[:, None]
    out_rows = rows
    if WEIGHTED:  # the down projection writes each routed pair's own row
        out_rows = pair
    tl.store(Y + out_rows[:, None].to(tl.int64) * stride_ym + n[None, :], acc,
             mask=valid[:, None] & nmask[None, :])
