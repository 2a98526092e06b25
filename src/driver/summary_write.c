/* Text, CSV and JSON forms of the summary (summary_write.h). */
#include "src/driver/summary_write.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

const char *const SR_COMPARE_METHOD =
    "95% interval: delta method on ln(ratio) over the units (paired), t quantile with U-1 dof";

#define TEXT_COLUMNS 100

/* a number in one of the styles of the tables: 'e' %.*e, 'E' %+.*e, 'f' %.*f */
static void num(char *buf, size_t n, char style, int prec, double v) {
  if (style == 'E') snprintf(buf, n, "%+.*e", prec, v);
  else if (style == 'f') snprintf(buf, n, "%.*f", prec, v);
  else snprintf(buf, n, "%.*e", prec, v);
}

/* "v +- err": v in style/prec, err in %.1e (or %.*f for 'f' styles; "-" when NaN) */
static const char *pm(char *buf, size_t n, char style, int prec, int eprec, sr_est e) {
  char v[48], s[48];
  num(v, sizeof v, style, prec, e.v);
  if (isnan(e.err)) snprintf(s, sizeof s, "-");
  else num(s, sizeof s, style == 'f' && eprec > 1 ? 'f' : 'e', eprec, e.err);
  snprintf(buf, n, "%.40s +- %.40s", v, s);
  return buf;
}

static sr_est scaled(sr_est e, double f) { return (sr_est){e.v * f, e.err * f}; }

static int name_width(const run_data *d) {
  int w = (int)strlen("configuration");
  for (int c = 0; c < d->nconfig; c++)
    if ((int)strlen(d->cfg[c].name) > w) w = (int)strlen(d->cfg[c].name);
  return w;
}

static void text_nonfinite(FILE *out, const run_data *d, int w) {
  int header = 0;
  for (int c = 0; c < d->nconfig; c++) {
    int64_t first = -1, seq = -1, nseq = 0;
    for (int64_t k = 0; k < d->K; k++) {
      int64_t f = d->cfg[c].first_nonfinite[k];
      if (f < 0) continue;
      nseq++;
      if (first < 0 || f < first) first = f, seq = k;
    }
    if (first < 0) continue;
    if (!header) fprintf(out, "\nnot finite (from the first non-finite step on: kl = nll = inf, "
                         "left out of the statistics above):\n");
    header = 1;
    fprintf(out, "%-*s  first at step %lld of sequence %lld (0-based); %lld of %lld sequences\n", w,
            d->cfg[c].name, (long long)first, (long long)(d->offset + seq), (long long)nseq,
            (long long)d->K);
  }
}

static void text_buckets(FILE *out, const run_data *d, const sr_report *r, int w) {
  int nb = r->cfg[0].nbuckets;
  fprintf(out, "\nmean KL (nats) by position, buckets [2^b, 2^(b+1)) of the 1-based step that fit in "
          "%lld steps:\n", (long long)d->N);
  int per = (TEXT_COLUMNS - w) / 10;
  if (per < 1) per = 1;
  for (int b0 = 0; b0 < nb; b0 += per) {
    int b1 = b0 + per < nb ? b0 + per : nb;
    fprintf(out, "%-*s", w, "configuration");
    for (int b = b0; b < b1; b++) {
      char lab[40];
      snprintf(lab, sizeof lab, "%lld-%lld", (long long)(INT64_C(1) << b),
               (long long)((INT64_C(2) << b) - 1));
      fprintf(out, " %9s", lab);
    }
    fputc('\n', out);
    for (int c = 0; c < d->nconfig; c++) {
      fprintf(out, "%-*s", w, d->cfg[c].name);
      for (int b = b0; b < b1; b++) fprintf(out, " %9.2e", r->cfg[c].bucket_kl[b].v);
      fputc('\n', out);
    }
  }
}

