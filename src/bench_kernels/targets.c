/* The targets of issue 17 from the benchmark's measurements (targets.h). */
#include "src/bench_kernels/targets.h"

#include <string.h>

static int same(const char *a, const char *b) { return a && b && strcmp(a, b) == 0; }

/* The first measurement of shape sh matching (part, config or NULL, variant or NULL, B, T, a;
 * -1 = any). */
static const bk_meas *find(const bk_meas *m, int n, const char *sh, const char *part,
                           const char *config, const char *variant, int B, int T, int a) {
  for (int i = 0; i < n; i++) {
    const bk_meas *x = &m[i];
    if (!same(x->shape, sh) || !same(x->part, part)) continue;
    if (config && !same(x->config, config)) continue;
    if (variant && !same(x->variant, variant)) continue;
    if ((B >= 0 && x->B != B) || (T >= 0 && x->T != T) || (a >= 0 && x->a != a)) continue;
    return x;
  }
  return NULL;
}

static int failed(const bk_meas *x) { return x && same(x->check, "FAIL"); }
static int measured(const bk_meas *x) { return x && x->us > 0.0; }

/* Sets value and verdict from a ratio num/den of two measurements' times (either may be
 * missing or failed). */
static void ratio(bk_target *t, const bk_meas *num, const bk_meas *den) {
  if (failed(num) || failed(den)) {
    t->verdict = BK_CHECK_FAILED;
    return;
  }
  if (!measured(num) || !measured(den)) {
    t->verdict = BK_UNMEASURED;
    return;
  }
  t->value = num->us / den->us;
  t->verdict = (t->at_most ? t->value <= t->goal : t->value >= t->goal) ? BK_MET : BK_MISSED;
}

typedef struct {
  const char *target, *what, *unit;
  double goal;
  int at_most;
} spec_row;

static const spec_row rows[BK_N_TARGETS] = {
    {"conv_pct", "conventional fp32 step, B=256: % of copy bandwidth", "%", 85.0, 0},
    {"replay_256", "conventional / replay L=16 per token, B=256", "x", 1.6, 0},
    {"replay_1", "conventional / replay L=16 per token, B=1", "x", 0.9, 0},
    {"lp_nvfp4", "non-flush step, fp32 read / nvfp4 read, B=256", "x", 3.0, 0},
    {"lp_fp8", "non-flush step, fp32 read / fp8 read, B=256", "x", 2.0, 0},
    {"lp_bf16", "non-flush step, fp32 read / bf16 read, B=256", "x", 1.5, 0},
    {"verify_t8", "output-only verify T=8 a=1 / conventional step, B=256", "x", 1.3, 1},
};

static void eval_one(int k, const bk_meas *m, int n, const char *sh, bk_target *t) {
  static const char *const conv = "conventional state=fp32", *const rep = "replay L=16 ckpt=fp32";
  static const char *const lp_fmt[3] = {"nvfp4", "fp8", "bf16"};
  t->target = rows[k].target;
  t->what = rows[k].what;
  t->unit = rows[k].unit;
  t->goal = rows[k].goal;
  t->at_most = rows[k].at_most;
  t->shape = sh;
  t->value = -1.0;
  t->verdict = BK_UNMEASURED;
  switch (k) {
    case 0: {
      const bk_meas *c = find(m, n, sh, "std", conv, NULL, 256, -1, -1);
      if (failed(c)) t->verdict = BK_CHECK_FAILED;
      else if (measured(c)) {
        t->value = c->pct_copy;
        t->verdict = t->value >= t->goal ? BK_MET : BK_MISSED;
      }
      break;
    }
    case 1:
    case 2: {
      const int B = k == 1 ? 256 : 1;
      ratio(t, find(m, n, sh, "std", conv, NULL, B, -1, -1), find(m, n, sh, "std", rep, NULL, B, -1, -1));
      break;
    }
    case 3:
    case 4:
    case 5:
      ratio(t, find(m, n, sh, "lp", NULL, "fp32", 256, -1, -1),
            find(m, n, sh, "lp", NULL, lp_fmt[k - 3], 256, -1, -1));
      break;
    default:
      ratio(t, find(m, n, sh, "spec", NULL, "output-only", 256, 8, 1),
            find(m, n, sh, "std", conv, NULL, 256, -1, -1));
      break;
  }
}

int bk_targets_eval(const bk_meas *m, int n, const char *const *shapes, int nshapes,
                    bk_target *out) {
  int r = 0;
  for (int k = 0; k < BK_N_TARGETS; k++)
    for (int s = 0; s < nshapes; s++) eval_one(k, m, n, shapes[s], &out[r++]);
  return r;
}

const char *bk_verdict_name(bk_verdict_kind v) {
  switch (v) {
    case BK_MET: return "met";
    case BK_MISSED: return "missed";
    case BK_CHECK_FAILED: return "check FAIL";
    default: return "not measured";
  }
}

void bk_targets_print(FILE *f, const bk_target *t, int n) {
  int cnt[4] = {0, 0, 0, 0};
  fprintf(f, "%-10s %-22s %9s %9s  %-12s  %s\n", "target", "shape", "measured", "goal", "verdict",
          "what");
  for (int i = 0; i < n; i++) {
    char val[24], goal[24];
    if (t[i].verdict == BK_MET || t[i].verdict == BK_MISSED)
      snprintf(val, sizeof val, t[i].unit[0] == '%' ? "%.1f %%" : "%.2fx", t[i].value);
    else snprintf(val, sizeof val, "-");
    snprintf(goal, sizeof goal, t[i].unit[0] == '%' ? "%s%.0f %%" : "%s%.1fx",
             t[i].at_most ? "<=" : ">=", t[i].goal);
    fprintf(f, "%-10s %-22s %9s %9s  %-12s  %s\n", t[i].target, t[i].shape, val, goal,
            bk_verdict_name(t[i].verdict), t[i].what);
    cnt[t[i].verdict]++;
  }
  fprintf(f, "targets: %d met, %d missed, %d not measured, %d check failed (of %d)\n", cnt[BK_MET],
          cnt[BK_MISSED], cnt[BK_UNMEASURED], cnt[BK_CHECK_FAILED], n);
}

int bk_targets_write_csv(FILE *f, const bk_target *t, int n) {
  if (fprintf(f, "target,shape,value,unit,goal,sense,verdict\n") < 0) return -1;
  for (int i = 0; i < n; i++)
    if (fprintf(f, "%s,%s,%.6g,%s,%.6g,%s,%s\n", t[i].target, t[i].shape, t[i].value,
                t[i].unit[0] == '%' ? "pct" : "x", t[i].goal, t[i].at_most ? "<=" : ">=",
                bk_verdict_name(t[i].verdict)) < 0)
      return -1;
  return 0;
}
