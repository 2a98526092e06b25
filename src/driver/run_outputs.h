/* What a run checks about its outputs before it writes anything (docs/reliability.md): the
 * paths, and what --resume finds there. Private to src/driver. */
#ifndef RSSM_DRIVER_RUN_OUTPUTS_H
#define RSSM_DRIVER_RUN_OUTPUTS_H

#include <stddef.h>

#include "src/driver/experiment.h"
#include "src/driver/run_internal.h"

/* out (and out.part, out.ckpt) must be creatable: not a directory, in an existing writable
 * directory, and none of them the token file or the model. Returns RSSM_OK or RSSM_ERR_INPUT
 * with one line naming the path. */
int run_outputs_check(const experiment *e, const char *out, char *err, size_t errlen);

/* 1 when paths a and b name the same existing file. */
int run_same_file(const char *a, const char *b);

enum { RESUME_FRESH, RESUME_CKPT, RESUME_DONE };

/* --resume: decides from what is at out and ckpt, after setup (r's identity is known).
 * RESUME_CKPT: r was restored from ckpt (it matched; an older out is replaced at the end);
 * RESUME_DONE: out is a complete run of this very experiment; RESUME_FRESH: nothing to resume.
 * Refusals (RSSM_ERR_INPUT): a checkpoint or output of another experiment (err lists every
 * differing field), an out that is not a complete run file. */
int run_resume_plan(runner *r, const char *out, const char *ckpt, int *plan, char *err,
                    size_t errlen);

#endif