static void text_compare(FILE *out, const run_data *d, const sr_compare *cmp, int ncmp) {
  if (ncmp == 0) return;
  fprintf(out, "\nratio of mean KLs [95%% interval]\n(%s):\n", SR_COMPARE_METHOD);
  for (int i = 0; i < ncmp; i++) {
    const sr_compare *x = &cmp[i];
    fprintf(out, "  %s / %s = %.4g  [%.4g, %.4g]\n", d->cfg[x->a].name, d->cfg[x->b].name,
            x->ratio, x->lo, x->hi);
  }
}

void sr_write_text(FILE *out, const char *path, const run_data *d, const sr_report *r,
                   const sr_compare *cmp, int ncmp) {
  int w = name_width(d);
  char a[96], b[96], c3[96], c4[96];
  fprintf(out, "%s: %lld sequences x %lld steps (shard %s)\nmodel %s\n", path, (long long)d->K,
          (long long)d->N, d->shard, d->model);
  fprintf(out, "reference: %s; mean nll %s nats/token, PPL %s\n", d->reference,
          pm(a, sizeof a, 'f', 4, 1, r->ref_nll), pm(b, sizeof b, 'f', 4, 1, r->ref_ppl));
  fprintf(out, "+- : standard errors over %s\n"
          "units: KL and nll in nats per token, dp = p_cfg(target) - p_ref(target) (probability)\n",
          r->units.text);
  fprintf(out, "\n%-*s %20s %15s %20s %19s\n", w, "configuration", "mean KL (nats) +- SE",
          "top-1 % +- SE", "mean dp +- SE", "RMS dp +- SE");
  for (int c = 0; c < d->nconfig; c++) {
    const sr_config *x = &r->cfg[c];
    fprintf(out, "%-*s %20s %15s %20s %19s\n", w, d->cfg[c].name,
            pm(a, sizeof a, 'e', 3, 1, x->kl), pm(b, sizeof b, 'f', 3, 3, scaled(x->top1, 100.0)),
            pm(c3, sizeof c3, 'E', 2, 1, x->dp_mean), pm(c4, sizeof c4, 'e', 2, 1, x->dp_rms));
  }
  fprintf(out, "\n%-*s %17s %19s %20s %21s\n", w, "configuration", "PPL +- SE",
          "PPL/PPL_ref +- SE", "PPL-PPL_ref +- SE", "ln(PPL/PPL_ref) +- SE");
  for (int c = 0; c < d->nconfig; c++) {
    const sr_config *x = &r->cfg[c];
    fprintf(out, "%-*s %17s %19s %20s %21s\n", w, d->cfg[c].name,
            pm(a, sizeof a, 'f', 4, 1, x->ppl), pm(b, sizeof b, 'f', 6, 1, x->ppl_ratio),
            pm(c3, sizeof c3, 'E', 2, 1, x->ppl_diff),
            pm(c4, sizeof c4, 'E', 2, 1, x->ln_ppl_ratio));
  }
  static const int shown[] = {0, 2, 4, 5, 6, 8, 9, 10}; /* min p1 p10 median p90 p99 p99.9 max */
  fprintf(out, "\nKL percentiles (nats) over the finite steps:\n%-*s", w, "configuration");
  for (size_t i = 0; i < sizeof shown / sizeof shown[0]; i++) fprintf(out, " %9s", SR_PCT_NAME[shown[i]]);
  fputc('\n', out);
  for (int c = 0; c < d->nconfig; c++) {
    fprintf(out, "%-*s", w, d->cfg[c].name);
    for (size_t i = 0; i < sizeof shown / sizeof shown[0]; i++)
      fprintf(out, " %9.2e", r->cfg[c].kl_pct[shown[i]]);
    fputc('\n', out);
  }
  text_nonfinite(out, d, w);
  text_compare(out, d, cmp, ncmp);
  if (d->nconfig > 0 && r->cfg[0].nbuckets > 0) text_buckets(out, d, r, w);
}

/* ------------------------------------------------------------------ CSV -------------------- */

/* a CSV field: quoted when it holds a comma, quote or newline */
static void csv_str(FILE *out, const char *s) {
  if (!strpbrk(s, ",\"\n")) {
    fputs(s, out);
    return;
  }
  fputc('"', out);
  for (; *s; s++) {
    if (*s == '"') fputc('"', out);
    fputc(*s, out);
  }
  fputc('"', out);
}

