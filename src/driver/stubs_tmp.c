#include "src/cli/commands.h"
int cmd_run(int argc, char **argv) { (void)argc; (void)argv; return 1; }
int cmd_merge(int argc, char **argv) { (void)argc; (void)argv; return 1; }
int cmd_summary(int argc, char **argv) { (void)argc; (void)argv; return 1; }
