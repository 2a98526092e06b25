/* Experiment files and effective experiments (experiment.h). */
#define _XOPEN_SOURCE 700 /* realpath */
#include "src/driver/experiment.h"

#include <ini.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "src/io/parse_num.h"
#include "src/io/status.h"
#include "src/io/atomic_file.h"

#define MAX_SWEEPS 16
#define MAX_SWEEP_KEYS 8
#define MAX_SWEEP_VALUES 64
#define VAL_MAX 256
#define INIH_MAX_SECTION 50 /* inih's MAX_SECTION (ini.c): longer [section] names are cut */

typedef struct {
  char name[128];
  char template_[VAL_MAX];
  int template_line;
  int nkeys;
  char key[MAX_SWEEP_KEYS][32];
  int nval[MAX_SWEEP_KEYS];
  char val[MAX_SWEEP_KEYS][MAX_SWEEP_VALUES][32];
  int line[MAX_SWEEP_KEYS];
} sweep;

#define MAX_SECTIONS 512
/* keys of the root section that take one value (config, template and sweep.KEY have rules of
 * their own): a second line is an error, as in Python's configparser */
static const char *const root_keys[] = {"model", "tokens", "sequences", "steps", "seed", "block",
                                        "checkpoint_every", "reference"};
#define ROOT_KEYS ((int)(sizeof root_keys / sizeof root_keys[0]))

typedef struct {
  experiment *e;
  char dir[EXP_PATH_MAX];   /* the file's directory, for relative paths */
  const char *text, *pos;   /* the file's bytes, and where the reader is */
  int lineno;               /* lines handed to inih so far: the current line */
  int long_line;            /* first line longer than inih's buffer, 0 if none */
  int long_section;         /* first [section] name that inih would cut, 0 if none */
  int rd_config_line;       /* the reader's current [config NAME] header line, 0 if none */
  int rd_keys;              /* key lines the reader has seen in that section */
  char rd_config_name[64];
  int open_section;         /* first '[' line without its ']', 0 if none */
  int dup_section, dup_section_first; /* first section header seen twice, and its first line */
  int nsections;
  char section_seen[MAX_SECTIONS][INIH_MAX_SECTION + 8]; /* headers so far, as inih reads them */
  int section_seen_line[MAX_SECTIONS];
  int root_key_line[ROOT_KEYS]; /* line of each root key (root_keys[]), 0: not yet */
  int err_line;             /* line of the first error found by the handler */
  char msg[768];            /* first error found by the handler */
  char section_kind[16];    /* "", "config", "sweep" */
  char section_name[128];
  int section_has_spec;
  int section_line;
  int nsweep;
  sweep sweeps[MAX_SWEEPS];
} parse_ctx;

void experiment_init(experiment *e) {
  memset(e, 0, sizeof *e);
  e->sequences = -1;
  e->steps = -1;
  e->block = 256;
  e->checkpoint_every = 1024;
  char err[128];
  ssm_config_parse("conventional state=fp32", &e->reference, err, sizeof err);
}

void experiment_group_name(const char *label, char *out) {
  size_t i = 0;
  for (; label[i] && i + 1 < SSM_NAME_MAX; i++) out[i] = label[i] == '/' ? '_' : label[i];
  out[i] = '\0';
}

void experiment_where(const experiment *e, int line, const char *option, char *buf, size_t len) {
  if (e->file[0] && line > 0) snprintf(buf, len, "%s:%d", e->file, line);
  else if (e->file[0] && !option) snprintf(buf, len, "%s", e->file);
  else snprintf(buf, len, "%s", option ? option : "command line");
}

static int fail(parse_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(parse_ctx *c, const char *fmt, ...) {
  if (!c->msg[0]) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->msg, sizeof c->msg, fmt, ap);
    va_end(ap);
    c->err_line = c->lineno;
  }
  return 0; /* inih: an error on this line */
}

/* One line per call, so that lineno is the line inih is about to parse. A line longer than
 * inih's buffer is cut and reported, never split into two lines. */
/* inih calls the handler for key lines only, so a [config NAME] without any key never reaches it:
 * the reader reports it when the next section starts or the file ends. */
static void end_reader_section(parse_ctx *c) {
  if (c->rd_config_line && c->rd_keys == 0) {
    int l = c->lineno;
    c->lineno = c->rd_config_line;
    fail(c, "[config %s] has no 'spec = CONFIG' line", c->rd_config_name);
    c->lineno = l;
  }
  c->rd_config_line = 0;
}

