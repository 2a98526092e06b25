/* `replayssm summary FILE.h5`: the SPEC section 5 statistics of every configuration as aligned
 * tables (docs/driver.md, "Summary"). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "src/cli/cli_opts.h"
#include "src/cli/commands.h"
#include "src/driver/run_data.h"
#include "src/driver/run_h5.h"
#include "src/driver/summary_stats.h"
#include "src/io/status.h"

static const char *CMD = "summary";

static void print_report(FILE *out, const char *path, const run_data *d, const summary_stats *s) {
  int w = (int)strlen("configuration");
  for (int c = 0; c < d->nconfig; c++)
    if ((int)strlen(d->cfg[c].name) > w) w = (int)strlen(d->cfg[c].name);
  double ref = 0.0;
  for (int64_t i = 0; i < d->K * d->N; i++) ref += d->ref_nll[i];
  ref /= (double)(d->K * d->N);
  fprintf(out, "%s: %lld sequences x %lld steps (shard %s), model %s\n", path, (long long)d->K,
          (long long)d->N, d->shard, d->model);
  fprintf(out, "reference: %s; mean nll %.4f nats/token (PPL %.4g)\n\n", d->reference, ref, exp(ref));
  fprintf(out, "%-*s  %21s %10s %10s %10s %10s %10s  %10s %10s  %7s  %21s %9s\n", w,
          "configuration", "mean KL +- SE", "median", "p90", "p99", "p99.9", "max", "mean dp",
          "RMS dp", "top-1 %", "ln(PPL/PPL_ref) +- SE", "nonfinite");
  for (int c = 0; c < d->nconfig; c++) {
    const summary_stats *x = &s[c];
    char mkl[40], lp[40];
    snprintf(mkl, sizeof mkl, "%.3e +- %.1e", x->kl_mean, x->kl_se);
    snprintf(lp, sizeof lp, "%+.3e +- %.1e", x->lnppl, x->lnppl_se);
    fprintf(out, "%-*s  %21s %10.3e %10.3e %10.3e %10.3e %10.3e  %+10.2e %10.3e  %7.3f  %21s %9lld\n",
            w, d->cfg[c].name, mkl, x->kl_median, x->kl_p90, x->kl_p99, x->kl_p999, x->kl_max,
            x->dp_mean, x->dp_rms, 100.0 * x->top1, lp, (long long)x->nonfinite);
  }
  /* configurations whose logits stopped being finite (an overflowing state): where it began */
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
  if (d->nconfig == 0) return;
  fprintf(out, "\nmean KL by position (bucket [2^b, 2^(b+1)) of the 1-based step):\n%-*s", w,
          "configuration");
  for (int b = 0; b < s[0].nbuckets; b++) {
    char lab[24];
    snprintf(lab, sizeof lab, "%lld+", (long long)(INT64_C(1) << b));
    fprintf(out, " %9s", lab);
  }
  fputc('\n', out);
  for (int c = 0; c < d->nconfig; c++) {
    fprintf(out, "%-*s", w, d->cfg[c].name);
    for (int b = 0; b < s[c].nbuckets; b++) fprintf(out, " %9.2e", s[c].bucket_kl[b]);
    fputc('\n', out);
  }
}

int cmd_summary(int argc, char **argv) {
  const char *operands[1];
  int nop = 0, partial = 0;
  const cli_opt opts[] = {{.name = "--partial", .type = CLI_FLAG, .dest = &partial,
                           .help = "report an incomplete file over the steps written"}};
  const cli_spec spec = {
      .cmd = CMD,
      .usage = "summary [--partial] FILE.h5",
      .about = "For every configuration of a run file: mean KL (nats) with its standard error, median,\n"
               "90/99/99.9th percentiles and maximum of the per-step KL, mean and RMS of dp =\n"
               "p_cfg(target) - p_ref(target), top-1 agreement with the reference, ln(PPL_cfg/PPL_ref)\n"
               "with its standard error, and the mean KL per power-of-two position bucket.\n"
               "Configurations that went non-finite are listed with their first non-finite step.\n"
               "An incomplete file (an interrupted run's .part) is refused unless --partial; the\n"
               "statistics then cover the steps every sequence has written, and say so.",
      .opts = opts,
      .nopts = 1,
      .operands = operands,
      .max_operands = 1,
      .noperands = &nop,
  };
  int done;
  int prc = cli_parse_or_help(&spec, argc, argv, &done);
  if (done) return prc;
  const char *path = nop ? operands[0] : NULL;
  if (!path) {
    cli_error(CMD, "missing FILE.h5 (see replayssm summary --help)");
    return 2;
  }
  run_data d;
  char err[1024];
  int rc = run_h5_read(path, &d, err, sizeof err);
  if (rc != RSSM_OK) {
    cli_error(CMD, "%s", err);
    return rc;
  }
  if (!run_data_complete(&d)) {
    char w[128];
    run_data_written_text(&d, w, sizeof w);
    int64_t n = run_data_min_written(&d);
    if (!partial || n < 1) {
      cli_error(CMD, "%s: incomplete (%s)%s", path, w,
                partial ? "; no step is written for every sequence"
                        : "; finish the run with --resume, or report the written steps with --partial");
      run_data_free(&d);
      return 2;
    }
    printf("partial: %s (%s); the statistics below cover steps 0..%lld of every sequence only\n",
           path, w, (long long)(n - 1));
    run_data_truncate(&d, n);
  }
  summary_stats s[512];
  int nc = d.nconfig < 512 ? d.nconfig : 512;
  for (int c = 0; c < nc; c++)
    if (summary_compute(&d, c, &s[c]) != 0) {
      cli_error(CMD, "%s: out of memory", path);
      run_data_free(&d);
      return 1;
    }
  int all = d.nconfig;
  d.nconfig = nc; /* beyond 512 configurations only the first 512 are reported */
  print_report(stdout, path, &d, s);
  d.nconfig = all;
  run_data_free(&d);
  return 0;
}
