/* The targets of issue 17 (docs/bench-kernels.md, "Targets"), decided from the measurements that
 * `replayssm bench kernels` already makes: for each target and shape the measured value and met
 * / missed. Pure C, no CUDA, so that the decisions are tested on the CPU with made-up timings
 * (tests/bench_kernels/test_targets.c).
 *
 *   target       measure (per shape)                                              goal
 *   conv_pct     conventional fp32 step at B = 256, model bytes / time, % of copy  >= 85 %
 *   replay_256   conventional step / replay L=16 time per token, B = 256           >= 1.6x
 *   replay_1     the same at B = 1                                                 >= 0.9x
 *   lp_nvfp4     non-flush step reading fp32 / reading nvfp4 (part lp, B = 256)    >= 3.0x
 *   lp_fp8       the same, fp8                                                     >= 2.0x
 *   lp_bf16      the same, bf16                                                    >= 1.5x
 *   verify_t8    output-only verification T = 8, a = 1, per round / conventional   <= 1.3x
 *                step at B = 256 (part spec) */
#ifndef RSSM_BENCH_KERNELS_TARGETS_H
#define RSSM_BENCH_KERNELS_TARGETS_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One measurement as the benchmark records it (bench_kernels.c `result`, the fields a target
 * needs). us < 0: not measured. check: "pass", "FAIL" or "-". */
typedef struct {
  const char *part;    /* std, window, spec, lp, skip */
  const char *shape;   /* the shape's name, e.g. "Qwen3.5-4B" */
  const char *config;  /* engine configuration text, e.g. "replay L=16 ckpt=fp32" */
  const char *variant; /* spec: "output-only" or "snapshot"; lp: the read format */
  int B, L, T, a;
  double us;           /* per token (std), per round (spec), per non-flush step (lp) */
  double pct_copy;     /* model bytes per time over the copy bandwidth, % */
  const char *check;
} bk_meas;

typedef enum { BK_MET = 0, BK_MISSED = 1, BK_UNMEASURED = 2, BK_CHECK_FAILED = 3 } bk_verdict_kind;

typedef struct {
  const char *target; /* conv_pct, replay_256, ... */
  const char *what;   /* one line saying what is measured */
  const char *shape;
  double value;       /* the measured value (-1 when unmeasured) */
  double goal;
  int at_most;        /* 1: met when value <= goal; 0: when value >= goal */
  const char *unit;   /* "%" or "x" */
  bk_verdict_kind verdict;
} bk_target;

#define BK_N_TARGETS 7

/* Fills out[nshapes * BK_N_TARGETS] (target-major: every shape of the first target, then the
 * next) from the n measurements m; shapes are matched by name. Returns the number of rows. */
int bk_targets_eval(const bk_meas *m, int n, const char *const *shapes, int nshapes,
                    bk_target *out);

/* "met", "missed", "not measured", "check FAIL". */
const char *bk_verdict_name(bk_verdict_kind v);

/* The table, one line per target and shape, then a line of counts:
 *   targets: M met, X missed, U not measured, F check failed (of N) */
void bk_targets_print(FILE *f, const bk_target *t, int n);

/* The same as CSV: target,shape,value,unit,goal,sense,verdict. Returns 0, or -1 on a write
 * error. */
int bk_targets_write_csv(FILE *f, const bk_target *t, int n);

#ifdef __cplusplus
}
#endif
#endif
