/* Run files (run_h5.h) with the HDF5 C API. Only one thread touches HDF5 (the library build is
 * not thread-safe). */
#include "src/driver/run_h5.h"

#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/driver/experiment.h"
#include "src/driver/run_identity.h"
#include "src/io/h5_attr.h"
#include "src/io/status.h"
#include "src/io/atomic_file.h"

struct run_h5 {
  char path[4200];     /* the name the file is published under */
  char tmp[4300];      /* path.new until the first write_columns has flushed the layout */
  int published;
  hid_t file;
  hid_t ref_nll;
  hid_t steps_written; /* [K]: the file's state, written after each block's columns */
  int nconfig;
  hid_t *ds;   /* [nconfig][5]: kl, nll, dp, top1, first_nonfinite */
};


/* A [K, N] dataset chunked along N (or [K] when N == 0), created empty. */
static hid_t make_ds(hid_t loc, const char *name, hid_t type, int64_t K, int64_t N) {
  hsize_t dims[2] = {(hsize_t)K, (hsize_t)N};
  int rank = N ? 2 : 1;
  hid_t space = H5Screate_simple(rank, dims, NULL);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  hsize_t chunk[2] = {1, (hsize_t)(N < 1024 ? N : 1024)};
  if (rank == 1) chunk[0] = (hsize_t)K;
  H5Pset_chunk(dcpl, rank, chunk);
  /* every chunk is allocated (and its B-tree written) when the file is created: later blocks
   * write raw data into place and change no metadata, so a kill between or during them leaves
   * a file that opens (docs/reliability.md) */
  H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY);
  if (type == H5T_NATIVE_FLOAT) {
    float fill = 0.0f;
    H5Pset_fill_value(dcpl, type, &fill);
  }
  hid_t ds = H5Dcreate2(loc, name, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  H5Pclose(dcpl);
  H5Sclose(space);
  return ds;
}

static int write_whole(hid_t loc, const char *name, hid_t type, int64_t K, int64_t N,
                       const void *data) {
  hsize_t dims[2] = {(hsize_t)K, (hsize_t)N};
  hid_t space = H5Screate_simple(N ? 2 : 1, dims, NULL);
  hid_t ds = H5Dcreate2(loc, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  herr_t rc = ds >= 0 ? H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) : -1;
  if (ds >= 0) H5Dclose(ds);
  H5Sclose(space);
  return rc < 0 ? -1 : 0;
}

/* columns [c0, c1) of a [K, N] array */
static int write_cols(hid_t ds, hid_t type, size_t esize, const void *data, int64_t K, int64_t N,
                      int64_t c0, int64_t c1) {
  if (c1 <= c0) return 0;
  hsize_t start[2] = {0, (hsize_t)c0}, count[2] = {(hsize_t)K, (hsize_t)(c1 - c0)};
  hid_t fspace = H5Dget_space(ds);
  H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, NULL, count, NULL);
  hsize_t mdims[2] = {(hsize_t)K, (hsize_t)N};
  hid_t mspace = H5Screate_simple(2, mdims, NULL);
  H5Sselect_hyperslab(mspace, H5S_SELECT_SET, start, NULL, count, NULL);
  herr_t rc = H5Dwrite(ds, type, mspace, fspace, H5P_DEFAULT, data);
  (void)esize;
  H5Sclose(mspace);
  H5Sclose(fspace);
  return rc < 0 ? -1 : 0;
}


static void run_h5_free_handles(run_h5 *h) {
  if (!h) return;
  if (h->ds)
    for (int i = 0; i < 5 * h->nconfig; i++)
      if (h->ds[i] >= 0) H5Dclose(h->ds[i]);
  if (h->ref_nll >= 0) H5Dclose(h->ref_nll);
  if (h->steps_written >= 0) H5Dclose(h->steps_written);
  free(h->ds);
}

