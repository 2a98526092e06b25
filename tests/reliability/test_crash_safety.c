/* Crash safety of `replayssm run` (issue 10, docs/reliability.md):
 *   - killed with SIGKILL at any of its writes to the HDF5 file (whole or torn in half, by the
 *     kill_at_write LD_PRELOAD shim) or at random moments, the run leaves either no OUT.part or
 *     one that opens and reads completely (HDF5 C API, and h5py when /usr/bin/python3 has it),
 *     and `--resume` completes to datasets identical to an uninterrupted run;
 *   - a full disk (RLIMIT_FSIZE in the child, SIGXFSZ ignored, so writes fail with EFBIG) ends
 *     the run with exit status 1 and one line naming the file, and leaves what was there before
 *     intact: an existing complete output, and the last checkpoint (which --resume continues). */
#include <criterion/criterion.h>
#include <errno.h>
#include <hdf5.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/cli/cli_test_util.h"
#include "tests/driver/driver_test_util.h"

static const char *dir;
static char ini[TPATH_MAX], errf[TPATH_MAX], whole[TPATH_MAX], out[TPATH_MAX], part[TPATH_MAX + 16],
    ckpt[TPATH_MAX + 16], partnew[TPATH_MAX + 16];

/* Two chunks per row (N > 1024), many blocks, checkpoints every other block. */
static const char *EXPERIMENT =
    "model = toy:gdn\ntokens = t.tok.zst\nsequences = 2\nsteps = 1100\nblock = 50\n"
    "checkpoint_every = 100\nseed = 3\n"
    "config = conventional state=bf16\nconfig = replay L=16 ckpt=nvfp4/sr\n";

static void setup(void) {
  dir = tdir_make();
  cr_assert(dir);
  char toks[TPATH_MAX];
  make_text_stream(tpath(toks, dir, "t.tok.zst"), 4000);
  put_text(tpath(ini, dir, "exp.ini"), EXPERIMENT);
  tpath(errf, dir, "err.txt");
  tpath(whole, dir, "whole.h5");
  tpath(out, dir, "o.h5");
  snprintf(part, sizeof part, "%s.part", out);
  snprintf(ckpt, sizeof ckpt, "%s.ckpt", out);
  snprintf(partnew, sizeof partnew, "%s.part.new", out);
}
static void teardown(void) { tdir_remove(dir); }
TestSuite(crash, .init = setup, .fini = teardown, .timeout = 600);

typedef struct {
  const char *kill_at;   /* RSSM_KILL_AT_WRITE, or NULL */
  int half;              /* RSSM_KILL_HALF */
  const char *count;     /* RSSM_KILL_COUNT */
  rlim_t fsize;          /* RLIMIT_FSIZE in bytes, 0: none */
  const char *kill_block; /* RSSM_TEST_KILL_AFTER_BLOCK */
} child_opts;

/* fork + exec `replayssm run exp.ini --out o.h5 --quiet EXTRA...` with stderr to errf. */
static pid_t start(const child_opts *o, const char *extra) {
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    FILE *e = freopen(errf, "w", stderr);
    (void)e;
    if (o->kill_at || o->count) {
      setenv("LD_PRELOAD", KILL_SHIM, 1);
      /* the sanitizer runtimes want to be first; the shim only forwards calls */
      setenv("ASAN_OPTIONS", "verify_asan_link_order=0:detect_leaks=0", 1);
    }
    if (o->kill_at) setenv("RSSM_KILL_AT_WRITE", o->kill_at, 1);
    if (o->half) setenv("RSSM_KILL_HALF", "1", 1);
    if (o->count) setenv("RSSM_KILL_COUNT", o->count, 1);
    if (o->kill_block) setenv("RSSM_TEST_KILL_AFTER_BLOCK", o->kill_block, 1);
    if (o->fsize) {
      signal(SIGXFSZ, SIG_IGN); /* stays ignored across exec: writes fail with EFBIG */
      struct rlimit rl = {o->fsize, o->fsize};
      setrlimit(RLIMIT_FSIZE, &rl);
    }
    const char *argv[] = {RSSM_BIN, "run", ini, "--out", out, "--quiet", "--threads", "1",
                          extra, NULL};
    execv(RSSM_BIN, (char *const *)argv);
    _exit(127);
  }
  return pid;
}

static int wait_status(pid_t pid) {
  int st;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  return st;
}

static int run_with(const child_opts *o, const char *extra) { return wait_status(start(o, extra)); }

static void resume_and_compare(void) {
  child_opts none = {0};
  int st = run_with(&none, "--resume");
  char *e = slurp(errf, NULL);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "--resume failed: %s", e ? e : "");
  free(e);
  cr_assert(file_exists(out) && !file_exists(ckpt) && !file_exists(part) && !file_exists(partnew));
  char why[512];
  cr_assert_eq(h5_datasets_equal(whole, out, why, sizeof why), 0, "resumed run differs: %s", why);
}

