/* Parsing and printing of state-strategy configuration strings (SPEC section 6). */
#include "src/io/errbuf.h"
#include "src/ssm/ssm_config.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { K_STATE, K_CKPT, K_HP, K_LP, K_L, K_T, K_ACCEPT, K_GDN_U, K_SKIP, K_NAME, K_COUNT };
static const char *const key_names[K_COUNT] = {"state", "ckpt",  "hp",   "lp",  "L",   "T",
                                               "accept", "gdn_u", "skip", "name"};

const char *ssm_strategy_name(ssm_strategy s) {
  switch (s) {
    case SSM_CONVENTIONAL: return "conventional";
    case SSM_REPLAY: return "replay";
    case SSM_SPEC: return "spec";
  }
  return "?";
}

/* A decimal integer, the whole token; -1 if it is not one or does not fit in an int. */
static int parse_int(const char *s, int *out) {
  if (!*s) return -1;
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (*end != '\0' || errno == ERANGE || v < INT_MIN || v > INT_MAX) return -1;
  *out = (int)v;
  return 0;
}

static int parse_double(const char *s, double *out) {
  if (!*s) return -1;
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (*end != '\0' || errno == ERANGE) return -1;
  *out = v;
  return 0;
}

/* accept=fixed:A | uniform | geom:P; range checks that need T happen later. */
static int parse_accept(const char *v, ssm_config *c, char *err, size_t errlen) {
  if (strcmp(v, "uniform") == 0) {
    c->accept = SSM_ACCEPT_UNIFORM;
  } else if (strncmp(v, "fixed:", 6) == 0) {
    c->accept = SSM_ACCEPT_FIXED;
    if (parse_int(v + 6, &c->accept_fixed) != 0)
      return rssm_fail(err, errlen, "bad number in accept=%s (expected fixed:A with an integer A)",
                       v);
  } else if (strncmp(v, "geom:", 5) == 0) {
    c->accept = SSM_ACCEPT_GEOM;
    if (parse_double(v + 5, &c->accept_p) != 0)
      return rssm_fail(err, errlen, "bad number in accept=%s (expected geom:P with a number P)", v);
  } else {
    return rssm_fail(err, errlen,
                     "unknown acceptance model accept=%s (use fixed:A, uniform or geom:P)", v);
  }
  return 0;
}

static int set_key(int key, const char *v, ssm_config *c, char *err, size_t errlen) {
  char qerr[160];
  switch (key) {
    case K_STATE: case K_CKPT: case K_HP: case K_LP: {
      qformat *f = key == K_STATE ? &c->state : key == K_CKPT ? &c->ckpt : key == K_HP ? &c->hp
                                                                                        : &c->lp;
      if (qformat_parse(v, f, qerr, sizeof qerr) != 0)
        return rssm_fail(err, errlen, "bad format in %s=%s: %s", key_names[key], v, qerr);
      return 0;
    }
    case K_L: case K_T: {
      int *dst = key == K_L ? &c->L : &c->T;
      if (parse_int(v, dst) != 0)
        return rssm_fail(err, errlen, "bad number in %s=%s (expected an integer)", key_names[key],
                         v);
      return 0;
    }
    case K_ACCEPT: return parse_accept(v, c, err, errlen);
    case K_GDN_U:
      if (strcmp(v, "recompute") == 0) c->gdn_u = SSM_GDN_U_RECOMPUTE;
      else if (strcmp(v, "cached") == 0) c->gdn_u = SSM_GDN_U_CACHED;
      else
        return rssm_fail(err, errlen, "bad value gdn_u=%s (use recompute or cached)", v);
      return 0;
    case K_SKIP:
      if (parse_double(v, &c->skip) != 0)
        return rssm_fail(err, errlen, "bad number in skip=%s (expected a threshold in (0, 1))", v);
      if (!(c->skip > 0.0 && c->skip < 1.0))
        return rssm_fail(err, errlen, "skip=%s: the threshold must be in (0, 1)", v);
      return 0;
    case K_NAME:
      if (strlen(v) >= SSM_NAME_MAX)
        return rssm_fail(err, errlen, "name= is longer than %d characters", SSM_NAME_MAX - 1);
      /* the label prints as name=LABEL in the effective experiment: it must parse back */
      for (const unsigned char *q = (const unsigned char *)v; *q; q++)
        if (*q <= ' ' || *q == 0x7f || *q == '=')
          return rssm_fail(err, errlen, "name=%s: a label has no spaces, control characters or "
                           "'='", v);
      snprintf(c->name, sizeof c->name, "%s", v);
      return 0;
  }
  return rssm_fail(err, errlen, "internal error: key %d", key);
}

