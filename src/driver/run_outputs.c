/* Output checks and the --resume decision (run_outputs.h). */
#include "src/driver/run_outputs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/driver/run_h5.h"
#include "src/driver/run_identity.h"
#include "src/io/status.h"

int run_same_file(const char *a, const char *b) {
  struct stat x, y;
  return stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

int run_outputs_check(const experiment *e, const char *out, char *err, size_t errlen) {
  struct stat sb;
  if (out[0] == '\0') {
    snprintf(err, errlen, "--out: empty path (expected FILE.h5)");
    return RSSM_ERR_INPUT;
  }
  if (stat(out, &sb) == 0 && S_ISDIR(sb.st_mode)) {
    snprintf(err, errlen, "%s: is a directory (expected --out FILE.h5)", out);
    return RSSM_ERR_INPUT;
  }
  char dir[4200];
  const char *slash = strrchr(out, '/');
  if (slash)
    snprintf(dir, sizeof dir, "%.*s", slash == out ? 1 : (int)(slash - out), out);
  else
    snprintf(dir, sizeof dir, ".");
  if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
    snprintf(err, errlen, "%s: the output's directory %s does not exist", out, dir);
    return RSSM_ERR_INPUT;
  }
  if (access(dir, W_OK | X_OK) != 0) {
    snprintf(err, errlen, "%s: the output's directory %s is not writable (%s)", out, dir,
             strerror(errno));
    return RSSM_ERR_INPUT;
  }
  const char *suffix[] = {"", ".part", ".ckpt"};
  for (int i = 0; i < 3; i++) {
    char p[4300];
    snprintf(p, sizeof p, "%s%s", out, suffix[i]);
    const char *in = run_same_file(p, e->tokens) ? e->tokens
                     : run_same_file(p, e->model) ? e->model : NULL;
    if (in) {
      snprintf(err, errlen, "%s: is an input of this run (%s); choose another --out", p, in);
      return RSSM_ERR_INPUT;
    }
  }
  return RSSM_OK;
}

/* Whether out is a complete run of r's experiment: RSSM_OK when it is, else a refusal. */
static int out_matches(const runner *r, const char *out, char *err, size_t errlen) {
  run_data d;
  char m[1024];
  int rc = run_h5_read(out, &d, m, sizeof m);
  if (rc != RSSM_OK) {
    snprintf(err, errlen, "--resume: %s (nothing to resume from; use --force to replace it)", m);
    return rc;
  }
  char what[4300], diff[1400];
  snprintf(what, sizeof what, "%s", out);
  if (!d.identity) {
    snprintf(err, errlen, "--resume: %s was written before run files recorded their identity; "
             "cannot tell whether it is this experiment (use --force to rerun it)", out);
    rc = RSSM_ERR_INPUT;
  } else if (run_identity_diff(d.identity, r->d.identity, what, diff, sizeof diff) > 0) {
    snprintf(err, errlen, "--resume: %s is another experiment: %s (use --force to replace it)", out,
             diff);
    rc = RSSM_ERR_INPUT;
  } else if (!run_data_complete(&d)) {
    snprintf(err, errlen, "--resume: %s is incomplete and there is no checkpoint (use --force to "
             "rerun it)", out);
    rc = RSSM_ERR_INPUT;
  }
  run_data_free(&d);
  return rc;
}

int run_resume_plan(runner *r, const char *out, const char *ckpt, int *plan, char *err,
                    size_t errlen) {
  int have_out = access(out, F_OK) == 0, have_ckpt = access(ckpt, F_OK) == 0;
  *plan = RESUME_FRESH;
  char m[2048];
  if (have_out && out_matches(r, out, m, sizeof m) == RSSM_OK) {
    /* finished; a checkpoint of this experiment is stale (a crash between the final rename and
     * its removal), one of another experiment is left alone */
    if (have_ckpt && run_ckpt_load(r, ckpt, m, sizeof m) == RSSM_OK) unlink(ckpt);
    *plan = RESUME_DONE;
    return RSSM_OK;
  }
  if (have_ckpt) {
    /* an interrupted run (also an interrupted --force rerun over an older out) */
    int rc = run_ckpt_load(r, ckpt, err, errlen);
    if (rc == RSSM_OK) *plan = RESUME_CKPT;
    return rc;
  }
  if (have_out) {
    snprintf(err, errlen, "%s", m);
    return RSSM_ERR_INPUT;
  }
  return RSSM_OK;
}