/* Opens path read-only and reads every dataset and attribute: 0 when all of it reads. */
static herr_t read_one(hid_t obj, const char *name, const H5O_info_t *info, void *op) {
  int *bad = op;
  if (info->type == H5O_TYPE_DATASET) {
    hid_t ds = H5Dopen2(obj, name, H5P_DEFAULT);
    if (ds < 0) {
      (*bad)++;
      return 0;
    }
    hid_t type = H5Dget_type(ds), space = H5Dget_space(ds);
    size_t n = (size_t)H5Sget_simple_extent_npoints(space) * H5Tget_size(type);
    void *buf = malloc(n + 1);
    if (!buf || H5Dread(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) (*bad)++;
    free(buf);
    H5Sclose(space);
    H5Tclose(type);
    H5Dclose(ds);
  }
  return 0;
}

static int h5_reads(const char *path) {
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) return -1;
  int bad = 0;
  if (H5Ovisit2(f, H5_INDEX_NAME, H5_ITER_INC, read_one, &bad, H5O_INFO_BASIC) < 0) bad++;
  H5Fclose(f);
  return bad;
}

/* h5py (Debian's python3-h5py) opens the file and reads every dataset; a missing h5py fails the
 * test (scripts/setup.sh installs it), since the check would otherwise pass without running. */
static int have_h5py = -1;
static int h5py_reads(const char *path) {
  if (have_h5py < 0)
    have_h5py = system("/usr/bin/python3 -c 'import h5py' >/dev/null 2>&1") == 0;
  cr_assert(have_h5py, "/usr/bin/python3 has no h5py (install python3-h5py: scripts/setup.sh)");
  char cmd[TPATH_MAX + 256];
  snprintf(cmd, sizeof cmd,
           "/usr/bin/python3 -c \"import h5py, sys; f = h5py.File(sys.argv[1], 'r'); "
           "f.visititems(lambda n, o: o[()] if isinstance(o, h5py.Dataset) else None)\" '%s' "
           ">/dev/null 2>&1", path);
  return system(cmd) == 0;
}

/* After a kill: no .part, or one that opens and reads; never a finished output. */
static void check_part(const char *when) {
  cr_assert_not(file_exists(out), "%s: the run finished", when);
  if (!file_exists(part)) return;
  cr_assert_eq(h5_reads(part), 0, "%s: %s does not open and read with HDF5", when, part);
  cr_assert(h5py_reads(part), "%s: h5py cannot open and read %s", when, part);
}

static void clean(void) {
  unlink(out);
  unlink(part);
  unlink(ckpt);
  unlink(partnew);
}

static int quick(void) { return getenv("RSSM_TEST_QUICK") && !strcmp(getenv("RSSM_TEST_QUICK"), "1"); }

/* A kill at the k-th write to the .part, whole or torn: the file creation (the first writes),
 * the first flush, and writes spread over the rest of the run. */
Test(crash, kill_at_every_kind_of_write) {
  char count_file[TPATH_MAX];
  child_opts counting = {.count = tpath(count_file, dir, "count.txt")};
  int st = run_with(&counting, NULL);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  cr_assert_eq(rename(out, whole), 0);
  char *c = slurp(count_file, NULL);
  long total = c ? atol(c) : 0;
  free(c);
  cr_assert_gt(total, 40, "only %ld writes to the .part were seen (is the shim loaded?)", total);
  /* the first 40 writes (the file's creation and first flush: every second one; quick: every
   * fifth), then 8 (quick: 3) spread over the rest of the run */
  long ks[64];
  int n = 0;
  for (long k = 1; k <= 40; k += quick() ? 5 : 2) ks[n++] = k;
  uint64_t seed = 77;
  for (int i = 0; i < (quick() ? 3 : 8); i++)
    ks[n++] = 41 + (long)(rng_next(&seed) % (uint64_t)(total - 40));
  for (int i = 0; i < n; i++) {
    for (int half = 0; half < 2; half++) {
      clean();
      char k[32];
      snprintf(k, sizeof k, "%ld", ks[i]);
      child_opts o = {.kill_at = k, .half = half};
      st = run_with(&o, NULL);
      cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "write %ld: not killed", ks[i]);
      char when[64];
      snprintf(when, sizeof when, "killed at write %ld of %ld%s", ks[i], total, half ? " (torn)" : "");
      check_part(when);
      /* resuming every case is slow: every fourth, and all of the torn later ones */
      if (i % 4 == 0 || (half && ks[i] > 40)) resume_and_compare();
    }
  }
}