/* Bits of one element's code in format f (scales aside: nvfp4 and mxfp4 are both 4). */
static double bits_per_element(const qformat *f) {
  qlayout l;
  return qlayout_of(f, 1, 64, &l) == 0 ? 8.0 * (double)l.code_bytes_per_row / 64.0 : 0.0;
}

/* The contradictions of section 6 and the ranges, given which keys were present. */
static int check(const ssm_config *c, const int *seen, char *err, size_t errlen) {
  const char *sn = ssm_strategy_name(c->strategy);
  if (c->strategy == SSM_CONVENTIONAL) {
    static const int not_conv[] = {K_CKPT, K_HP, K_LP, K_L, K_T, K_ACCEPT, K_GDN_U, K_SKIP};
    for (size_t i = 0; i < sizeof not_conv / sizeof not_conv[0]; i++)
      if (seen[not_conv[i]])
        return rssm_fail(err, errlen, "%s= does not apply to conventional (use state=FORMAT)",
                         key_names[not_conv[i]]);
    return 0;
  }
  if (seen[K_STATE])
    return rssm_fail(err, errlen,
                     "state= applies to conventional only; %s takes ckpt=F or hp=F1 lp=F2", sn);
  if (seen[K_CKPT] && (seen[K_HP] || seen[K_LP]))
    return rssm_fail(err, errlen, "ckpt= (one shared checkpoint) contradicts %s= (split precision)",
                     seen[K_HP] ? "hp" : "lp");
  if (seen[K_HP] && !seen[K_LP])
    return rssm_fail(err, errlen, "hp= without lp=: split precision needs both checkpoints");
  if (seen[K_LP] && !seen[K_HP])
    return rssm_fail(err, errlen, "lp= without hp=: split precision needs both checkpoints");
  if (c->split && bits_per_element(&c->hp) < bits_per_element(&c->lp)) {
    char f1[64], f2[64];
    qformat_to_string(&c->hp, f1, sizeof f1);
    qformat_to_string(&c->lp, f2, sizeof f2);
    return rssm_fail(err, errlen, "hp=%s is coarser than lp=%s (hp= is the high-precision "
                     "checkpoint: expected at least as many bits per element as lp=)", f1, f2);
  }
  if (c->gdn_u == SSM_GDN_U_CACHED && !c->split)
    return rssm_fail(err, errlen, "gdn_u=cached needs split precision (hp= and lp=)");
  if (c->L < 1) return rssm_fail(err, errlen, "L=%d: the replay window must be at least 1", c->L);
  if (c->strategy == SSM_REPLAY) {
    if (seen[K_T]) return rssm_fail(err, errlen, "T= applies to spec only");
    if (seen[K_ACCEPT]) return rssm_fail(err, errlen, "accept= applies to spec only");
    return 0;
  }
  if (c->T < 1) return rssm_fail(err, errlen, "T=%d: a spec round needs at least 1 draft", c->T);
  if (c->T > c->L)
    return rssm_fail(err, errlen, "T=%d > L=%d: the drafts of a round must fit in the window", c->T,
                     c->L);
  if (c->accept == SSM_ACCEPT_FIXED && (c->accept_fixed < 1 || c->accept_fixed > c->T))
    return rssm_fail(err, errlen, "accept=fixed:%d is outside [1, T=%d]", c->accept_fixed, c->T);
  if (c->accept == SSM_ACCEPT_GEOM && !(c->accept_p > 0.0 && c->accept_p <= 1.0))
    return rssm_fail(err, errlen, "accept=geom:%g: P must be in (0, 1]", c->accept_p);
  return 0;
}

