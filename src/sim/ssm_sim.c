/* The ssm-sim driver: one configuration against the fp32 conventional reference. */
#include "src/sim/ssm_sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant/numerics.h"
#include "src/ssm/ssm_accept.h"
#include "src/ssm/ssm_engine.h"

void ssm_sim_result_free(ssm_sim_result *r) {
  free(r->out_err);
  free(r->out_err_head);
  free(r->store_step);
  free(r->ckpt_err);
  free(r->ckpt_err_head);
  free(r->ckpt_err_lp);
  memset(r, 0, sizeof *r);
}

/* Relative L2 distance per head and over all heads of two [H][n] arrays. Sums in double. */
static float rel_l2(const float *a /* [H][n] */, const float *ref /* [H][n] */, int H, size_t n,
                    float *per_head /* [H] or NULL */) {
  double num = 0.0, den = 0.0;
  for (int h = 0; h < H; h++) {
    double hn = 0.0, hd = 0.0;
    for (size_t i = 0; i < n; i++) {
      double d = (double)a[h * n + i] - (double)ref[h * n + i];
      hn += d * d;
      hd += (double)ref[h * n + i] * (double)ref[h * n + i];
    }
    if (per_head) per_head[h] = (float)(hd > 0.0 ? sqrt(hn / hd) : sqrt(hn));
    num += hn;
    den += hd;
  }
  return (float)(den > 0.0 ? sqrt(num / den) : sqrt(num));
}

static int all_finite(const float *x /* [n] */, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!rssm_isfinite(x[i])) return 0;
  return 1;
}

static int grow_stores(ssm_sim_result *r, int split) {
  if (r->nstore < r->cap) return 0;
  int64_t cap = r->cap ? 2 * r->cap : 1024;
  int64_t *s = realloc(r->store_step, (size_t)cap * sizeof *s);
  if (s) r->store_step = s;
  float *e = realloc(r->ckpt_err, (size_t)cap * sizeof *e);
  if (e) r->ckpt_err = e;
  float *eh = realloc(r->ckpt_err_head, (size_t)cap * (size_t)r->H * sizeof *eh);
  if (eh) r->ckpt_err_head = eh;
  float *el = split ? realloc(r->ckpt_err_lp, (size_t)cap * sizeof *el) : NULL;
  if (el) r->ckpt_err_lp = el;
  if (!s || !e || !eh || (split && !el)) return -1;
  r->cap = cap;
  return 0;
}

/* Record the checkpoint error of st against the reference state after `folded` steps. */
static int record_store(ssm_sim_result *r, const ssm_state *st, const ssm_state *ref,
                        int64_t folded) {
  const ssm_dims *d = &st->dims;
  size_t n = (size_t)d->dv * (size_t)d->dk;
  if (grow_stores(r, st->cfg.split) != 0) return -1;
  int64_t i = r->nstore++;
  r->store_step[i] = folded - 1;
  r->ckpt_err[i] = rel_l2(st->main.deq, ref->main.deq, d->H, n, r->ckpt_err_head + i * d->H);
  if (st->cfg.split) r->ckpt_err_lp[i] = rel_l2(st->lp.deq, ref->main.deq, d->H, n, NULL);
  return 0;
}

static void record_output(ssm_sim_result *r, int64_t t, const float *o /* [H][dv] */,
                          const float *o_ref /* [H][dv] */, int dv) {
  if (!all_finite(o, (size_t)r->H * (size_t)dv)) {
    if (r->first_nonfinite < 0) r->first_nonfinite = t;
  }
  if (r->first_nonfinite >= 0 && t >= r->first_nonfinite) {
    r->out_err[t] = INFINITY;
    for (int h = 0; h < r->H; h++) r->out_err_head[t * r->H + h] = INFINITY;
    return;
  }
  r->out_err[t] = rel_l2(o, o_ref, r->H, (size_t)dv, r->out_err_head + t * r->H);
}

