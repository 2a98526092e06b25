"""Training-only forms of the two SSM scans of transformers' torch fallbacks (no fla, mamba_ssm or
causal_conv1d on the GPU machine), the same arithmetic in fewer, larger operations; imported by
scripts/train_fixture_models.py (--fast-scans, the default), never used by an evaluation: every
evaluation number comes from a fresh from_pretrained model on transformers' own code.

Why: transformers' Mamba-2 fallback (modeling_nemotron_h.mamba2_chunk_scan) contracts by
broadcasting and summing, which materialises tensors of batch x length x chunk x heads x d_state
elements (4.3 GB a layer at 4 x 16384 tokens) where a matrix product needs none: here the
contractions are matrix products (einsum), and training runs 8.5x faster (session 10,
docs/trained-models.md). The GDN form is the fallback's own arithmetic (transformers 5.17 also
solves each chunk's unit lower-triangular system with torch.linalg.solve_triangular; its check on
the model gave a difference of 0.0); it differs in solving chunks longer than 64 by blocks of 64
rows (unit_lower_solve), so that long chunks need no large triangular solves. Both take the
arguments of transformers' functions (torch_chunk_gated_delta_rule, mamba2_chunk_scan) and are
checked before training against them on the model (scripts/train_fixture_models.py, FastScans)
and against the token-by-token recurrences in fp64 (tests/train/test_train_scans.py).

Shapes follow transformers' calls: b batch, L length, h heads, dk / dv GDN key / value widths,
p Mamba-2 head width, g B/C groups, n d_state, Q chunk length, c chunk index.
"""
import torch
import torch.nn.functional as F


def _wide(t):
    """fp32 for bf16 / fp16 / fp32 inputs (what the fallbacks compute in); fp64 stays fp64, so
    that the tests can compare with the recurrences at fp64's resolution."""
    return t if t.dtype == torch.float64 else t.float()


def _chunks(x, q):
    """[b][h][L][...] -> [b][h][L/q][q][...] (L a multiple of q)."""
    return x.reshape(x.shape[0], x.shape[1], -1, q, *x.shape[3:])


def unit_lower_solve(n_mat, rhs, block=64):
    """X with (I + N) X = rhs for N = n_mat [..][Q][Q] strictly lower triangular (its diagonal
    and upper part are ignored), rhs [..][Q][m], by blocks of `block` rows: X_r = (I + N_rr)^-1
    (rhs_r - N_r,<r X_<r). The diagonal blocks go to a triangular solve, the rest to matrix
    products, in fp32 with autocast off (a bf16 product would round every substitution step).
    Why not one triangular solve of the whole chunk: a batched solve of Q x Q systems costs
    about what the products cost in flops but runs far slower than they do on a GPU, and its
    backward is two more; by blocks only the small diagonal solves remain."""
    q = n_mat.shape[-1]
    if q <= block:
        return torch.linalg.solve_triangular(n_mat, rhs, upper=False, unitriangular=True)
    xs = []
    with torch.autocast(device_type=rhs.device.type, enabled=False):
        for r0 in range(0, q, block):
            r1 = min(q, r0 + block)
            acc = rhs[..., r0:r1, :]
            if r0:
                acc = acc - n_mat[..., r0:r1, :r0] @ torch.cat(xs, -2)
            xs.append(torch.linalg.solve_triangular(n_mat[..., r0:r1, r0:r1], acc, upper=False,
                                                    unitriangular=True))
    return torch.cat(xs, -2)


