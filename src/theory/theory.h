/* `replayssm theory`: the paper's Appendix C.6 error-propagation model checked against the real
 * quantisers (docs/theory.md).
 *
 * The model: the deviation of a stored state from the exact one obeys D_t = a D_{t-1} + e_t, where
 * e_t is the rounding error of the t-th store. If the e_t are independent and identically
 * distributed with mean b and variance s2, then after n roundings
 *   E[D_n]   = b (1 - a^n) / (1 - a)          -> b / (1 - a)
 *   Var[D_n] = s2 (1 - a^2n) / (1 - a^2)      -> s2 / (1 - a^2).
 * Conventional storage rounds every step (a = alpha); a shared replay checkpoint rounds once every
 * L steps (a = alpha^L per rounding); split precision reads a low-precision copy that is rounded
 * once and never fed back (D = e: b and s2 themselves).
 *
 * Here e = Q(S) - S is taken from quant/ (q_fake_cpu) on realistic state matrices, elementwise,
 * every element one trial, under three regimes that make the assumptions explicit:
 *   iid    a fresh state every step (row scales redrawn): independent, identically distributed;
 *   fixed  the same state every step: RTN repeats the same error (fully correlated, the pure bias
 *          case); SR draws fresh bits each step (independent, but the variance of each element
 *          depends on where its value sits between two grid points);
 *   ar1    a slowly moving state S_t = rho S_{t-1} + sqrt(1 - rho^2) W_t: RTN errors stay
 *          correlated while the value moves less than a grid cell per step.
 *   closed the real recurrence: the stored state is S_t = Q(alpha S_(t-1) + input_t) against the
 *          exact X_t = alpha X_(t-1) + input_t, so e feeds back through the state it rounds
 *          (one stream per alpha: alpha times the cost, so not in the default grid).
 * In the open-loop regimes all alphas share one error stream per (format, rounding, regime); D is
 * accumulated for every alpha and both accumulation modes at once. */
#ifndef RSSM_THEORY_THEORY_H
#define RSSM_THEORY_THEORY_H

#include <stddef.h>
#include <stdint.h>

#include "quant/format.h"

typedef enum { TH_IID = 0, TH_FIXED, TH_AR1, TH_CLOSED, TH_NREGIME } th_regime;
typedef enum { TH_CONVENTIONAL = 0, TH_REPLAY, TH_SPLIT, TH_NMODE } th_mode;
/* Whether the regime satisfies the model's assumptions for this rounding. */
typedef enum { TH_HOLDS = 0, TH_VIOLATED, TH_UNCERTAIN } th_assumption;

#define TH_MAX_ALPHA 32

typedef struct {
  uint64_t seed;
  int nmat, dv, dk;   /* trials per step = nmat * dv * dk; the nmat matrices are the batches of the
                         standard errors (elements of one matrix share scales, so they are not
                         independent of each other) */
  int64_t max_steps;  /* cap on the simulated steps */
  double horizons;    /* steps wanted: horizons / (1 - alpha_max) (stationarity), capped */
  int L;              /* replay window */
  double rho;         /* ar1: per-step correlation of the state */
  int nalpha;
  double alpha[TH_MAX_ALPHA];
  double tol;         /* relative agreement required, 0.05 */
} th_params;

const char *th_regime_name(th_regime r);
const char *th_mode_name(th_mode m);
const char *th_assumption_name(th_assumption a);
int th_regime_parse(const char *s, th_regime *out);

/* One comparison of measured against predicted. */
typedef struct {
  qformat fmt;
  th_regime regime;
  th_mode mode;
  double alpha;      /* per step; NaN for split (no accumulation) */
  double a_eff;      /* per rounding: alpha (conventional), alpha^L (replay), 0 (split) */
  int64_t events;    /* roundings accumulated into D */
  int stationary;    /* events >= horizons / (1 - a_eff): the finite sums equal the limits */
  double b, s2;      /* measured mean and variance of e over the roundings that fed D */
  double pred_mean, pred_var; /* the exact finite sums above with the measured b, s2 */
  double lim_mean, lim_var;   /* the stationary limits b/(1-a), s2/(1-a^2) */
  double meas_mean, meas_var; /* of D over all elements after the last rounding */
  double se_mean, se_var;     /* standard errors of meas_* from the spread between matrices */
  double rel_mean;   /* |meas_mean - pred_mean| / max(|pred_mean|, sqrt(pred_var)) */
  double rel_var;    /* |meas_var - pred_var| / pred_var */
  th_assumption assumption;
  int agrees;        /* rel_mean <= tol and rel_var <= tol */
  int resolved;      /* the standard errors are below tol/3 of their units, so the trials can
                        tell a 5% disagreement from noise (heavy-tailed errors may not) */
  const char *why;   /* why the assumptions hold or not (static text) */
  double corr, corr_se; /* lag-1 autocorrelation of e over steps, and its standard error */
  double kappa, kappa_se; /* closed regime: 2 a Cov(D_(n-1), e_n) / s2, weighted like Var D
                             (a^2(n-1-j) for rounding j): the relative change of Var D that the
                             correlation of e with the accumulated D causes; NaN elsewhere */
  double elem_s2_cv; /* fixed regime: coefficient of variation of the per-element error variance
                        over steps (0 for a constant-variance error); NaN elsewhere */
} th_row;

typedef struct {
  th_row *rows;
  size_t n, cap;
  int64_t steps;     /* steps simulated per (format, rounding, regime) */
} th_result;

/* Steps that p asks for: ceil(horizons / (1 - max alpha)), a multiple of L, capped. */
int64_t th_steps(const th_params *p);

/* Runs one (format, regime) and appends 2 * nalpha + 1 rows (closed: 3 * nalpha, a split row per
 * alpha). Returns 0, or -1 with a one-line reason in err (out of memory). */
int th_run(const th_params *p, const qformat *fmt, th_regime regime, th_result *res, char *err,
           size_t errlen);
void th_result_free(th_result *res);

/* Rows where the assumptions hold, the trials resolve the tolerance, and the agreement fails:
 * the check's verdict (0 = passed). */
size_t th_failures(const th_result *res);
/* Rows where the assumptions hold but the standard errors are too large to judge. */
size_t th_unresolved(const th_result *res);

#endif