/* SIGKILL at random points of the run: at writes drawn uniformly from all of the run's writes
 * to the .part (counted by the shim in an uninterrupted run, fixed seed), whole or torn. A kill
 * is placed by a write count, never by a clock: on a loaded machine a timed kill raced the run's
 * final rename (issue 20). */
Test(crash, kill_at_random_writes) {
  char count_file[TPATH_MAX];
  child_opts counting = {.count = tpath(count_file, dir, "count.txt")};
  int st = run_with(&counting, NULL);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  cr_assert_eq(rename(out, whole), 0);
  char *c = slurp(count_file, NULL);
  long total = c ? atol(c) : 0;
  free(c);
  cr_assert_gt(total, 1, "only %ld writes to the .part were seen (is the shim loaded?)", total);
  uint64_t seed = 2026;
  for (int round = 0; round < (quick() ? 3 : 6); round++) {
    clean();
    char k[32];
    long at = 1 + (long)(rng_next(&seed) % (uint64_t)total);
    snprintf(k, sizeof k, "%ld", at);
    child_opts o = {.kill_at = k, .half = round % 2};
    st = run_with(&o, NULL);
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "write %ld of %ld: not killed", at, total);
    char when[96];
    snprintf(when, sizeof when, "killed at write %ld of %ld%s", at, total, round % 2 ? " (torn)" : "");
    check_part(when);
    resume_and_compare();
  }
}

static void expect_io_error(int st, const char *file) {
  char *e = slurp(errf, NULL);
  cr_assert(e);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 1, "exit %d (expected 1): %s",
            WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st), e);
  cr_assert(is_one_line(e), "not one line: '%s'", e);
  cr_assert(strstr(e, file), "'%s' does not name %s", e, file);
  free(e);
}

static off_t file_size(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 ? sb.st_size : -1;
}

/* A full disk while the .part is created: exit 1, one line naming it; an existing complete
 * output is left exactly as it was, and no .part or .part.new is left behind. */
Test(crash, full_disk_keeps_the_complete_output) {
  child_opts none = {0};
  cr_assert_eq(WEXITSTATUS(run_with(&none, NULL)), 0);
  cr_assert_eq(rename(out, whole), 0);
  cr_assert_eq(WEXITSTATUS(run_with(&none, NULL)), 0); /* o.h5: complete */
  child_opts full = {.fsize = 16384};
  expect_io_error(run_with(&full, "--force"), part);
  char why[512];
  cr_assert(file_exists(out));
  cr_assert_eq(h5_datasets_equal(whole, out, why, sizeof why), 0, "the output changed: %s", why);
  cr_assert(h5py_reads(out));
  cr_assert_not(file_exists(part) || file_exists(partnew), "a partial file was left behind");
}

/* A full disk after some checkpoints: the resumed run fails with exit 1 and one line naming the
 * file it could not write, the last checkpoint stays valid, and a later --resume (space freed)
 * completes to the same datasets. Both for a limit below the .part and one between the .part and
 * the checkpoint (the .part is written, the next checkpoint is not). */
Test(crash, full_disk_keeps_the_last_checkpoint) {
  child_opts none = {0};
  cr_assert_eq(WEXITSTATUS(run_with(&none, NULL)), 0);
  cr_assert_eq(rename(out, whole), 0);
  off_t part_size = file_size(whole);
  for (int limit = 0; limit < 2; limit++) {
    clean();
    child_opts cut = {.kill_block = "5"}; /* checkpoints after blocks 2 and 4 */
    int st = run_with(&cut, NULL);
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    cr_assert(file_exists(ckpt));
    off_t ckpt_size = file_size(ckpt);
    char *before = slurp(ckpt, NULL);
    rlim_t lim = limit == 0 ? 16384 : (rlim_t)part_size + 4096;
    /* the experiment makes the checkpoint larger than the whole .part, so that this limit lets
       the .part be written and stops the checkpoint: a case that cannot be made fails */
    cr_assert(limit == 0 || (off_t)lim < ckpt_size, "checkpoint (%lld bytes) not larger than the "
              ".part + 4096 (%lld): the limit case cannot run", (long long)ckpt_size, (long long)lim);
    child_opts full = {.fsize = lim};
    st = run_with(&full, "--resume");
    expect_io_error(st, limit == 0 ? part : ckpt);
    char *after = slurp(ckpt, NULL);
    cr_assert(after && memcmp(before, after, (size_t)ckpt_size) == 0 &&
              file_size(ckpt) == ckpt_size, "the last checkpoint changed");
    free(before);
    free(after);
    cr_assert_not(file_exists(out));
    resume_and_compare();
  }
}
