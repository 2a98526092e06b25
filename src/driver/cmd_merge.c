/* `replayssm merge [--force] OUT.h5 SHARD.h5...`: join the shards of one run (merge.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/cli/cli_util.h"
#include "src/cli/commands.h"
#include "src/driver/merge.h"
#include "src/driver/run_h5.h"
#include "src/io/status.h"

static const char *CMD = "merge";

static void usage(FILE *out) {
  fprintf(out,
          "usage: replayssm merge [--force] OUT.h5 SHARD.h5...\n"
          "\n"
          "Joins the files of `replayssm run --shard I/N` (all N of them, any order) into the file\n"
          "an unsharded run writes. The shards must come from the same experiment, model, tokens\n"
          "and seed. OUT.h5 is written atomically and never overwritten without --force.\n");
}

int cmd_merge(int argc, char **argv) {
  const char *out = NULL;
  const char *in[4096];
  int nin = 0, force = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      usage(stdout);
      return 0;
    } else if (strcmp(argv[i], "--force") == 0) {
      force = 1;
    } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
      cli_error(CMD, "unknown option '%s' (see replayssm merge --help)", argv[i]);
      return 2;
    } else if (!out) {
      out = argv[i];
    } else if (nin < (int)(sizeof in / sizeof in[0])) {
      in[nin++] = argv[i];
    } else {
      cli_error(CMD, "too many shard files (at most %d)", nin);
      return 2;
    }
  }
  if (!out || nin == 0) {
    cli_error(CMD, "expected OUT.h5 and at least one SHARD.h5 (see replayssm merge --help)");
    return 2;
  }
  if (!force && access(out, F_OK) == 0) {
    cli_error(CMD, "%s: exists (use --force to overwrite it)", out);
    return 2;
  }
  run_data *shards = calloc((size_t)nin, sizeof *shards);
  if (!shards) {
    cli_error(CMD, "out of memory");
    return 1;
  }
  char err[2048];
  int rc = RSSM_OK, nread = 0;
  for (; nread < nin && rc == RSSM_OK; nread++) {
    rc = run_h5_read(in[nread], &shards[nread], err, sizeof err);
    if (rc != RSSM_OK) break;
  }
  run_data merged;
  if (rc == RSSM_OK) rc = merge_shards(shards, in, nin, &merged, err, sizeof err);
  if (rc == RSSM_OK) {
    rc = run_h5_write_all(out, &merged, err, sizeof err);
    run_data_free(&merged);
  }
  for (int j = 0; j < nread; j++) run_data_free(&shards[j]);
  free(shards);
  if (rc != RSSM_OK) {
    cli_error(CMD, "%s", err);
    return rc;
  }
  printf("%s: merged %d shards\n", out, nin);
  return 0;
}