def gdn_chunked(query, key, value, g, beta, chunk_size=64, initial_state=None,
                output_final_state=False, use_qk_l2norm_in_kernel=False, l2norm=None,
                solve_block=64, **unused):
    """The gated delta rule over whole sequences, chunk by chunk (the WY form of DeltaNet), per
    head in transformers' convention (S [dk][dv]):
        S_t = exp(g_t) S_{t-1} + k_t (beta_t (v_t - exp(g_t) S_{t-1}^T k_t))^T,
        o_t = S_t^T q_t / sqrt(dk).
    query, key [b][L][h][dk], value [b][L][h][dv], g (log-decay) and beta [b][L][h];
    initial_state [b][h][dk][dv] or None. Returns (o [b][L][h][dv] in query's dtype,
    S_L [b][h][dk][dv] fp32 or None). l2norm: transformers' own normalisation, applied to q and
    k when use_qk_l2norm_in_kernel (so that its epsilon is the model's). solve_block: the rows
    of unit_lower_solve's blocks (chunks up to that long are solved in one). unused: the forward's
    kwargs, which transformers passes through and its own function ignores as well."""
    dtype = query.dtype
    if use_qk_l2norm_in_kernel:
        query, key = l2norm(query, dim=-1), l2norm(key, dim=-1)
    q, k, v, beta, g = [_wide(t.transpose(1, 2).contiguous())
                        for t in (query, key, value, beta, g)]      # [b][h][L][.]
    bsz, nh, length, dk = k.shape
    dv = v.shape[-1]
    pad = (-length) % chunk_size
    if pad:
        q, k, v = [F.pad(t, (0, 0, 0, pad)) for t in (q, k, v)]
        beta, g = [F.pad(t, (0, pad)) for t in (beta, g)]
    q = q * dk ** -0.5
    q, k, v = [_chunks(t, chunk_size) for t in (q, k, v)]              # [b][h][c][Q][.]
    beta, g = [_chunks(t, chunk_size) for t in (beta, g)]              # [b][h][c][Q]
    n_chunks = q.shape[2]

    # G_r = sum_{j <= r} g_j within the chunk; decay from position c to r (c <= r): exp(G_r - G_c)
    g = g.cumsum(-1)
    idx = torch.arange(chunk_size, device=q.device)
    on_or_below = idx[:, None] >= idx[None, :]                        # [Q][Q] r >= c
    below = idx[:, None] > idx[None, :]
    # masked before exp: above the diagonal G_r - G_c > 0 and could overflow
    decay = (g[..., :, None] - g[..., None, :]).masked_fill(~on_or_below, float("-inf")).exp()

    # within a chunk the delta rule is the unit lower-triangular system
    #   (I + N) U = beta V,  (I + N) W = beta K exp(G),  N_rc = beta_r k_r.k_c exp(G_r - G_c), c < r
    k_beta = k * beta[..., None]
    n_mat = ((k_beta @ k.transpose(-1, -2)) * decay).masked_fill(~below, 0.0)   # [b][h][c][Q][Q]
    rhs = torch.cat([v * beta[..., None], k_beta * g.exp()[..., None]], -1)      # [..][Q][dv+dk]
    sol = unit_lower_solve(n_mat, rhs, solve_block)
    u, w = sol.split([dv, dk], -1)                      # [b][h][c][Q][dv], [b][h][c][Q][dk]

    # across chunks, with S the state entering chunk i:
    #   V'_i = U_i - W_i S,   S <- exp(G_last) S + (K_i exp(G_last - G))^T V'_i
    k_to_end = k * (g[..., -1:] - g).exp()[..., None]                  # [b][h][c][Q][dk]
    g_last = g[..., -1].exp()                                            # [b][h][c]
    state = (torch.zeros(bsz, nh, dk, dv, device=q.device, dtype=q.dtype)
             if initial_state is None else initial_state.to(q.dtype))
    entering, v_new = [], []
    for i in range(n_chunks):
        vi = u[:, :, i] - w[:, :, i] @ state
        entering.append(state)
        v_new.append(vi)
        state = state * g_last[:, :, i, None, None] + k_to_end[:, :, i].transpose(-1, -2) @ vi
    entering = torch.stack(entering, 2)                                 # [b][h][c][dk][dv]
    v_new = torch.stack(v_new, 2)                                       # [b][h][c][Q][dv]
    # o_r = exp(G_r) q_r S + sum_{c <= r} q_r.k_c exp(G_r - G_c) V'_c
    local = (q @ k.transpose(-1, -2)) * decay                            # [b][h][c][Q][Q]
    out = (q * g.exp()[..., None]) @ entering + local @ v_new           # [b][h][c][Q][dv]
    out = out.reshape(bsz, nh, -1, dv)[:, :, :length]
    return out.transpose(1, 2).contiguous().to(dtype), (state if output_final_state else None)


def _segment_sums(a):
    """a [..][Q] -> [..][Q][Q]: element [l][s] = sum_{s < j <= l} a_j for l >= s, -inf above the
    diagonal. Summed along l from the masked a (not a difference of two cumulative sums), so that
    a long run of large decays loses no digits to cancellation."""
    q = a.shape[-1]
    idx = torch.arange(q, device=a.device)
    strictly_below = idx[:, None] > idx[None, :]                        # [l][s] l > s
    rep = a[..., :, None].expand(*a.shape, q).masked_fill(~strictly_below, 0.0)  # [l][s] = a_l
    return rep.cumsum(-2).masked_fill(~(idx[:, None] >= idx[None, :]), float("-inf"))


