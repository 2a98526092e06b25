/* The subcommands of `replayssm`, one file each (cmd_<name>.c). Each takes the arguments after
 * `replayssm` (argv[0] is the command's own name), handles its own --help, and returns the process
 * exit status: 0 ok, 2 bad input or usage (RSSM_ERR_INPUT), 1 I/O or internal failure. */
#ifndef RSSM_CLI_COMMANDS_H
#define RSSM_CLI_COMMANDS_H

int cmd_logits(int argc, char **argv);
int cmd_quant(int argc, char **argv);
int cmd_ssm_sim(int argc, char **argv);
int cmd_theory(int argc, char **argv);
int cmd_tokens(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_summary(int argc, char **argv);
int cmd_bench(int argc, char **argv);

/* `replayssm bench e2e` (src/bench_e2e/, defined where RSSM_HAVE_BENCH_E2E is): argv[0] is "e2e";
 * returns the exit status. */
int bench_e2e_main(int argc, char **argv);

#endif