static void csv_num(FILE *out, double v) {
  if (isnan(v)) fputs(",", out);
  else fprintf(out, ",%.17g", v);
}

static void csv_est(FILE *out, sr_est e) {
  csv_num(out, e.v);
  csv_num(out, e.err);
}

void sr_write_csv(FILE *out, const run_data *d, const sr_report *r, const sr_compare *cmp,
                  int ncmp, int only_compare) {
  if (only_compare) {
    fprintf(out, "a,b,kl_ratio,ci95_low,ci95_high,se_ln_ratio,units,method\n");
    for (int i = 0; i < ncmp; i++) {
      csv_str(out, d->cfg[cmp[i].a].name);
      fputc(',', out);
      csv_str(out, d->cfg[cmp[i].b].name);
      csv_num(out, cmp[i].ratio);
      csv_num(out, cmp[i].lo);
      csv_num(out, cmp[i].hi);
      csv_num(out, cmp[i].se_log);
      fprintf(out, ",%d,", r->units.count);
      csv_str(out, SR_COMPARE_METHOD);
      fputc('\n', out);
    }
    return;
  }
  fprintf(out, "name,spec,steps,nonfinite_steps,units,unit_steps,kl_mean_nats,kl_mean_se");
  for (int i = 0; i < SR_NPCT; i++) fprintf(out, ",kl_%s_nats", SR_PCT_NAME[i]);
  fprintf(out, ",nll_nats,nll_se,ppl,ppl_se,ref_ppl,ref_ppl_se,ppl_ratio,ppl_ratio_se,ppl_diff,"
          "ppl_diff_se,ln_ppl_ratio,ln_ppl_ratio_se,dp_mean,dp_mean_se,dp_rms,dp_rms_se,top1,top1_se\n");
  for (int c = 0; c < d->nconfig; c++) {
    const sr_config *x = &r->cfg[c];
    csv_str(out, d->cfg[c].name);
    fputc(',', out);
    csv_str(out, d->cfg[c].spec);
    fprintf(out, ",%lld,%lld,%d,%lld", (long long)x->n, (long long)x->nonfinite, r->units.count,
            (long long)r->units.steps);
    csv_est(out, x->kl);
    for (int i = 0; i < SR_NPCT; i++) csv_num(out, x->kl_pct[i]);
    csv_est(out, x->nll);
    csv_est(out, x->ppl);
    csv_est(out, r->ref_ppl);
    csv_est(out, x->ppl_ratio);
    csv_est(out, x->ppl_diff);
    csv_est(out, x->ln_ppl_ratio);
    csv_est(out, x->dp_mean);
    csv_est(out, x->dp_rms);
    csv_est(out, x->top1);
    fputc('\n', out);
  }
}

/* ------------------------------------------------------------------ JSON ------------------- */

static cJSON *json_est(sr_est e, const char *unit) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "value", e.v);
  cJSON_AddNumberToObject(o, "error", e.err);
  if (unit) cJSON_AddStringToObject(o, "unit", unit);
  return o;
}