/* A section header [NAME] (n bytes at name): a second [NAME] is an error, where inih would
 * silently continue the first section. */
static void note_section(parse_ctx *c, const char *name, size_t n) {
  while (n && (*name == ' ' || *name == '\t')) name++, n--;
  while (n && (name[n - 1] == ' ' || name[n - 1] == '\t')) n--;
  if (n > INIH_MAX_SECTION) return; /* reported as too long */
  for (int i = 0; i < c->nsections; i++)
    if (strlen(c->section_seen[i]) == n && memcmp(c->section_seen[i], name, n) == 0) {
      if (!c->dup_section) {
        c->dup_section = c->lineno;
        c->dup_section_first = c->section_seen_line[i];
      }
      return;
    }
  if (c->nsections == MAX_SECTIONS) return;
  snprintf(c->section_seen[c->nsections], sizeof c->section_seen[0], "%.*s", (int)n, name);
  c->section_seen_line[c->nsections++] = c->lineno;
}

static char *reader(char *str, int num, void *stream) {
  parse_ctx *c = stream;
  if (!*c->pos) {
    end_reader_section(c);
    return NULL;
  }
  const char *eol = strchr(c->pos, '\n');
  size_t len = eol ? (size_t)(eol - c->pos) + 1 : strlen(c->pos);
  c->lineno++;
  size_t keep = len;
  if (keep > (size_t)num - 1) {
    keep = (size_t)num - 1;
    if (!c->long_line) c->long_line = c->lineno;
  }
  memcpy(str, c->pos, keep);
  str[keep] = '\0';
  /* inih cuts section names to INIH_MAX_SECTION - 1 characters without a word: refuse them */
  const char *b = str;
  while (*b == ' ' || *b == '\t') b++;
  if (*b == '[') {
    const char *e = strchr(b, ']');
    size_t n = e ? (size_t)(e - b - 1) : strlen(b + 1);
    if (n >= INIH_MAX_SECTION && !c->long_section) c->long_section = c->lineno;
    if (!e && !c->open_section) c->open_section = c->lineno;
    if (e) note_section(c, b + 1, n);
    end_reader_section(c);
    if (strncmp(b + 1, "config ", 7) == 0) {
      c->rd_config_line = c->lineno;
      c->rd_keys = 0;
      snprintf(c->rd_config_name, sizeof c->rd_config_name, "%.*s", (int)(n > 7 ? n - 7 : 0), b + 8);
    }
  } else if (*b && *b != ';' && *b != '#' && *b != '\n' && *b != '\r') {
    c->rd_keys++;
  }
  c->pos += len;
  return str;
}

void experiment_absolute_path(char *path) {
  if (!path[0] || strncmp(path, "toy:", 4) == 0) return;
  char tmp[EXP_PATH_MAX], cwd[EXP_PATH_MAX];
  if (path[0] != '/') {
    if (!getcwd(cwd, sizeof cwd)) return;
    if (snprintf(tmp, sizeof tmp, "%s/%s", cwd, path) >= (int)sizeof tmp) return;
    snprintf(path, EXP_PATH_MAX, "%s", tmp);
  }
  /* without "..", "." and links where the path exists (PATH_MAX <= EXP_PATH_MAX) */
  if (realpath(path, tmp)) snprintf(path, EXP_PATH_MAX, "%s", tmp);
}

static void resolve(const parse_ctx *c, const char *value, char *out) {
  if (value[0] == '/' || strncmp(value, "toy:", 4) == 0 || !c->dir[0])
    snprintf(out, EXP_PATH_MAX, "%s", value);
  else if (snprintf(out, EXP_PATH_MAX, "%s/%s", c->dir, value) >= EXP_PATH_MAX)
    out[0] = '\0'; /* longer than any path: reported as missing */
  experiment_absolute_path(out);
}

static int parse_count(parse_ctx *c, const char *key, const char *value, int64_t lo, int64_t hi,
                       int64_t *out) {
  uint64_t v;
  if (rssm_parse_u64(value, &v) != 0 || v < (uint64_t)lo || v > (uint64_t)hi)
    return fail(c, "%s = '%s' (expected an integer in [%lld, %lld])", key, value, (long long)lo,
                (long long)hi);
  *out = (int64_t)v;
  return 1;
}

