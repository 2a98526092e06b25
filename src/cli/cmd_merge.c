/* `replayssm merge [--force] [--partial] OUT.h5 SHARD.h5...`: join the shards of one run (merge.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/io/cli_opts.h"
#include "src/cli/commands.h"
#include "src/driver/merge.h"
#include "src/driver/run_h5.h"
#include "src/driver/run_outputs.h"
#include "src/io/out_lock.h"
#include "src/io/status.h"

static const char *CMD = "merge";

int cmd_merge(int argc, char **argv) {
  static const char *operands[4097]; /* OUT.h5 and up to 4096 shards */
  int nop = 0, force = 0, partial = 0;
  const cli_opt opts[] = {{.name = "--force", .type = CLI_FLAG, .dest = &force,
                           .help = "replace an existing OUT.h5"},
                          {.name = "--partial", .type = CLI_FLAG, .dest = &partial,
                           .help = "accept incomplete shards (the merged file records the steps "
                                   "written)"}};
  const cli_spec spec = {
      .cmd = CMD,
      .usage = "merge [--force] [--partial] OUT.h5 SHARD.h5...",
      .about = "Joins the files of `replayssm run --shard I/N` (all N of them, any order) into the file\n"
               "an unsharded run writes. The shards must come from the same experiment, model, tokens\n"
               "and seed. OUT.h5 is written atomically and never overwritten without --force.\n"
               "Incomplete shards (interrupted runs' .part files) are refused unless --partial.",
      .opts = opts,
      .nopts = 2,
      .operands = operands,
      .max_operands = (int)(sizeof operands / sizeof operands[0]),
      .noperands = &nop,
  };
  int done;
  int prc = cli_parse_or_help(&spec, argc, argv, &done);
  if (done) return prc;
  const char *out = nop > 0 ? operands[0] : NULL;
  const char *const *in = operands + 1;
  const int nin = nop > 0 ? nop - 1 : 0;
  if (!out || nin == 0) {
    cli_error(CMD, "expected OUT.h5 and at least one SHARD.h5 (see replayssm merge --help)");
    return 2;
  }
  for (int j = 0; j < nin; j++)
    if (strcmp(out, in[j]) == 0 || run_same_file(out, in[j])) {
      cli_error(CMD, "%s: is also input %d (expected an output other than every shard)", out, j + 1);
      return 2;
    }
  if (!force && access(out, F_OK) == 0) {
    cli_error(CMD, "%s: exists (use --force to overwrite it)", out);
    return 2;
  }
  char err[2048];
  out_lock lock;
  int rc = out_lock_take(out, &lock, err, sizeof err);
  if (rc != RSSM_OK) {
    cli_error(CMD, "%s", err);
    return rc;
  }
  run_data *shards = calloc((size_t)nin, sizeof *shards);
  if (!shards) {
    out_lock_release(&lock);
    cli_error(CMD, "out of memory");
    return 1;
  }
  int nread = 0;
  for (; nread < nin && rc == RSSM_OK; nread++) {
    rc = run_h5_read(in[nread], &shards[nread], err, sizeof err);
    if (rc != RSSM_OK) break;
    if (!partial && !run_data_complete(&shards[nread])) {
      char w[128];
      run_data_written_text(&shards[nread], w, sizeof w);
      snprintf(err, sizeof err, "%s: incomplete (an interrupted run: %s); finish it with "
               "--resume, or merge what was written with --partial", in[nread], w);
      rc = RSSM_ERR_INPUT;
      nread++;
      break;
    }
  }
  run_data merged;
  if (rc == RSSM_OK) rc = merge_shards(shards, in, nin, &merged, err, sizeof err);
  if (rc == RSSM_OK) {
    rc = run_h5_write_all(out, &merged, err, sizeof err);
    run_data_free(&merged);
  }
  for (int j = 0; j < nread; j++) run_data_free(&shards[j]);
  free(shards);
  out_lock_release(&lock);
  if (rc != RSSM_OK) {
    cli_error(CMD, "%s", err);
    return rc;
  }
  printf("%s: merged %d shards\n", out, nin);
  return 0;
}
