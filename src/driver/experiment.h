/* Experiment descriptions: what `replayssm run` decodes (docs/driver.md, "Experiment files").
 *
 * An INI file (libinih) with, in the root section:
 *   model = toy:gdn | toy:mamba2 | PATH          tokens = PATH (.npy or .tok.zst)
 *   sequences = K   steps = N   seed = S (0)     reference = CONFIG (conventional state=fp32)
 *   block = B (256)  checkpoint_every = STEPS (1024)
 *   config = CONFIG                              (repeatable; CONFIG as in SPEC section 6)
 *   template = CONFIG-WITH-{KEY}  sweep.KEY = v1,v2,...   (one sweep in the root section)
 * and sections [config NAME] (spec = CONFIG; NAME is the label) and [sweep NAME] (template =,
 * sweep.KEY = ...). A sweep expands the template over the Cartesian product of its value lists
 * (first key outermost), substituting {KEY}; expanded configurations follow the explicit ones.
 * Relative paths are relative to the experiment file's directory; they are stored (and printed
 * in the effective experiment) as absolute paths, so that the stored text runs from anywhere.
 * Every error names the file and line: "FILE:LINE: what is wrong (expected ...)". */
#ifndef RSSM_DRIVER_EXPERIMENT_H
#define RSSM_DRIVER_EXPERIMENT_H

#include <stddef.h>
#include <stdint.h>

#include "src/ssm/ssm_config.h"

#define EXP_MAX_CONFIGS 512
#define EXP_PATH_MAX 4096

typedef struct {
  ssm_config cfg; /* cfg.name is the label */
  int line;       /* where it was defined (0: command line) */
} exp_config;

typedef struct {
  char file[EXP_PATH_MAX];   /* the experiment file, "" for a command-line experiment */
  char model[EXP_PATH_MAX];  /* resolved */
  char tokens[EXP_PATH_MAX]; /* resolved */
  int64_t sequences, steps;  /* -1 until given */
  uint64_t seed;
  ssm_config reference;
  int64_t block;             /* steps per lockstep block */
  int64_t checkpoint_every;  /* steps between checkpoints */
  int nconfig;
  exp_config configs[EXP_MAX_CONFIGS];
  /* lines of the keys, for errors found later (0: not from a file) */
  int model_line, tokens_line, sequences_line, steps_line;
} experiment;

/* Defaults for everything optional; sequences and steps -1. */
void experiment_init(experiment *e);

/* Parse an experiment file into e (which experiment_init prepared). Returns RSSM_OK,
 * RSSM_ERR_INPUT with "FILE:LINE: ..." in err, or RSSM_ERR_IO. */
int experiment_parse_file(const char *path, experiment *e, char *err, size_t errlen);

/* Add one configuration string (command line or file). label may be NULL (name= or canonical).
 * Returns RSSM_OK or RSSM_ERR_INPUT with the parser's reason in err. */
int experiment_add_config(experiment *e, const char *text, const char *label, int line,
                          char *err, size_t errlen);

/* Checks after all sources (file, options) are in: required keys, unique names, sizes.
 * Returns RSSM_OK or RSSM_ERR_INPUT naming the file (and line) or the option. */
int experiment_validate(const experiment *e, char *err, size_t errlen);

/* "FILE:LINE" or "--option" for messages about a key. */
void experiment_where(const experiment *e, int line, const char *option, char *buf, size_t len);

/* The effective experiment as INI text (malloc'ed, NUL-terminated): printed at the start of a run
 * and stored in the output file. Parsing it gives back the same experiment. */
char *experiment_to_text(const experiment *e);

/* Makes a path absolute in place (relative to the working directory, then without "." and ".."
 * and links where it exists); "toy:..." and "" are left alone. path holds EXP_PATH_MAX bytes. */
void experiment_absolute_path(char *path);

/* The HDF5 group name of a label: '/' -> '_'. out holds SSM_NAME_MAX bytes. */
void experiment_group_name(const char *label, char *out);

#endif