int experiment_add_config(experiment *e, const char *text, const char *label, int line,
                          char *err, size_t errlen) {
  if (e->nconfig >= EXP_MAX_CONFIGS) {
    snprintf(err, errlen, "more than %d configurations", EXP_MAX_CONFIGS);
    return RSSM_ERR_INPUT;
  }
  exp_config *x = &e->configs[e->nconfig];
  char why[256];
  if (ssm_config_parse(text, &x->cfg, why, sizeof why) != 0) {
    snprintf(err, errlen, "bad configuration '%.200s': %.200s", text, why);
    return RSSM_ERR_INPUT;
  }
  if (label) {
    /* no spaces, control characters or '=': a label must print as name=LABEL and parse back
     * (inih strips trailing whitespace such as \v; found by fuzz_experiment) */
    int bad_char = 0;
    for (const unsigned char *p = (const unsigned char *)label; *p; p++)
      if (*p <= ' ' || *p == 0x7f || *p == '=') bad_char = 1;
    if (!label[0] || strlen(label) >= SSM_NAME_MAX || bad_char) {
      snprintf(err, errlen,
               "configuration name '%s' (expected 1..%d characters, no spaces, control characters "
               "or '=')", label, SSM_NAME_MAX - 1);
      return RSSM_ERR_INPUT;
    }
    snprintf(x->cfg.name, sizeof x->cfg.name, "%s", label);
  }
  x->line = line;
  e->nconfig++;
  return RSSM_OK;
}

static int add_config(parse_ctx *c, const char *text, const char *label) {
  char why[512];
  if (experiment_add_config(c->e, text, label, c->lineno, why, sizeof why) != RSSM_OK)
    return fail(c, "%s", why);
  return 1;
}

static sweep *sweep_for(parse_ctx *c, const char *name) {
  for (int i = 0; i < c->nsweep; i++)
    if (strcmp(c->sweeps[i].name, name) == 0) return &c->sweeps[i];
  if (c->nsweep == MAX_SWEEPS) return NULL;
  sweep *s = &c->sweeps[c->nsweep++];
  memset(s, 0, sizeof *s);
  snprintf(s->name, sizeof s->name, "%s", name);
  return s;
}

static int sweep_key(parse_ctx *c, sweep *s, const char *key, const char *value) {
  if (!key[0] || strlen(key) >= sizeof s->key[0] || strpbrk(key, "{} \t"))
    return fail(c, "sweep key '%s' (expected a short name such as L or rounding)", key);
  for (int i = 0; i < s->nkeys; i++)
    if (strcmp(s->key[i], key) == 0) return fail(c, "sweep.%s is given twice", key);
  if (s->nkeys == MAX_SWEEP_KEYS) return fail(c, "more than %d sweep keys", MAX_SWEEP_KEYS);
  int k = s->nkeys;
  const char *p = value;
  s->nval[k] = 0;
  while (1) {
    while (*p == ' ' || *p == '\t') p++;
    const char *q = p;
    while (*q && *q != ',') q++;
    const char *end = q;
    while (end > p && (end[-1] == ' ' || end[-1] == '\t')) end--;
    size_t n = (size_t)(end - p);
    if (n == 0 || n >= sizeof s->val[0][0])
      return fail(c, "sweep.%s = '%s' (expected a comma-separated list of values)", key, value);
    if (s->nval[k] == MAX_SWEEP_VALUES)
      return fail(c, "sweep.%s has more than %d values", key, MAX_SWEEP_VALUES);
    memcpy(s->val[k][s->nval[k]], p, n);
    s->val[k][s->nval[k]][n] = '\0';
    s->nval[k]++;
    if (!*q) break;
    p = q + 1;
  }
  snprintf(s->key[k], sizeof s->key[k], "%s", key);
  s->line[k] = c->lineno;
  s->nkeys++;
  return 1;
}