run_h5 *run_h5_create(const char *path, const run_data *d, char *err, size_t errlen) {
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* our own one-line errors instead of HDF5's stack */
  run_h5 *h = calloc(1, sizeof *h);
  if (!h) {
    snprintf(err, errlen, "%s: out of memory", path);
    return NULL;
  }
  h->ref_nll = -1;
  h->steps_written = -1;
  h->nconfig = d->nconfig;
  h->ds = malloc(sizeof(hid_t) * 5 * (size_t)(d->nconfig + 1));
  if (!h->ds) {
    free(h);
    snprintf(err, errlen, "%s: out of memory", path);
    return NULL;
  }
  for (int i = 0; i < 5 * d->nconfig; i++) h->ds[i] = -1;
  /* The file is built under path.new and renamed to path once its layout (and the first columns)
   * are flushed: path never names a half-created file, even after a SIGKILL. */
  snprintf(h->path, sizeof h->path, "%s", path);
  snprintf(h->tmp, sizeof h->tmp, "%s.new", path);
  /* groups remember creation order, so /configs lists the configurations as the experiment did */
  hid_t fcpl = H5Pcreate(H5P_FILE_CREATE);
  H5Pset_link_creation_order(fcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
  h->file = H5Fcreate(h->tmp, H5F_ACC_TRUNC, fcpl, H5P_DEFAULT);
  H5Pclose(fcpl);
  if (h->file < 0) {
    free(h->ds);
    free(h);
    snprintf(err, errlen, "%s: cannot create the output file (is the directory writable?)", path);
    return NULL;
  }
  int rc = 0;
  hid_t f = h->file;
  rc |= h5_attr_str(f, "tool", "replayssm run");
  rc |= h5_attr_str(f, "version", d->version);
  rc |= h5_attr_str(f, "commit", d->commit);
  rc |= h5_attr_str(f, "model", d->model);
  rc |= h5_attr_str(f, "model_checksum", d->model_checksum);
  if (d->vocab > 0) { /* a merge of files older than these attributes has none to write */
    rc |= h5_attr_num(f, "vocab", H5T_NATIVE_INT64, &d->vocab);
    rc |= h5_attr_num(f, "vocab_rows", H5T_NATIVE_INT64, &d->vocab_rows);
  }
  rc |= h5_attr_str(f, "tokens", d->tokens_path);
  rc |= h5_attr_str(f, "tokens_checksum", d->tokens_checksum);
  rc |= h5_attr_str(f, "tokenizer", d->tokenizer);
  rc |= h5_attr_num(f, "seed", H5T_NATIVE_UINT64, &d->seed);
  rc |= h5_attr_num(f, "steps", H5T_NATIVE_INT64, &d->N);
  rc |= h5_attr_num(f, "sequences", H5T_NATIVE_INT64, &d->sequences);
  rc |= h5_attr_num(f, "sequence_offset", H5T_NATIVE_INT64, &d->offset);
  rc |= h5_attr_str(f, "shard", d->shard);
  rc |= h5_attr_str(f, "reference", d->reference);
  rc |= h5_attr_str(f, "experiment", d->experiment ? d->experiment : "");
  if (d->identity) {
    char digest[65];
    run_identity_digest(d->identity, digest);
    rc |= h5_attr_str(f, "identity", digest);
    rc |= h5_attr_str(f, "identity_fields", d->identity);
  }
  h->steps_written = make_ds(f, "steps_written", H5T_NATIVE_INT64, d->K, 0);
  if (h->steps_written < 0) rc = -1;
  rc |= write_whole(f, "tokens", H5T_NATIVE_INT32, d->K, d->N + 1, d->tokens);
  rc |= write_whole(f, "window_start", H5T_NATIVE_INT64, d->K, 0, d->window_start);
  hid_t gcpl = H5Pcreate(H5P_GROUP_CREATE);
  H5Pset_link_creation_order(gcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
  hid_t ref = H5Gcreate2(f, "reference", H5P_DEFAULT, gcpl, H5P_DEFAULT);
  hid_t cfgs = H5Gcreate2(f, "configs", H5P_DEFAULT, gcpl, H5P_DEFAULT);
  if (ref < 0 || cfgs < 0) rc = -1;
  if (ref >= 0) {
    rc |= h5_attr_str(ref, "spec", d->reference);
    rc |= h5_attr_str(ref, "name", "reference");
    h->ref_nll = make_ds(ref, "nll", H5T_NATIVE_FLOAT, d->K, d->N);
    if (h->ref_nll < 0) rc = -1;
    H5Gclose(ref);
  }
  for (int c = 0; rc == 0 && c < d->nconfig; c++) {
    char gname[SSM_NAME_MAX];
    experiment_group_name(d->cfg[c].name, gname);
    hid_t g = H5Gcreate2(cfgs, gname, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (g < 0) {
      rc = -1;
      break;
    }
    rc |= h5_attr_str(g, "spec", d->cfg[c].spec);
    rc |= h5_attr_str(g, "name", d->cfg[c].name);
    hid_t *ds = h->ds + 5 * c;
    ds[0] = make_ds(g, "kl", H5T_NATIVE_FLOAT, d->K, d->N);
    ds[1] = make_ds(g, "nll", H5T_NATIVE_FLOAT, d->K, d->N);
    ds[2] = make_ds(g, "dp", H5T_NATIVE_FLOAT, d->K, d->N);
    ds[3] = make_ds(g, "top1", H5T_NATIVE_UINT8, d->K, d->N);
    ds[4] = make_ds(g, "first_nonfinite", H5T_NATIVE_INT64, d->K, 0);
    for (int i = 0; i < 5; i++)
      if (ds[i] < 0) rc = -1;
    H5Gclose(g);
  }
  H5Pclose(gcpl);
  if (cfgs >= 0) H5Gclose(cfgs);
  if (rc == 0) rc = run_h5_describe(f, d);
  if (rc != 0) {
    run_h5_free_handles(h);
    H5Fclose(h->file);
    unlink(h->tmp);
    free(h);
    snprintf(err, errlen, "%s: creating the HDF5 layout failed (disk full or file size limit?)",
             path);
    return NULL;
  }
  return h;
}

int run_h5_write_columns(run_h5 *h, const run_data *d, int64_t c0, int64_t c1, char *err,
                         size_t errlen) {
  int rc = write_cols(h->ref_nll, H5T_NATIVE_FLOAT, 4, d->ref_nll, d->K, d->N, c0, c1);
  for (int c = 0; c < d->nconfig; c++) {
    const run_cfg_data *x = &d->cfg[c];
    hid_t *ds = h->ds + 5 * c;
    rc |= write_cols(ds[0], H5T_NATIVE_FLOAT, 4, x->kl, d->K, d->N, c0, c1);
    rc |= write_cols(ds[1], H5T_NATIVE_FLOAT, 4, x->nll, d->K, d->N, c0, c1);
    rc |= write_cols(ds[2], H5T_NATIVE_FLOAT, 4, x->dp, d->K, d->N, c0, c1);
    rc |= write_cols(ds[3], H5T_NATIVE_UINT8, 1, x->top1, d->K, d->N, c0, c1);
    if (H5Dwrite(ds[4], H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, x->first_nonfinite) < 0)
      rc = -1;
  }
  /* after the columns it counts: a kill in between leaves a count that understates */
  if (H5Dwrite(h->steps_written, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT,
               d->steps_written) < 0)
    rc = -1;
  if (rc == 0 && H5Fflush(h->file, H5F_SCOPE_GLOBAL) < 0) rc = -1;
  if (rc != 0) {
    snprintf(err, errlen, "%s: writing steps %lld..%lld failed (disk full or file size limit?)",
             h->published ? h->path : h->tmp, (long long)c0, (long long)c1);
    return RSSM_ERR_IO;
  }
  if (!h->published) {
    /* HDF5 keeps writing through its open descriptor after the rename */
    if (atomic_commit(h->tmp, h->path, err, errlen) != RSSM_OK) return RSSM_ERR_IO;
    h->published = 1;
  }
  return RSSM_OK;
}

int run_h5_set_wall_seconds(run_h5 *h, double seconds) {
  if (H5Aexists(h->file, "wall_seconds") > 0 && H5Adelete(h->file, "wall_seconds") < 0) return -1;
  return h5_attr_num(h->file, "wall_seconds", H5T_NATIVE_DOUBLE, &seconds);
}

int run_h5_close(run_h5 *h) {
  if (!h) return 0;
  run_h5_free_handles(h);
  int rc = H5Fclose(h->file) < 0 ? -1 : 0;
  if (!h->published) unlink(h->tmp); /* never complete: nothing to keep */
  free(h);
  return rc;
}

int run_h5_write_all(const char *path, const run_data *d, char *err, size_t errlen) {
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
  run_h5 *h = run_h5_create(tmp, d, err, errlen);
  if (!h) return RSSM_ERR_IO;
  int rc = run_h5_write_columns(h, d, 0, d->N, err, errlen);
  if (run_h5_close(h) != 0 && rc == RSSM_OK) {
    snprintf(err, errlen, "%s: closing the HDF5 file failed", tmp);
    rc = RSSM_ERR_IO;
  }
  if (rc == RSSM_OK) rc = atomic_commit(tmp, path, err, errlen);
  if (rc != RSSM_OK) unlink(tmp);
  return rc;
}

/* ------------------------------------------------------------------ reading --------------- */

static int read_attr_str(hid_t obj, const char *name, char *out, size_t outlen, char **dyn) {
  char *v = NULL;
  if (h5_attr_read_str(obj, name, &v) != 0) return -1; /* fixed (older files) or UTF-8 vlen */
  if (dyn) {
    *dyn = v;
  } else {
    snprintf(out, outlen, "%s", v);
    free(v);
  }
  return 0;
}

static int read_attr_num(hid_t obj, const char *name, hid_t mem, void *out) {
  hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
  if (a < 0) return -1;
  int rc = H5Aread(a, mem, out) < 0 ? -1 : 0;
  H5Aclose(a);
  return rc;
}

/* Reads a dataset that must have exactly the given shape (d1 = 0: rank 1). */
static int read_ds(hid_t loc, const char *name, hid_t mem, int64_t d0, int64_t d1, void *out) {
  hid_t ds = H5Dopen2(loc, name, H5P_DEFAULT);
  if (ds < 0) return -1;
  hid_t space = H5Dget_space(ds);
  int rank = H5Sget_simple_extent_ndims(space);
  hsize_t dims[2] = {0, 0};
  int rc = -1;
  if (rank == (d1 ? 2 : 1) && H5Sget_simple_extent_dims(space, dims, NULL) == rank &&
      dims[0] == (hsize_t)d0 && (!d1 || dims[1] == (hsize_t)d1))
    rc = H5Dread(ds, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, out) < 0 ? -1 : 0;
  H5Sclose(space);
  H5Dclose(ds);
  return rc;
}

typedef struct {
  int n, cap;
  char (*names)[SSM_NAME_MAX];
} name_list;

static herr_t collect(hid_t g, const char *name, const H5L_info_t *info, void *op) {
  (void)g;
  (void)info;
  name_list *l = op;
  if (l->n == l->cap) {
    int nc = l->cap ? 2 * l->cap : 16;
    void *p = realloc(l->names, (size_t)nc * sizeof *l->names);
    if (!p) return -1;
    l->names = p;
    l->cap = nc;
  }
  snprintf(l->names[l->n++], SSM_NAME_MAX, "%s", name);
  return 0;
}

/* The file's state: steps_written and the identity; a file written before file states existed
 * has neither and counts as complete. Returns NULL or what is malformed. */
static const char *read_state(hid_t f, run_data *d) {
  if (H5Lexists(f, "steps_written", H5P_DEFAULT) <= 0) {
    for (int64_t k = 0; k < d->K; k++) d->steps_written[k] = d->N;
    return NULL;
  }
  if (read_ds(f, "steps_written", H5T_NATIVE_INT64, d->K, 0, d->steps_written))
    return "dataset /steps_written [K]";
  for (int64_t k = 0; k < d->K; k++)
    if (d->steps_written[k] < 0 || d->steps_written[k] > d->N)
      return "dataset /steps_written (expected values in [0, steps])";
  if (H5Aexists(f, "identity_fields") > 0 && read_attr_str(f, "identity_fields", NULL, 0, &d->identity))
    return "root attribute 'identity_fields'";
  return NULL;
}

int run_h5_read(const char *path, run_data *d, char *err, size_t errlen) {
  memset(d, 0, sizeof *d);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  if (access(path, R_OK) != 0) {
    snprintf(err, errlen, "%s: cannot open (no such file or not readable)", path);
    return RSSM_ERR_INPUT;
  }
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) {
    snprintf(err, errlen, "%s: not an HDF5 file (expected the output of replayssm run)", path);
    return RSSM_ERR_INPUT;
  }
  const char *what = NULL;
  int64_t N = 0, seqs = 0, off = 0;
  if (read_attr_num(f, "steps", H5T_NATIVE_INT64, &N) != 0) what = "root attribute 'steps'";
  else if (read_attr_num(f, "sequences", H5T_NATIVE_INT64, &seqs) != 0) what = "root attribute 'sequences'";
  else if (read_attr_num(f, "sequence_offset", H5T_NATIVE_INT64, &off) != 0) what = "root attribute 'sequence_offset'";
  int64_t K = 0;
  hid_t tds = what ? -1 : H5Dopen2(f, "tokens", H5P_DEFAULT);
  if (!what && tds < 0) what = "dataset /tokens";
  if (!what) {
    hid_t sp = H5Dget_space(tds);
    hsize_t dims[2];
    if (H5Sget_simple_extent_ndims(sp) != 2 || H5Sget_simple_extent_dims(sp, dims, NULL) != 2 ||
        dims[1] != (hsize_t)N + 1)
      what = "dataset /tokens (expected int32 [K, steps+1])";
    else
      K = (int64_t)dims[0];
    H5Sclose(sp);
  }
  if (tds >= 0) H5Dclose(tds);
  name_list names = {0, 0, NULL};
  hid_t cfgs = what ? -1 : H5Gopen2(f, "configs", H5P_DEFAULT);
  if (!what && cfgs < 0) what = "group /configs";
  if (!what && H5Literate(cfgs, H5_INDEX_CRT_ORDER, H5_ITER_INC, NULL, collect, &names) < 0 &&
      H5Literate(cfgs, H5_INDEX_NAME, H5_ITER_INC, NULL, collect, &names) < 0)
    what = "group /configs";
  if (!what && run_data_alloc(d, K, N, names.n) != 0) {
    free(names.names);
    if (cfgs >= 0) H5Gclose(cfgs);
    H5Fclose(f);
    snprintf(err, errlen, "%s: out of memory for %lld x %lld steps", path, (long long)K, (long long)N);
    return RSSM_ERR_IO;
  }
  if (!what) {
    d->sequences = seqs;
    d->offset = off;
    if (read_attr_str(f, "version", d->version, sizeof d->version, NULL) ||
        read_attr_str(f, "commit", d->commit, sizeof d->commit, NULL) ||
        read_attr_str(f, "model", d->model, sizeof d->model, NULL) ||
        read_attr_str(f, "model_checksum", d->model_checksum, sizeof d->model_checksum, NULL) ||
        read_attr_str(f, "tokens", d->tokens_path, sizeof d->tokens_path, NULL) ||
        read_attr_str(f, "tokens_checksum", d->tokens_checksum, sizeof d->tokens_checksum, NULL) ||
        read_attr_str(f, "tokenizer", d->tokenizer, sizeof d->tokenizer, NULL) ||
        read_attr_str(f, "reference", d->reference, sizeof d->reference, NULL) ||
        read_attr_str(f, "shard", d->shard, sizeof d->shard, NULL) ||
        read_attr_str(f, "experiment", NULL, 0, &d->experiment) ||
        read_attr_num(f, "seed", H5T_NATIVE_UINT64, &d->seed))
      what = "root attributes (version, commit, model, tokens, seed, reference, shard, experiment)";
    else if (H5Aexists(f, "vocab") > 0 &&
             (read_attr_num(f, "vocab", H5T_NATIVE_INT64, &d->vocab) ||
              read_attr_num(f, "vocab_rows", H5T_NATIVE_INT64, &d->vocab_rows) ||
              d->vocab < 1 || d->vocab_rows < d->vocab))
      what = "root attributes vocab and vocab_rows (expected 1 <= vocab <= vocab_rows)";
    else if (read_ds(f, "tokens", H5T_NATIVE_INT32, K, N + 1, d->tokens))
      what = "dataset /tokens";
    else if (read_ds(f, "window_start", H5T_NATIVE_INT64, K, 0, d->window_start))
      what = "dataset /window_start [K]";
    else if (read_ds(f, "reference/nll", H5T_NATIVE_FLOAT, K, N, d->ref_nll))
      what = "dataset /reference/nll [K, steps]";
    else
      what = read_state(f, d);
  }
  char bad[SSM_NAME_MAX + 128];
  for (int c = 0; !what && c < names.n; c++) {
    run_cfg_data *x = &d->cfg[c];
    hid_t g = H5Gopen2(cfgs, names.names[c], H5P_DEFAULT);
    snprintf(bad, sizeof bad, "group /configs/%s (expected spec, name, kl, nll, dp, top1, first_nonfinite)",
             names.names[c]);
    if (g < 0 || read_attr_str(g, "spec", x->spec, sizeof x->spec, NULL) ||
        read_attr_str(g, "name", x->name, sizeof x->name, NULL) ||
        read_ds(g, "kl", H5T_NATIVE_FLOAT, K, N, x->kl) ||
        read_ds(g, "nll", H5T_NATIVE_FLOAT, K, N, x->nll) ||
        read_ds(g, "dp", H5T_NATIVE_FLOAT, K, N, x->dp) ||
        read_ds(g, "top1", H5T_NATIVE_UINT8, K, N, x->top1) ||
        read_ds(g, "first_nonfinite", H5T_NATIVE_INT64, K, 0, x->first_nonfinite))
      what = bad;
    if (g >= 0) H5Gclose(g);
  }
  free(names.names);
  if (cfgs >= 0) H5Gclose(cfgs);
  H5Fclose(f);
  if (what) {
    run_data_free(d);
    snprintf(err, errlen, "%s: missing or malformed %s (expected a file written by replayssm run)",
             path, what);
    return RSSM_ERR_INPUT;
  }
  return RSSM_OK;
}
