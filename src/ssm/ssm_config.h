/* State-strategy configuration strings (SPEC section 6): `STRATEGY key=value ...`.
 *
 *   conventional state=F                      eager per-step store of Q_F(S)
 *   replay L=n ckpt=F                         one shared checkpoint (Algorithms 1, 4)
 *   replay L=n hp=F1 lp=F2 [gdn_u=...]        split precision (Algorithm 3)
 *   spec L=n T=m (ckpt=F | hp=F1 lp=F2) accept=fixed:A|uniform|geom:P [gdn_u=...]
 *   replay/spec ... skip=THR                   Appendix F: a non-flush readout drops the
 *                                              checkpoint term of heads with gamma_h < THR
 *
 * Defaults: state/ckpt fp32 when no format key is given, L=16, T=4, accept=uniform,
 * gdn_u=recompute, no skip, name = the canonical string. Everything that SPEC or this header calls a
 * contradiction is an error with a one-line reason (see ssm_config_parse). */
#ifndef RSSM_SSM_CONFIG_H
#define RSSM_SSM_CONFIG_H

#include <stddef.h>

#include "quant/format.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { SSM_CONVENTIONAL = 0, SSM_REPLAY, SSM_SPEC } ssm_strategy;

/* Acceptance model of a spec round: a in [1, T]. */
typedef enum {
  SSM_ACCEPT_FIXED = 0, /* a = accept_fixed */
  SSM_ACCEPT_UNIFORM,   /* a uniform on {1..T} */
  SSM_ACCEPT_GEOM       /* first draft always kept, each further one with probability accept_p */
} ssm_accept_kind;

/* Where a split-precision GDN flush takes the u of the committed records from. */
typedef enum {
  SSM_GDN_U_RECOMPUTE = 0, /* recompute u_j in order from deq(C_hp) (SPEC section 2) */
  SSM_GDN_U_CACHED         /* keep the u computed on the LP path (ablation) */
} ssm_gdn_u;

#define SSM_NAME_MAX 128

typedef struct {
  ssm_strategy strategy;
  int split;      /* 1: hp/lp checkpoints (replay, spec); 0: one checkpoint (or conventional) */
  qformat state;  /* conventional: the stored state's format */
  qformat ckpt;   /* replay/spec shared: the checkpoint's format */
  qformat hp, lp; /* replay/spec split */
  int L;          /* replay window, >= 1 (replay, spec) */
  int T;          /* drafts per round, 1 <= T <= L (spec); 0 otherwise */
  ssm_accept_kind accept;
  int accept_fixed;   /* SSM_ACCEPT_FIXED: A in [1, T] */
  double accept_p;    /* SSM_ACCEPT_GEOM: P in (0, 1] */
  ssm_gdn_u gdn_u;
  double skip;        /* replay/spec: Appendix F threshold in (0, 1); 0 = never skip (absent) */
  char name[SSM_NAME_MAX]; /* label; the canonical string when no name= is given */
} ssm_config;

/* Parse a configuration string. Returns 0, or -1 with a one-line reason in err (always
 * NUL-terminated when errlen > 0). Errors: unknown strategy, unknown key, missing value, bad
 * number, duplicate key, and the contradictions: ckpt with hp/lp, hp without lp (and lp without
 * hp), state with replay/spec, ckpt/hp/lp with conventional, T/accept outside spec, L outside
 * replay/spec, L < 1, T < 1 or T > L, fixed:A with A outside [1, T], geom:P with P outside (0, 1],
 * gdn_u=cached without hp/lp, skip outside (0, 1) or with conventional, a name longer than
 * SSM_NAME_MAX - 1. */
int ssm_config_parse(const char *text, ssm_config *out, char *err, size_t errlen);

/* Canonical string, e.g. "conventional state=fp8/sr", "replay L=16 ckpt=nvfp4/sr",
 * "spec L=16 T=4 hp=fp32 lp=nvfp4 accept=uniform", with gdn_u only when cached, skip (shortest
 * round-tripping %g) only when set, and without the name. Parsing it gives back the same configuration. Truncated (NUL-terminated) if buflen is
 * too small; 256 bytes always suffice. */
void ssm_config_to_string(const ssm_config *c, char *buf, size_t buflen);

const char *ssm_strategy_name(ssm_strategy s);

#ifdef __cplusplus
}
#endif
#endif