static int handler(void *user, const char *section, const char *name, const char *value) {
  parse_ctx *c = user;
  experiment *e = c->e;
  /* a new section: classify it once */
  char want[160];
  snprintf(want, sizeof want, "%s%s%s", c->section_kind, c->section_kind[0] ? " " : "",
           c->section_name);
  if (strcmp(want, section) != 0) {
    if (c->section_kind[0] && strcmp(c->section_kind, "config") == 0 && !c->section_has_spec) {
      /* reported at the section's own line */
      int l = c->lineno;
      c->lineno = c->section_line;
      fail(c, "[config %s] has no 'spec = CONFIG' line", c->section_name);
      c->lineno = l;
    }
    c->section_has_spec = 0;
    c->section_line = c->lineno;
    if (strncmp(section, "config ", 7) == 0 && section[7]) {
      snprintf(c->section_kind, sizeof c->section_kind, "config");
      snprintf(c->section_name, sizeof c->section_name, "%s", section + 7);
    } else if (strncmp(section, "sweep ", 6) == 0 && section[6]) {
      snprintf(c->section_kind, sizeof c->section_kind, "sweep");
      snprintf(c->section_name, sizeof c->section_name, "%s", section + 6);
    } else {
      c->section_kind[0] = '\0';
      snprintf(c->section_name, sizeof c->section_name, "%s", section);
      if (section[0])
        return fail(c, "unknown section [%s] (expected [config NAME] or [sweep NAME])", section);
    }
  }
  if (strcmp(c->section_kind, "config") == 0) {
    if (strcmp(name, "spec") != 0)
      return fail(c, "unknown key '%s' in [config %s] (expected spec)", name, c->section_name);
    if (c->section_has_spec) return fail(c, "[config %s] has two spec lines", c->section_name);
    c->section_has_spec = 1;
    return add_config(c, value, c->section_name);
  }
  if (strcmp(c->section_kind, "sweep") == 0 || (!section[0] && (strcmp(name, "template") == 0 ||
                                                               strncmp(name, "sweep.", 6) == 0))) {
    sweep *s = sweep_for(c, c->section_name);
    if (!s) return fail(c, "more than %d sweeps", MAX_SWEEPS);
    if (strcmp(name, "template") == 0) {
      if (s->template_[0]) return fail(c, "a second template in the same sweep");
      if (strlen(value) >= sizeof s->template_) return fail(c, "template is too long");
      snprintf(s->template_, sizeof s->template_, "%s", value);
      s->template_line = c->lineno;
      return 1;
    }
    if (strncmp(name, "sweep.", 6) == 0) return sweep_key(c, s, name + 6, value);
    return fail(c, "unknown key '%s' in [sweep %s] (expected template or sweep.KEY)", name,
                c->section_name);
  }
  for (int k = 0; k < ROOT_KEYS; k++)
    if (strcmp(name, root_keys[k]) == 0) {
      if (c->root_key_line[k])
        return fail(c, "%s is given twice (first on line %d; expected one '%s = ...' line)", name,
                    c->root_key_line[k], name);
      c->root_key_line[k] = c->lineno;
    }
  if (strcmp(name, "model") == 0) {
    resolve(c, value, e->model);
    e->model_line = c->lineno;
  } else if (strcmp(name, "tokens") == 0) {
    resolve(c, value, e->tokens);
    e->tokens_line = c->lineno;
  } else if (strcmp(name, "sequences") == 0) {
    e->sequences_line = c->lineno;
    return parse_count(c, name, value, 1, 1 << 20, &e->sequences);
  } else if (strcmp(name, "steps") == 0) {
    e->steps_line = c->lineno;
    return parse_count(c, name, value, 1, INT64_C(1) << 30, &e->steps);
  } else if (strcmp(name, "seed") == 0) {
    if (rssm_parse_u64(value, &e->seed) != 0)
      return fail(c, "seed = '%s' (expected a uint64, decimal or 0x hex)", value);
  } else if (strcmp(name, "block") == 0) {
    return parse_count(c, name, value, 1, 1 << 20, &e->block);
  } else if (strcmp(name, "checkpoint_every") == 0) {
    return parse_count(c, name, value, 1, INT64_C(1) << 40, &e->checkpoint_every);
  } else if (strcmp(name, "reference") == 0) {
    char why[256];
    if (ssm_config_parse(value, &e->reference, why, sizeof why) != 0)
      return fail(c, "bad reference configuration '%s': %s", value, why);
  } else if (strcmp(name, "config") == 0) {
    return add_config(c, value, NULL);
  } else {
    return fail(c, "unknown key '%s' (expected model, tokens, sequences, steps, seed, reference, "
                "config, template, sweep.KEY, block or checkpoint_every)", name);
  }
  return 1;
}

