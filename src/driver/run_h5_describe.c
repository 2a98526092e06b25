/* What a run file says about itself for its readers (run_h5.h): units, dimension names and a
 * description on every dataset, and when and where it was written. Attributes only: the
 * datasets' bytes are what run_h5.c wrote. */
#include <hdf5.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "src/driver/experiment.h"
#include "src/driver/run_h5.h"
#include "src/io/h5_attr.h"

typedef struct {
  const char *name, *units, *description;
  int rank;
} ds_doc;

static const char *const SEQ_POS[] = {"sequence", "position"};
static const char *const SEQ_STEP[] = {"sequence", "step"};
static const char *const SEQ[] = {"sequence"};

static const ds_doc ROOT_DOCS[] = {
    {"tokens", "token id", "the window of each sequence: step t is fed tokens[:, t] and predicts "
     "tokens[:, t+1]", 2},
    {"window_start", "token index", "position of each window's first token in the token source", 1},
    {"steps_written", "steps", "steps of each sequence written so far (all N: the file is "
     "complete)", 1},
    {"reference/nll", "nats/token", "-ln p_ref(target) of the fp32 reference at each step", 2},
};

static const ds_doc CFG_DOCS[] = {
    {"kl", "nats/token", "KL(p_ref || p_cfg) at each step; inf from the first non-finite step", 2},
    {"nll", "nats/token", "-ln p_cfg(target) at each step", 2},
    {"dp", "probability", "p_cfg(target) - p_ref(target) at each step", 2},
    {"top1", "1 = agrees", "1 when the configuration's argmax is the reference's", 2},
    {"first_nonfinite", "step", "first step whose logits were not finite (0-based); -1: none", 1},
};

static int describe(hid_t loc, const ds_doc *doc) {
  hid_t ds = H5Dopen2(loc, doc->name, H5P_DEFAULT);
  if (ds < 0) return -1;
  const char *const *dims = doc->rank == 1 ? SEQ : strcmp(doc->name, "tokens") == 0 ? SEQ_POS : SEQ_STEP;
  int rc = h5_describe(ds, doc->units, doc->rank, dims, doc->description);
  H5Dclose(ds);
  return rc;
}

int run_h5_describe(hid_t file, const run_data *d) {
  int rc = 0;
  for (size_t i = 0; i < sizeof ROOT_DOCS / sizeof ROOT_DOCS[0]; i++) rc |= describe(file, &ROOT_DOCS[i]);
  for (int c = 0; c < d->nconfig; c++) {
    char path[SSM_NAME_MAX + 16];
    char gname[SSM_NAME_MAX];
    experiment_group_name(d->cfg[c].name, gname);
    snprintf(path, sizeof path, "configs/%s", gname);
    hid_t g = H5Gopen2(file, path, H5P_DEFAULT);
    if (g < 0) return -1;
    for (size_t i = 0; i < sizeof CFG_DOCS / sizeof CFG_DOCS[0]; i++) rc |= describe(g, &CFG_DOCS[i]);
    H5Gclose(g);
  }
  char when[64], host[256];
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
  if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "unknown");
  host[sizeof host - 1] = '\0';
  rc |= h5_attr_str(file, "created", when);
  rc |= h5_attr_str(file, "host", host);
  return rc ? -1 : 0;
}