int ssm_sim_run(const ssm_sim_params *p, const ssm_config *cfg, ssm_sim_result *r, char *err,
                size_t errlen) {
  memset(r, 0, sizeof *r);
  const ssm_dims *d = &p->in.dims;
  r->steps = p->steps;
  r->H = d->H;
  r->first_nonfinite = -1;
  r->out_err = malloc((size_t)p->steps * sizeof(float));
  r->out_err_head = malloc((size_t)p->steps * (size_t)d->H * sizeof(float));
  int T = cfg->strategy == SSM_SPEC ? cfg->T : 1;
  size_t hv = (size_t)d->H * (size_t)d->dv;
  float *o = malloc((size_t)T * hv * sizeof(float));     /* [T][H][dv] */
  float *o_ref = malloc(hv * sizeof(float));              /* [H][dv] */
  if (!r->out_err || !r->out_err_head || !o || !o_ref) {
    free(o);
    free(o_ref);
    ssm_sim_result_free(r);
    snprintf(err, errlen, "out of memory for %lld steps", (long long)p->steps);
    return -1;
  }
  ssm_config ref_cfg;
  char perr[256];
  if (ssm_config_parse("conventional state=fp32", &ref_cfg, perr, sizeof perr) != 0) abort();
  ssm_ids ids = {p->in.seed, 0, 0};
  ssm_state st, ref;
  sim_inputs in;
  int rc = -1;
  int built_st = 0, built_ref = 0, built_in = 0;
  if (ssm_state_build(&st, cfg, d, &ids, perr, sizeof perr) != 0) {
    snprintf(err, errlen, "%s: %s", cfg->name, perr);
    goto done;
  }
  built_st = 1;
  if (ssm_state_build(&ref, &ref_cfg, d, &ids, perr, sizeof perr) != 0) {
    snprintf(err, errlen, "reference: %s", perr);
    goto done;
  }
  built_ref = 1;
  /* the reference reads the committed step while a spec round looks T steps ahead of it */
  if (sim_inputs_build(&in, &p->in, T + 1) != 0) {
    snprintf(err, errlen, "out of memory for the input window");
    goto done;
  }
  built_in = 1;

  ssm_inputs x;
  int64_t t = 0;
  uint32_t round = 0;
  while (t < p->steps) {
    if (cfg->strategy == SSM_SPEC) {
      if (sim_inputs_get(&in, t, T, &x) != 0 || ssm_verify(&st, &x, o) != 0) goto internal;
      /* a flush before verification folded exactly the t committed steps */
      if (st.flushed && record_store(r, &st, &ref, t) != 0) goto oom;
      int a = ssm_accept_draw(cfg, p->in.seed, 0, round++);
      if (ssm_commit(&st, a) != 0) goto internal;
      for (int i = 0; i < a && t < p->steps; i++, t++) {
        if (sim_inputs_get(&in, t, 1, &x) != 0 || ssm_step(&ref, &x, o_ref) != 0) goto internal;
        record_output(r, t, o + (size_t)i * hv, o_ref, d->dv);
      }
    } else {
      if (sim_inputs_get(&in, t, 1, &x) != 0 || ssm_step(&st, &x, o) != 0 ||
          ssm_step(&ref, &x, o_ref) != 0)
        goto internal;
      record_output(r, t, o, o_ref, d->dv);
      if (st.flushed && record_store(r, &st, &ref, t + 1) != 0) goto oom;
      t++;
    }
  }
  rc = 0;
  goto done;
internal:
  snprintf(err, errlen, "%s: the state engine refused a step (internal error)", cfg->name);
  goto done;
oom:
  snprintf(err, errlen, "%s: out of memory for the checkpoint errors", cfg->name);
done:
  if (built_in) sim_inputs_free(&in);
  if (built_ref) ssm_state_free(&ref);
  if (built_st) ssm_state_free(&st);
  free(o);
  free(o_ref);
  if (rc != 0) ssm_sim_result_free(r);
  return rc;
}