/* Substitute every {KEY} of the template with the chosen values. */
static int expand_one(parse_ctx *c, const sweep *s, const int *choice) {
  char out[VAL_MAX * 2];
  size_t n = 0;
  const char *p = s->template_;
  int used[MAX_SWEEP_KEYS] = {0};
  while (*p) {
    if (*p == '{') {
      const char *q = strchr(p, '}');
      int k = -1;
      if (q)
        for (int i = 0; i < s->nkeys; i++)
          if (strlen(s->key[i]) == (size_t)(q - p - 1) && strncmp(s->key[i], p + 1, (size_t)(q - p - 1)) == 0)
            k = i;
      if (k < 0) {
        c->lineno = s->template_line;
        return fail(c, "template '%s': placeholder at '%.20s' has no sweep.KEY line", s->template_, p);
      }
      used[k] = 1;
      const char *v = s->val[k][choice[k]];
      size_t vl = strlen(v);
      if (n + vl >= sizeof out) return fail(c, "expanded template is too long");
      memcpy(out + n, v, vl);
      n += vl;
      p = q + 1;
    } else {
      if (n + 1 >= sizeof out) return fail(c, "expanded template is too long");
      out[n++] = *p++;
    }
  }
  out[n] = '\0';
  for (int i = 0; i < s->nkeys; i++)
    if (!used[i]) {
      c->lineno = s->line[i];
      return fail(c, "sweep.%s is not used by the template (expected {%s} in it)", s->key[i], s->key[i]);
    }
  c->lineno = s->template_line;
  return add_config(c, out, NULL);
}

static int expand_sweeps(parse_ctx *c) {
  for (int si = 0; si < c->nsweep; si++) {
    const sweep *s = &c->sweeps[si];
    if (!s->template_[0]) {
      c->lineno = s->nkeys ? s->line[0] : 0;
      return fail(c, "sweep%s%s has sweep.KEY lines but no template", s->name[0] ? " " : "", s->name);
    }
    int choice[MAX_SWEEP_KEYS] = {0};
    while (1) {
      if (!expand_one(c, s, choice)) return 0;
      /* odometer, last key fastest */
      int k = s->nkeys - 1;
      while (k >= 0 && ++choice[k] == s->nval[k]) choice[k--] = 0;
      if (k < 0) break;
    }
  }
  return 1;
}

/* The first error of the file, by line: the reader's (long line, long or unterminated or repeated
 * section), the handler's, or inih's own syntax error. */
static int report(const parse_ctx *c, const char *path, int line, char *err, size_t errlen) {
  int msg_line = c->msg[0] ? c->err_line : 0;
  struct {
    int at;
    char text[900];
  } first = {0, ""};
#define CANDIDATE(L, ...)                                                  \
  do {                                                                     \
    if ((L) > 0 && (!first.at || (L) < first.at)) {                       \
      first.at = (L);                                                      \
      snprintf(first.text, sizeof first.text, __VA_ARGS__);                \
    }                                                                      \
  } while (0)
  CANDIDATE(c->long_line, "line longer than %d characters", INI_MAX_LINE - 2);
  CANDIDATE(c->long_section, "section name longer than %d characters", INIH_MAX_SECTION - 1);
  CANDIDATE(c->open_section, "section header without its closing ']' (expected [config NAME] or "
            "[sweep NAME])");
  CANDIDATE(c->dup_section, "section repeated (first on line %d; expected each [section] once)",
            c->dup_section_first);
  CANDIDATE(msg_line, "%s", c->msg);
  CANDIDATE(line, "syntax error (expected 'key = value', '[section]' or a # comment)");
#undef CANDIDATE
  if (!first.at) return RSSM_OK;
  snprintf(err, errlen, "%s:%d: %s", path, first.at, first.text);
  return RSSM_ERR_INPUT;
}

int experiment_parse_file(const char *path, experiment *e, char *err, size_t errlen) {
  unsigned char *text;
  int64_t len;
  int rc = read_whole_file(path, 1 << 24, &text, &len, err, errlen);
  if (rc != RSSM_OK) return rc;
  if ((int64_t)strlen((const char *)text) != len) {
    free(text);
    snprintf(err, errlen, "%s: contains a NUL byte (expected an INI text file)", path);
    return RSSM_ERR_INPUT;
  }
  parse_ctx *c = calloc(1, sizeof *c);
  if (!c) {
    free(text);
    snprintf(err, errlen, "%s: out of memory", path);
    return RSSM_ERR_IO;
  }
  snprintf(e->file, sizeof e->file, "%s", path);
  c->e = e;
  const char *slash = strrchr(path, '/');
  if (slash) snprintf(c->dir, sizeof c->dir, "%.*s", (int)(slash - path), path);
  if (slash == path) snprintf(c->dir, sizeof c->dir, "/");
  c->text = c->pos = (const char *)text;
  int line = ini_parse_stream(reader, c, handler, c);
  /* a [config] section at the end of the file */
  if (!c->msg[0] && strcmp(c->section_kind, "config") == 0 && !c->section_has_spec) {
    c->lineno = c->section_line;
    fail(c, "[config %s] has no 'spec = CONFIG' line", c->section_name);
  }
  if (!c->msg[0] && !c->long_line && !c->long_section && !c->open_section && !c->dup_section &&
      line == 0)
    expand_sweeps(c);
  rc = report(c, path, line, err, errlen);
  free(c);
  free(text);
  return rc;
}

