/* Internal pieces of the SSM state engine, shared by its .c files (not part of the API). */
#ifndef RSSM_SSM_INTERNAL_H
#define RSSM_SSM_INTERNAL_H

#include "src/ssm/ssm_engine.h"

/* Copy token t of `in` into record j's ring slot: alpha, k, and v (GDN: also beta; x is then
 * filled by whoever computes u). */
void ssm_write_record(ssm_state *st, int j, const ssm_inputs *in, int t);

/* Output-only readout: out[hd][i] = (S_n y)_i with S_n = gamma_n C + sum_{j<=n} gamma_{j+1:n}
 * x_j k_j^T, for all heads, without forming S_n (ssm_math.h item 3). y is one vector per key
 * group. */
void ssm_readout(ssm_state *st, const float *C /* [H][dv][dk] */, int n,
                 const float *y /* [G][dk] */, float *out /* [H][dv] */);

/* GDN: u of record j from the output-only readout of records 1..j-1 on C; written to rec_x. */
void ssm_gdn_u_readout(ssm_state *st, const float *C /* [H][dv][dk] */, int j);

/* Materialise S = records 1..n folded in order onto C (ssm_math.h item 4). GDN records with
 * j >= recompute_from get u recomputed from the running S (item 5) and written back to rec_x;
 * the others use their stored u. C and S may be the same array. */
void ssm_materialise(ssm_state *st, const float *C /* [H][dv][dk] */, int n, int recompute_from,
                     float *S /* [H][dv][dk] */);

/* o[hd][i] = S[hd][i] . q[g] (warp-32 order). */
void ssm_output_from_state(const ssm_state *st, const float *S /* [H][dv][dk] */,
                           const float *q /* [G][dk] */, float *o /* [H][dv] */);

/* Store S into every checkpoint of the strategy (main, and lp when split) with this flush's
 * (or conventional store's) SR event, refresh their decoded copies, and count the event. */
void ssm_store(ssm_state *st, const float *S /* [H][dv][dk] */);

#endif