def ssd_chunked(x, dt, a_log_neg, b_in, c_in, chunk_size):
    """Mamba-2's selective scan over whole sequences, chunk by chunk (the SSD block form):
        h_t = exp(dt_t A) h_{t-1} + dt_t x_t B_t^T,   y_t = h_t C_t   per head
    x [b][L][h][p] fp32, dt [b][L][h] (after softplus and clamp), a_log_neg = A [h] (negative),
    b_in, c_in [b][L][g][n] fp32 (head j reads group j // (h / g)). Returns y [b][L][h][p] fp32
    without the D skip term. Zero initial state (training)."""
    bsz, length, nh, p = x.shape
    ng, n = b_in.shape[2], b_in.shape[3]
    rep = nh // ng
    pad = (-length) % chunk_size
    xd = x * dt[..., None]                                               # dt_t x_t
    a = a_log_neg.to(x.dtype) * dt                                       # [b][L][h] dt_t A
    if pad:
        xd = F.pad(xd, (0, 0, 0, 0, 0, pad))
        a = F.pad(a, (0, 0, 0, pad))
        b_in = F.pad(b_in, (0, 0, 0, 0, 0, pad))
        c_in = F.pad(c_in, (0, 0, 0, 0, 0, pad))
    nc = (length + pad) // chunk_size
    xd = xd.reshape(bsz, nc, chunk_size, nh, p)                          # [b][c][Q][h][p]
    bc = b_in.reshape(bsz, nc, chunk_size, ng, n)                        # [b][c][Q][g][n]
    cc = c_in.reshape(bsz, nc, chunk_size, ng, n)
    a = a.reshape(bsz, nc, chunk_size, nh).permute(0, 3, 1, 2)           # [b][h][c][Q]
    a_cum = a.cumsum(-1)                                                 # [b][h][c][Q]

    # within a chunk: y_l = sum_{s <= l} (C_l . B_s) exp(sum_{s<j<=l} a_j) dt_s x_s
    cb = torch.einsum("bclgn,bcsgn->bgcls", cc, bc)                      # [b][g][c][Q][Q]
    cb = cb.repeat_interleave(rep, dim=1)                                # [b][h][c][Q][Q]
    m = cb * _segment_sums(a).exp()
    y_diag = torch.einsum("bhcls,bcshp->bclhp", m, xd)

    # each chunk's own contribution to the state at its end: sum_s exp(a_cum_end - a_cum_s) ...
    to_end = (a_cum[..., -1:] - a_cum).exp()                            # [b][h][c][Q]
    bh = bc.repeat_interleave(rep, dim=3)                                # [b][c][Q][h][n]
    xw = xd * to_end.permute(0, 2, 3, 1)[..., None]                      # [b][c][Q][h][p]
    own = torch.einsum("bcshn,bcshp->bchpn", bh, xw)                     # [b][c][h][p][n]
    # ... then the states entering each chunk: exp of sums of whole-chunk decays between chunks
    own = torch.cat([torch.zeros_like(own[:, :1]), own], 1)              # [b][c+1][h][p][n]
    between = _segment_sums(F.pad(a_cum[..., -1], (1, 0))).exp()         # [b][h][c+1][c+1]
    entering = torch.einsum("bhzc,bchpn->bzhpn", between, own)[:, :-1]   # [b][c][h][p][n]

    # from the entering state: y_l += exp(a_cum_l) C_l h
    ch = cc.repeat_interleave(rep, dim=3)                                # [b][c][Q][h][n]
    y_off = torch.einsum("bclhn,bchpn->bclhp", ch, entering)
    y_off = y_off * a_cum.exp().permute(0, 2, 3, 1)[..., None]
    y = (y_diag + y_off).reshape(bsz, nc * chunk_size, nh, p)
    return y[:, :length]


def mamba2_chunk_scan(hidden_states, dt, A, B, C, chunk_size, D=None, dt_bias=None,
                      dt_softplus=False, dt_limit=(0.0, float("inf")), **unused):
    """transformers' Mamba-2 chunk scan (modeling_nemotron_h.mamba2_chunk_scan, the reference
    fallback of mamba_ssm's mamba_chunk_scan_combined) for a zero initial state and no final
    state, the training case; the caller keeps the others on transformers' function. Its
    prologue in the same operations and order: dt = clamp(softplus(dt + dt_bias), dt_limit) in
    dt's dtype, x, B, C to fp32; then ssd_chunked in fp32 with autocast off (the fallback
    contracts by broadcast and sum, which autocast leaves in fp32), and the D skip term
    D x added last. hidden_states [b][L][h][p], dt [b][L][h] (before the bias), A [h] negative,
    B, C [b][L][g][n]; returns y [b][L][h][p] fp32. unused: what transformers' function also
    accepts and ignores (z, seq_idx, its forward's kwargs)."""
    if dt_bias is not None:
        dt = dt + dt_bias.to(dt.dtype)
    if dt_softplus:
        dt = F.softplus(dt)
    dt = torch.clamp(dt, min=dt_limit[0], max=dt_limit[1])
    x = _wide(hidden_states)
    with torch.autocast(device_type=x.device.type, enabled=False):
        y = ssd_chunked(x, _wide(dt), _wide(A), _wide(B), _wide(C), chunk_size)
    if D is not None:
        y = y + D[..., None] * x
    return y