int experiment_validate(const experiment *e, char *err, size_t errlen) {
  char where[EXP_PATH_MAX + 32];
  if (!e->model[0]) {
    experiment_where(e, 0, "--model", where, sizeof where);
    snprintf(err, errlen, "%s: no model (expected 'model = PATH' or toy:gdn / toy:mamba2)", where);
    return RSSM_ERR_INPUT;
  }
  if (!e->tokens[0]) {
    experiment_where(e, 0, "--tokens", where, sizeof where);
    snprintf(err, errlen, "%s: no token source (expected 'tokens = FILE.npy|FILE.tok.zst')", where);
    return RSSM_ERR_INPUT;
  }
  if (e->sequences < 1 || e->steps < 1) {
    experiment_where(e, 0, e->sequences < 1 ? "--sequences" : "--steps", where, sizeof where);
    snprintf(err, errlen, "%s: no %s (expected '%s = N' or %s N)", where,
             e->sequences < 1 ? "sequences" : "steps", e->sequences < 1 ? "sequences" : "steps",
             e->sequences < 1 ? "--sequences" : "--steps");
    return RSSM_ERR_INPUT;
  }
  if (e->nconfig == 0) {
    experiment_where(e, 0, "--config", where, sizeof where);
    snprintf(err, errlen, "%s: no configurations (expected 'config = ...', [config NAME] or a sweep)",
             where);
    return RSSM_ERR_INPUT;
  }
  for (int i = 0; i < e->nconfig; i++) {
    char gi[SSM_NAME_MAX], gj[SSM_NAME_MAX];
    experiment_group_name(e->configs[i].cfg.name, gi);
    for (int j = 0; j < i; j++) {
      experiment_group_name(e->configs[j].cfg.name, gj);
      if (strcmp(gi, gj) == 0) {
        experiment_where(e, e->configs[i].line, "--config", where, sizeof where);
        snprintf(err, errlen, "%s: configuration name '%s' is used twice (expected unique names; "
                 "add name=LABEL)", where, e->configs[i].cfg.name);
        return RSSM_ERR_INPUT;
      }
    }
  }
  return RSSM_OK;
}

static void append(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void append(char **buf, size_t *len, size_t *cap, const char *fmt, ...) {
  if (!*buf) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if (*len + (size_t)n + 1 > *cap) {
    size_t nc = (*cap + (size_t)n + 1) * 2;
    char *p = realloc(*buf, nc);
    if (!p) {
      free(*buf);
      *buf = NULL;
      return;
    }
    *buf = p;
    *cap = nc;
  }
  va_start(ap, fmt);
  vsnprintf(*buf + *len, *cap - *len, fmt, ap);
  va_end(ap);
  *len += (size_t)n;
}

char *experiment_to_text(const experiment *e) {
  size_t len = 0, cap = 4096;
  char *buf = malloc(cap);
  if (!buf) return NULL;
  buf[0] = '\0';
  char spec[256];
  append(&buf, &len, &cap, "model = %s\ntokens = %s\nsequences = %lld\nsteps = %lld\nseed = %llu\n",
         e->model, e->tokens, (long long)e->sequences, (long long)e->steps,
         (unsigned long long)e->seed);
  ssm_config_to_string(&e->reference, spec, sizeof spec);
  append(&buf, &len, &cap, "reference = %s\nblock = %lld\ncheckpoint_every = %lld\n", spec,
         (long long)e->block, (long long)e->checkpoint_every);
  for (int i = 0; i < e->nconfig; i++) {
    ssm_config_to_string(&e->configs[i].cfg, spec, sizeof spec);
    if (strcmp(spec, e->configs[i].cfg.name) == 0)
      append(&buf, &len, &cap, "config = %s\n", spec);
    else
      append(&buf, &len, &cap, "config = %s name=%s\n", spec, e->configs[i].cfg.name);
  }
  return buf;
}