static cJSON *json_config(const run_data *d, const sr_report *r, int c) {
  const sr_config *x = &r->cfg[c];
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "name", d->cfg[c].name);
  cJSON_AddStringToObject(o, "spec", d->cfg[c].spec);
  cJSON_AddNumberToObject(o, "steps", (double)x->n);
  cJSON_AddNumberToObject(o, "nonfinite_steps", (double)x->nonfinite);
  cJSON_AddItemToObject(o, "mean_kl", json_est(x->kl, "nats/token"));
  cJSON *p = cJSON_AddObjectToObject(o, "kl_percentiles");
  cJSON_AddStringToObject(p, "unit", "nats/token");
  for (int i = 0; i < SR_NPCT; i++) cJSON_AddNumberToObject(p, SR_PCT_NAME[i], x->kl_pct[i]);
  cJSON_AddItemToObject(o, "mean_nll", json_est(x->nll, "nats/token"));
  cJSON_AddItemToObject(o, "ppl", json_est(x->ppl, NULL));
  cJSON_AddItemToObject(o, "ppl_ratio", json_est(x->ppl_ratio, NULL));
  cJSON_AddItemToObject(o, "ppl_difference", json_est(x->ppl_diff, NULL));
  cJSON_AddItemToObject(o, "ln_ppl_ratio", json_est(x->ln_ppl_ratio, "nats/token"));
  cJSON_AddItemToObject(o, "dp_mean", json_est(x->dp_mean, "probability"));
  cJSON_AddItemToObject(o, "dp_rms", json_est(x->dp_rms, "probability"));
  cJSON_AddItemToObject(o, "top1_agreement", json_est(x->top1, "fraction"));
  cJSON *bk = cJSON_AddArrayToObject(o, "kl_by_position");
  for (int b = 0; b < x->nbuckets; b++) {
    cJSON *e = json_est(x->bucket_kl[b], "nats/token");
    cJSON_AddNumberToObject(e, "first_step", (double)(INT64_C(1) << b));
    cJSON_AddNumberToObject(e, "last_step", (double)((INT64_C(2) << b) - 1));
    cJSON_AddItemToArray(bk, e);
  }
  cJSON *nf = cJSON_AddArrayToObject(o, "first_nonfinite");
  for (int64_t k = 0; k < d->K; k++)
    cJSON_AddItemToArray(nf, cJSON_CreateNumber((double)d->cfg[c].first_nonfinite[k]));
  return o;
}

int sr_write_json(FILE *out, const char *path, const run_data *d, const sr_report *r,
                  const sr_compare *cmp, int ncmp) {
  cJSON *root = cJSON_CreateObject();
  if (!root) return -1;
  cJSON_AddStringToObject(root, "file", path);
  cJSON_AddStringToObject(root, "model", d->model);
  cJSON_AddNumberToObject(root, "sequences", (double)d->K);
  cJSON_AddNumberToObject(root, "steps", (double)d->N);
  cJSON_AddStringToObject(root, "shard", d->shard);
  cJSON *u = cJSON_AddObjectToObject(root, "error_units");
  cJSON_AddStringToObject(u, "kind", r->units.per_sequence == 1 ? "sequences" : "blocks");
  cJSON_AddNumberToObject(u, "count", r->units.count);
  cJSON_AddNumberToObject(u, "steps_per_unit", (double)r->units.steps);
  cJSON_AddStringToObject(u, "description", r->units.text);
  cJSON_AddStringToObject(u, "error", "standard error of the mean over the units (ratio estimator)");
  cJSON *ref = cJSON_AddObjectToObject(root, "reference");
  cJSON_AddStringToObject(ref, "spec", d->reference);
  cJSON_AddItemToObject(ref, "mean_nll", json_est(r->ref_nll, "nats/token"));
  cJSON_AddItemToObject(ref, "ppl", json_est(r->ref_ppl, NULL));
  cJSON *cf = cJSON_AddArrayToObject(root, "configurations");
  for (int c = 0; c < d->nconfig; c++) cJSON_AddItemToArray(cf, json_config(d, r, c));
  cJSON *cm = cJSON_AddArrayToObject(root, "comparisons");
  for (int i = 0; i < ncmp; i++) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "a", d->cfg[cmp[i].a].name);
    cJSON_AddStringToObject(o, "b", d->cfg[cmp[i].b].name);
    cJSON_AddNumberToObject(o, "kl_ratio", cmp[i].ratio);
    cJSON_AddNumberToObject(o, "ci95_low", cmp[i].lo);
    cJSON_AddNumberToObject(o, "ci95_high", cmp[i].hi);
    cJSON_AddNumberToObject(o, "se_ln_ratio", cmp[i].se_log);
    cJSON_AddStringToObject(o, "method", SR_COMPARE_METHOD);
    cJSON_AddItemToArray(cm, o);
  }
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  if (!text) return -1;
  fprintf(out, "%s\n", text);
  cJSON_free(text);
  return 0;
}
