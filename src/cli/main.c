/* `replayssm <command> [args]`: looks the command up in a table and runs it.
 * Exit status: 0 ok, 2 bad input or usage, 1 I/O or internal failure (docs/cli.md). */
#include <hdf5.h>
#include <stdio.h>
#include <string.h>

#include "src/io/cli_opts.h"
#include "src/io/version.h"
#include "src/cli/commands.h"

typedef struct {
  const char *name;
  int (*run)(int argc, char **argv); /* argv[0] is the command name */
  const char *summary;
} rssm_command;

/* One line per command; keep alphabetical. */
static const rssm_command commands[] = {
    {"bench", cmd_bench, "GPU benchmarks: bench kernels (SSM kernels), bench e2e (decoding)"},
    {"logits", cmd_logits, "fp32 CPU decode of a Hugging Face hybrid model: logits per step"},
    {"merge", cmd_merge, "join the shard files of one run (run --shard I/N) into one file"},
    {"quant", cmd_quant, "fake-quantise a float32 .npy array to a number format (SPEC 3-4)"},
    {"run", cmd_run, "teacher-forced decoding of an experiment: per-step KL etc. in HDF5 (SPEC 5, 7)"},
    {"ssm-sim", cmd_ssm_sim, "one SSM layer, random inputs: state error of each configuration"},
    {"summary", cmd_summary, "KL, PPL, dp, top-1 per configuration with errors (text/csv/json)"},
    {"theory", cmd_theory, "Appendix C.6 error-propagation model against the real quantisers"},
    {"tokens", cmd_tokens, "text or PG-19 to .tok.zst tokens (bytes or a tokenizer.json)"},
};
static const size_t n_commands = sizeof commands / sizeof commands[0];

static void print_usage(FILE *out) {
  fprintf(out,
          "usage: replayssm <command> [args]\n"
          "       replayssm <command> --help\n"
          "       replayssm --help | --version\n"
          "\n"
          "commands:\n");
  for (size_t i = 0; i < n_commands; i++)
    fprintf(out, "  %-12s %s\n", commands[i].name, commands[i].summary);
  fprintf(out,
          "\n"
          "exit status: 0 ok, 2 bad input or usage, 1 I/O or internal failure\n");
}

static const rssm_command *find_command(const char *name) {
  for (size_t i = 0; i < n_commands; i++)
    if (strcmp(commands[i].name, name) == 0) return &commands[i];
  return NULL;
}

static void unknown_command(const char *name) {
  char list[512] = "";
  size_t used = 0;
  for (size_t i = 0; i < n_commands && used < sizeof list; i++) {
    int k = snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", commands[i].name);
    if (k > 0) used += (size_t)k;
  }
  cli_error(NULL, "unknown command '%s' (expected one of: %s; see replayssm --help)", name, list);
}

int main(int argc, char **argv) {
  /* HDF5 1.10 crashes (SIGSEGV) in its exit-time cleanup when a file could not be flushed, e.g.
   * on a full disk: H5Fclose fails and leaves a half-closed file that the cleanup closes again.
   * Every command closes its files itself, so the cleanup runs only after a success or a bad
   * input (H5close below), never after an I/O failure (exit status 1). docs/reliability.md */
  H5dont_atexit();
  if (argc < 2) {
    print_usage(stderr);
    return 2;
  }
  const char *name = argv[1];
  if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
    print_usage(stdout);
    return 0;
  }
  if (strcmp(name, "--version") == 0) {
    printf("replayssm %s\n", rssm_version());
    return 0;
  }
  if (strcmp(name, "help") == 0) {
    /* `replayssm help CMD` is `replayssm CMD --help` */
    if (argc < 3) {
      print_usage(stdout);
      return 0;
    }
    const rssm_command *c = find_command(argv[2]);
    if (!c) {
      unknown_command(argv[2]);
      return 2;
    }
    char help[] = "--help";
    char *args[] = {argv[2], help, NULL};
    return c->run(2, args);
  }
  const rssm_command *c = find_command(name);
  if (!c) {
    if (name[0] == '-')
      cli_error(NULL, "unknown option '%s' (expected a command first; see replayssm --help)",
                name);
    else
      unknown_command(name);
    return 2;
  }
  int rc = c->run(argc - 1, argv + 1);
  if (rc != 1) H5close();
  return rc;
}