int ssm_config_parse(const char *text, ssm_config *out, char *err, size_t errlen) {
  if (err && errlen > 0) err[0] = '\0';
  if (!text) return rssm_fail(err, errlen, "empty configuration string");
  ssm_config c;
  memset(&c, 0, sizeof c);
  qformat fp32 = {QF_FP32, 0, QR_RTN};
  c.state = c.ckpt = c.hp = c.lp = fp32;
  c.L = 16;
  c.T = 4;
  c.accept = SSM_ACCEPT_UNIFORM;
  c.accept_fixed = 1;
  c.accept_p = 1.0;
  c.gdn_u = SSM_GDN_U_RECOMPUTE;

  /* Tokens are separated by blanks; each fits in a small buffer or is rejected as too long. */
  char tok[256];
  const char *p = text;
  int ntok = 0, seen[K_COUNT] = {0};
  for (;;) {
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
    if (!*p) break;
    size_t n = strcspn(p, " \t\n\r");
    if (n >= sizeof tok) return rssm_fail(err, errlen, "token '%.40s...' is too long", p);
    memcpy(tok, p, n);
    tok[n] = '\0';
    p += n;
    if (ntok++ == 0) {
      if (strcmp(tok, "conventional") == 0) c.strategy = SSM_CONVENTIONAL;
      else if (strcmp(tok, "replay") == 0) c.strategy = SSM_REPLAY;
      else if (strcmp(tok, "spec") == 0) c.strategy = SSM_SPEC;
      else
        return rssm_fail(err, errlen, "unknown strategy '%s' (use conventional, replay or spec)",
                         tok);
      continue;
    }
    char *eq = strchr(tok, '=');
    if (!eq) return rssm_fail(err, errlen, "expected key=value, got '%s'", tok);
    *eq = '\0';
    const char *v = eq + 1;
    int key = -1;
    for (int k = 0; k < K_COUNT; k++)
      if (strcmp(tok, key_names[k]) == 0) key = k;
    if (key < 0)
      return rssm_fail(err, errlen,
                       "unknown key '%s' (keys: state ckpt hp lp L T accept gdn_u skip name)", tok);
    if (!*v) return rssm_fail(err, errlen, "missing value for key '%s'", tok);
    if (seen[key]) return rssm_fail(err, errlen, "duplicate key '%s'", tok);
    seen[key] = 1;
    if (set_key(key, v, &c, err, errlen) != 0) return -1;
  }
  if (ntok == 0) return rssm_fail(err, errlen, "empty configuration string");
  c.split = seen[K_HP] || seen[K_LP];
  if (c.strategy != SSM_SPEC) c.T = 0;
  if (c.strategy == SSM_CONVENTIONAL) c.L = 0;
  if (check(&c, seen, err, errlen) != 0) return -1;
  if (!seen[K_NAME]) ssm_config_to_string(&c, c.name, sizeof c.name);
  *out = c;
  return 0;
}

/* Shortest %g text that reads back as the same double, so that canonical strings round-trip. */
static void fmt_double(double x, char *buf, size_t n) {
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(buf, n, "%.*g", prec, x);
    if (strtod(buf, NULL) == x) return;
  }
}

void ssm_config_to_string(const ssm_config *c, char *buf, size_t buflen) {
  char s[320], f1[48], f2[48], num[40];
  size_t len = 0;
#define APPEND(...) len += (size_t)snprintf(s + len, len < sizeof s ? sizeof s - len : 0, __VA_ARGS__)
  APPEND("%s", ssm_strategy_name(c->strategy));
  if (c->strategy == SSM_CONVENTIONAL) {
    qformat_to_string(&c->state, f1, sizeof f1);
    APPEND(" state=%s", f1);
  } else {
    APPEND(" L=%d", c->L);
    if (c->strategy == SSM_SPEC) APPEND(" T=%d", c->T);
    if (c->split) {
      qformat_to_string(&c->hp, f1, sizeof f1);
      qformat_to_string(&c->lp, f2, sizeof f2);
      APPEND(" hp=%s lp=%s", f1, f2);
    } else {
      qformat_to_string(&c->ckpt, f1, sizeof f1);
      APPEND(" ckpt=%s", f1);
    }
    if (c->strategy == SSM_SPEC) {
      if (c->accept == SSM_ACCEPT_FIXED) APPEND(" accept=fixed:%d", c->accept_fixed);
      else if (c->accept == SSM_ACCEPT_UNIFORM) APPEND(" accept=uniform");
      else {
        fmt_double(c->accept_p, num, sizeof num);
        APPEND(" accept=geom:%s", num);
      }
    }
    if (c->gdn_u == SSM_GDN_U_CACHED) APPEND(" gdn_u=cached");
    if (c->skip > 0.0) {
      fmt_double(c->skip, num, sizeof num);
      APPEND(" skip=%s", num);
    }
  }
#undef APPEND
  if (buflen > 0) snprintf(buf, buflen, "%s", s);
}
