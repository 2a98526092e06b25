/* `replayssm bench e2e` (bench_e2e.h, docs/gpu-runtime.md "bench e2e").
 *
 * For a model (a Hugging Face directory, or random weights at the shape of a config.json) and
 * every K of --streams and every configuration set of --configs: one mc_batch of R = C x K rows
 * (C configurations of the set times K token streams), W untimed warm-up steps (the first one
 * captures the CUDA Graph), then N timed steps in blocks; the steps are the run engine's
 * teacher-forced steps (K tokens in, per-row metrics against configuration 0 out), submitted as
 * the engine submits them: a block is one mc_batch_steps, one host synchronisation. Reported: the
 * median over blocks of the time per step, streams per second = R / (time per step), and the byte
 * model of docs/gpu-runtime.md (weights + SSM state traffic + KV read per step) against the
 * device-to-device copy bandwidth measured in the same process. Optional isolated measurements
 * (--micro on, the default for --shape) of the step's GEMMs (cuBLAS, the model's shapes on the
 * runtime's row tile, mc_tile.h, fp32 SGEMM and bf16 GemmEx) and of the SSM engine (ssm_cuda_step
 * at B = K per configuration) split the step time. */
#include <errno.h>
#include <gsl/gsl_statistics_double.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "quant/format.h"
#include "src/bench_e2e/bench_e2e.h"
#include "src/bench_e2e/bench_spec.h"
#include "src/bench_e2e/e2e_bytes.h"
#include "src/bench_e2e/e2e_micro.h"
#include "src/bench_e2e/e2e_transformers.h"
#include "src/io/cli_opts.h"
#include "src/io/parse_num.h"
#include "src/io/status.h"
#include "src/model/model.h"
#include "src/model/model_random.h"
#include "src/model_cuda/mc_model.h"
#include "src/ssm/ssm_config.h"

#ifdef RSSM_HAVE_CUDA
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "src/ssm_cuda/ssm_cuda.h"
#endif

#define CMD "bench e2e"
#define USAGE                                                                                  \
  "bench e2e (--model DIR | --shape qwen3.5-4b|nemotron-3-nano-4b|DIR) "            \
  "[--streams K1,K2,..] [--configs 'CFG;CFG;..']... [--steps N] [--warmup W] [--block B] "    \
  "[--gemm fp32|bf16] [--graph on|off] [--micro on|off] [--profile on|off] [--seed S] "        \
  "[--spec T1,T2 [--spec-out FILE.csv]] "                                                      \
  "[--threads N] "                                                                             \
  "[--label NAME] [--out FILE.csv] [--transformers PYTHON [--transformers-json FILE]] "         \
  "[--dry-run]"

#define MAX_SETS 16
#define MAX_STREAMS 16
#define MAX_CFG 16

typedef struct {
  const char *model_dir, *shape, *streams, *steps, *warmup, *block, *gemm, *graph, *micro, *profile,
      *seed, *transformers, *hf_script, *hf_json,
      *threads, *label, *out, *spec, *spec_out;
  const char *sets[MAX_SETS];
  int nsets, dry_run;
} bench_args;

#define STR_OPT(opt, field, m, text) \
  {.name = opt, .type = CLI_STR, .dest = &a->field, .meta = m, .flags = CLI_ONCE, .help = text}

/* Returns 0 to go on, or the exit status with *done set (0 after --help, 2 after a message). */
static int parse_args(int argc, char **argv, bench_args *a, int *done) {
  memset(a, 0, sizeof *a);
  const cli_opt opts[] = {
      STR_OPT("--model", model_dir, "DIR", "a Hugging Face model directory (config.json + safetensors)"),
      STR_OPT("--shape", shape, "S",
              "random weights (src/model/model_random.h) at the shape of\n"
              "data/shapes/S/config.json (qwen3.5-4b, nemotron-3-nano-4b; paths\n"
              "relative to the working directory) or of DIR/config.json"),
      STR_OPT("--streams", streams, "LIST", "token streams K per batch, comma separated (default 16,64)"),
      {.name = "--configs", .type = CLI_LIST, .dest = a->sets, .meta = "SET", .max = MAX_SETS,
       .count = &a->nsets,
       .help = "one batch's configurations, ';' separated (SPEC 6 strings, no spec);\n"
               "repeat for more sets. Rows R = C x K. Default: 'conventional\n"
               "state=fp32' and, with --model, also 'conventional state=fp32;replay\n"
               "L=16 ckpt=fp32'"},
      STR_OPT("--steps", steps, "N",
              "timed steps (default 64), in blocks of --block B (default 8);\n"
              "the reported time per step is the median over blocks"),
      STR_OPT("--warmup", warmup, "W", "untimed steps first (default 8; the first captures the CUDA Graph)"),
      STR_OPT("--block", block, "B", "timed steps per measured block (default 8)"),
      STR_OPT("--gemm", gemm, "P",
              "fp32 (default): fp32 weights, cublasSgemm without TF32; bf16: bf16\n"
              "weights, activations rounded to bf16 at GEMM input, fp32\n"
              "accumulation and output (bf16 GEMMs available: mc_gemm_prec);\n"
              "'fp32,bf16' measures both with one model"),
      STR_OPT("--graph", graph, "on|off", "replay each step from a CUDA Graph (default on)"),
      STR_OPT("--micro", micro, "on|off",
              "also time the step's GEMMs and SSM engine alone (default: on with\n"
              "--shape, off with --model)"),
      STR_OPT("--profile", profile, "on|off",
              "then run the batch again for up to 8 launched steps with\n"
              "RSSM_CUDA_PROFILE=1: GPU time per block on stderr (default off)"),
      STR_OPT("--transformers", transformers, "PYTHON",
              "with --model: afterwards, in the same call, time transformers'\n"
              "own cached decoding of the same model, K and steps with PYTHON\n"
              "scripts/bench/transformers_decode.py, print the speed-ups and fill\n"
              "the CSV's transformers columns"),
      STR_OPT("--transformers-script", hf_script, "FILE",
              "the script --transformers runs (default scripts/bench/transformers_decode.py)"),
      STR_OPT("--transformers-json", hf_json, "FILE", "keep the transformers timings' JSON here"),
      STR_OPT("--seed", seed, "S", "seed of the random weights and tokens (default 1)"),
      STR_OPT("--threads", threads, "N", "threads filling random weights (default: all cores)"),
      STR_OPT("--label", label, "NAME", "model name in the output (default: the directory or shape name)"),
      STR_OPT("--out", out, "FILE", "append one CSV row per batch (header when the file is new)"),
      STR_OPT("--spec", spec, "LIST",
              "also time spec rounds of each T (comma separated, e.g. 4,8) for\n"
              "the acceptance models fixed:T, uniform and geom:0.7 against\n"
              "standard steps, at every K, fp32 GEMMs: committed tokens per second"),
      STR_OPT("--spec-out", spec_out, "FILE", "append one CSV row per spec case"),
      {.name = "--dry-run", .type = CLI_FLAG, .dest = &a->dry_run,
       .help = "print the byte model of every batch from the config alone (no\n"
               "device, no weights) and exit"},
  };
  const cli_spec spec = {
      .cmd = CMD,
      .usage = USAGE,
      .about = "Teacher-forced decoding throughput of the GPU runtime (docs/gpu-runtime.md).",
      .epilog =
          "streams/s = R x steps / seconds: every row (stream x configuration) decodes one token\n"
          "per step. Byte model per step: weights (as stored for the GEMMs) + SSM state read and\n"
          "write in each configuration's format + conv windows + K/V read up to the position;\n"
          "fraction = (bytes / copy bandwidth) / time per step, the copy bandwidth being\n"
          "2 x bytes / time of a device-to-device cudaMemcpy of 1 GiB measured in this process.\n"
          "exit status: 0 ok, 2 bad usage or no CUDA device, 1 CUDA or I/O failure",
      .opts = opts,
      .nopts = (int)(sizeof opts / sizeof opts[0]),
  };
  return cli_parse_or_help(&spec, argc, argv, done);
}
#undef STR_OPT

static int parse_count(const char *text, const char *what, int64_t lo, int64_t hi, int64_t *out) {
  uint64_t u = 0;
  if (rssm_parse_u64(text, &u) != 0 || u < (uint64_t)lo || u > (uint64_t)hi) {
    cli_error(CMD, "%s '%s' (expected an integer in [%" PRId64 ", %" PRId64 "])", what, text, lo,
              hi);
    return -1;
  }
  *out = (int64_t)u;
  return 0;
}

static int parse_onoff(const char *text, const char *what, int def, int *out) {
  if (!text) {
    *out = def;
    return 0;
  }
  if (strcmp(text, "on") == 0) *out = 1;
  else if (strcmp(text, "off") == 0) *out = 0;
  else {
    cli_error(CMD, "%s '%s' (expected on or off)", what, text);
    return -1;
  }
  return 0;
}

/* One configuration set: C parsed configurations. */
typedef struct {
  ssm_config cfg[MAX_CFG];
  int C;
  char label[1024]; /* the configurations' names joined by '|' */
} config_set;

static int parse_set(const char *text, config_set *s) {
  memset(s, 0, sizeof *s);
  char buf[2048];
  if (strlen(text) >= sizeof buf) {
    cli_error(CMD, "--configs longer than %zu characters", sizeof buf - 1);
    return -1;
  }
  snprintf(buf, sizeof buf, "%s", text);
  char *save = NULL;
  for (char *tok = strtok_r(buf, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
    while (*tok == ' ') tok++;
    if (!*tok) continue;
    if (s->C == MAX_CFG) {
      cli_error(CMD, "more than %d configurations in one --configs set", MAX_CFG);
      return -1;
    }
    char err[256];
    if (ssm_config_parse(tok, &s->cfg[s->C], err, sizeof err) != 0) {
      cli_error(CMD, "--configs: '%s': %s", tok, err);
      return -1;
    }
    if (s->cfg[s->C].strategy == SSM_SPEC) {
      cli_error(CMD, "--configs: '%s': a set's batch plays steps; spec configurations play "
                "rounds: time them with --spec T1,T2", tok);
      return -1;
    }
    size_t n = strlen(s->label);
    snprintf(s->label + n, sizeof s->label - n, "%s%s", n ? "|" : "", s->cfg[s->C].name);
    s->C++;
  }
  if (s->C == 0) {
    cli_error(CMD, "--configs '%s' holds no configuration", text);
    return -1;
  }
  return 0;
}

/* ------------------------------------------------------------------ byte model ------------- */

/* issue 18's bar for the fixtures at K = 16, C = 1 (scripts/bench/join_e2e.py: SPEEDUP_TARGET);
 * issue 7's was 30x */
#define SPEEDUP_TARGET 40.0

/* ------------------------------------------------------------------ helpers ---------------- */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* MemAvailable of /proc/meminfo in bytes, or -1 */
static int64_t host_available(void) {
  FILE *f = fopen("/proc/meminfo", "r");
  if (!f) return -1;
  char line[256];
  int64_t kb = -1;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "MemAvailable: %" SCNd64 " kB", &kb) == 1) break;
  fclose(f);
  return kb < 0 ? -1 : kb * 1024;
}

static uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

static const char *base_name(const char *p) {
  const char *s = strrchr(p, '/');
  if (s && s[1]) return s + 1;
  if (s) { /* trailing slash: the component before it */
    static char buf[256];
    size_t n = (size_t)(s - p);
    const char *q = p + n;
    while (q > p && q[-1] != '/') q--;
    snprintf(buf, sizeof buf, "%.*s", (int)(p + n - q), q);
    return buf;
  }
  return p;
}

/* ------------------------------------------------------------------ the measurement -------- */

#ifdef RSSM_HAVE_CUDA

#endif /* RSSM_HAVE_CUDA */

/* ------------------------------------------------------------------ the command ------------ */

typedef struct {
  int64_t warmup, steps, block;
  int graph, micro, profile, bf16, dry_run;
  uint64_t seed;
  const char *label, *source, *out;
} run_opts;

static const char CSV_HEADER[] =
    "model,source,gemm,graph,K,C,rows,configs,warmup,steps,ms_per_step,ms_per_step_min,"
    "streams_per_s,weight_bytes,state_bytes,kv_bytes,bytes_per_step,copy_GBps,limit_ms,"
    "fraction_of_limit,gemm_ms_fp32,gemm_ms_bf16,gemm_tflops_fp32,gemm_tflops_bf16,ssm_ms,"
    "transformers_ms_per_step,speedup_vs_transformers\n";

static int append_csv(const char *path, const char *row) {
  FILE *f = fopen(path, "a+");
  if (!f) {
    cli_error(CMD, "%s: cannot open for appending (%s)", path, strerror(errno));
    return 1;
  }
  fseek(f, 0, SEEK_END);
  int ok = 1;
  if (ftell(f) == 0) ok = fputs(CSV_HEADER, f) >= 0;
  ok = ok && fputs(row, f) >= 0;
  ok = (fclose(f) == 0) && ok;
  if (!ok) {
    cli_error(CMD, "%s: write failed", path);
    return 1;
  }
  return 0;
}

/* One measured batch, kept until the transformers baseline (if any) has run. */
typedef struct {
  int K, R, C;
  int bf16;
  double ms;      /* replayssm ms per step */
  char csv[4096]; /* the CSV row without the transformers columns and the newline */
} result_row;

/* What one bench e2e call measures, shared by its steps. */
typedef struct {
  bench_args a;
  run_opts o;
  int precs[2], nprec; /* GEMM precisions, 0 fp32, 1 bf16, in the order given */
  int Ks[MAX_STREAMS], nK;
  const config_set *sets; /* [nsets] */
  int nsets;
  int threads;
  const char *hf_script;
  int spec_T[MAX_STREAMS], nspec; /* --spec */
  char shape_dir[4096];
} e2e_ctx;

/* The command line into ctx: -1 to go on, or the exit status (0 after --help, 2 after a
 * message). */
static int e2e_prepare(int argc, char **argv, e2e_ctx *ctx) {
  bench_args a;
  int done;
  int rc = parse_args(argc, argv, &a, &done);
  if (done) return rc;
  if (!a.model_dir == !a.shape) {
    cli_error(CMD, "give exactly one of --model DIR and --shape S (usage: replayssm " USAGE ")");
    return 2;
  }
  run_opts o;
  memset(&o, 0, sizeof o);
  int64_t v64 = 0;
  o.steps = 64;
  o.warmup = 8;
  o.block = 8;
  o.seed = 1;
  o.dry_run = a.dry_run;
  if (a.steps && parse_count(a.steps, "--steps", 1, 1 << 20, &o.steps)) return 2;
  if (a.warmup && parse_count(a.warmup, "--warmup", 1, 1 << 24, &o.warmup)) return 2;
  if (a.block && parse_count(a.block, "--block", 1, 1 << 20, &o.block)) return 2;
  if (o.block > o.steps) o.block = o.steps;
  if (a.seed && rssm_parse_u64(a.seed, &o.seed) != 0) {
    cli_error(CMD, "--seed '%s' (expected an unsigned integer)", a.seed);
    return 2;
  }
  int threads = 0;
  if (a.threads) {
    if (parse_count(a.threads, "--threads", 1, 64, &v64)) return 2;
    threads = (int)v64;
  }
  if (parse_onoff(a.graph, "--graph", 1, &o.graph) ||
      parse_onoff(a.micro, "--micro", a.shape != NULL, &o.micro) ||
      parse_onoff(a.profile, "--profile", 0, &o.profile))
    return 2;
  const char *hf_script = a.hf_script ? a.hf_script : "scripts/bench/transformers_decode.py";
  if ((a.hf_script || a.hf_json) && !a.transformers) {
    cli_error(CMD, "--transformers-script and --transformers-json need --transformers PYTHON");
    return 2;
  }
  if (a.transformers && !a.model_dir) {
    cli_error(CMD, "--transformers needs --model DIR (transformers loads the checkpoint)");
    return 2;
  }
  if (a.transformers && !a.dry_run && access(hf_script, R_OK) != 0) {
    cli_error(CMD, "--transformers: %s: cannot read (%s; run from the repository root or give "
              "--transformers-script)", hf_script, strerror(errno));
    return 2;
  }
  int precs[2], nprec = 0; /* 0 fp32, 1 bf16, in the order given */
  {
    char buf[64];
    snprintf(buf, sizeof buf, "%s", a.gemm ? a.gemm : "fp32");
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
      const int p = strcmp(t, "fp32") == 0 ? 0 : strcmp(t, "bf16") == 0 ? 1 : -1;
      if (p < 0 || nprec == 2 || (nprec == 1 && precs[0] == p)) {
        cli_error(CMD, "--gemm '%s' (expected fp32, bf16 or both, comma separated)", a.gemm);
        return 2;
      }
      precs[nprec++] = p;
    }
    if (nprec == 0) {
      cli_error(CMD, "--gemm '%s' (expected fp32, bf16 or both, comma separated)", a.gemm);
      return 2;
    }
  }
  int Ks[MAX_STREAMS], nK = 0;
  {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", a.streams ? a.streams : "16,64");
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
      if (nK == MAX_STREAMS) {
        cli_error(CMD, "--streams: more than %d values", MAX_STREAMS);
        return 2;
      }
      if (parse_count(t, "--streams value", 1, 4096, &v64)) return 2;
      Ks[nK++] = (int)v64;
    }
    if (nK == 0) {
      cli_error(CMD, "--streams '%s' holds no value", a.streams);
      return 2;
    }
  }
  int spec_T[MAX_STREAMS], nspec = 0;
  if (a.spec) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", a.spec);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
      if (nspec == MAX_STREAMS) {
        cli_error(CMD, "--spec: more than %d values", MAX_STREAMS);
        return 2;
      }
      if (parse_count(t, "--spec value", 1, 64, &v64)) return 2;
      spec_T[nspec++] = (int)v64;
    }
    if (nspec == 0) {
      cli_error(CMD, "--spec '%s' holds no value", a.spec);
      return 2;
    }
  }
  if (a.spec_out && !a.spec) {
    cli_error(CMD, "--spec-out needs --spec T1,T2");
    return 2;
  }
  static config_set sets[MAX_SETS];
  int nsets = 0;
  if (a.nsets == 0) {
    a.sets[a.nsets++] = "conventional state=fp32";
    if (a.model_dir) a.sets[a.nsets++] = "conventional state=fp32;replay L=16 ckpt=fp32";
  }
  for (int i = 0; i < a.nsets; i++)
    if (parse_set(a.sets[i], &sets[nsets++])) return 2;

  char *shape_dir = ctx->shape_dir; /* o.label may point into it: it must outlive this call */
  shape_dir[0] = '\0';
  if (a.model_dir) {
    o.source = "checkpoint";
    o.label = a.label ? a.label : base_name(a.model_dir);
  } else {
    o.source = "random";
    const char *known[] = {"qwen3.5-4b", "nemotron-3-nano-4b"};
    int is_known = 0;
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
      if (strcmp(a.shape, known[i]) == 0) is_known = 1;
    snprintf(shape_dir, sizeof ctx->shape_dir, is_known ? "data/shapes/%s" : "%s", a.shape);
    o.label = a.label ? a.label : base_name(shape_dir);
  }
  ctx->a = a;
  ctx->o = o;
  memcpy(ctx->precs, precs, sizeof precs);
  ctx->nprec = nprec;
  memcpy(ctx->Ks, Ks, sizeof Ks);
  ctx->nK = nK;
  ctx->sets = sets;
  ctx->nsets = nsets;
  ctx->threads = threads;
  ctx->hf_script = hf_script;
  memcpy(ctx->spec_T, spec_T, sizeof spec_T);
  ctx->nspec = nspec;
  return -1;
}

/* --dry-run: the byte model of every batch from the config alone, no device. */
static int e2e_dry_run(const e2e_ctx *ctx) {
  const bench_args a = ctx->a;
  const run_opts o = ctx->o;
  const char *shape_dir = ctx->shape_dir;
  const int *precs = ctx->precs, *Ks = ctx->Ks, nprec = ctx->nprec, nK = ctx->nK;
  const config_set *sets = ctx->sets;
  const int nsets = ctx->nsets;
  char err[1024] = "";
  int rc;
  model_config dc;
  rc = model_config_load(a.model_dir ? a.model_dir : shape_dir, &dc, err, sizeof err);
  if (rc != RSSM_OK) {
    cli_error(CMD, "%s", err);
    return rc == RSSM_ERR_INPUT ? 2 : 1;
  }
  e2e_weights wm;
  e2e_weights_of(&dc, model_random_floats(&dc), &wm);
  const int64_t nsteps = o.steps / o.block * o.block;
  const double mean_pos = (double)o.warmup + 0.5 * (double)(nsteps - 1);
  printf("bench e2e (dry run): %s: %.4f G parameters, GEMM weights %.4f G, %d GEMM shapes; "
         "row tile %d (fp32 GEMMs), %d (bf16)\n",
         o.label, (double)model_random_floats(&dc) * 1e-9, (double)wm.gemm_floats * 1e-9,
         wm.nshape, mc_row_tile_for(wm.gemm_floats * 4, 0), mc_row_tile_for(wm.gemm_floats * 2, 1));
  for (int pi = 0; pi < nprec; pi++)
    for (int ki = 0; ki < nK; ki++)
      for (int si = 0; si < nsets; si++) {
        const e2e_bytes bm = e2e_bytes_per_step(&dc, &wm, precs[pi] ? 2 : 4, sets[si].cfg,
                                                sets[si].C, Ks[ki], mean_pos);
        printf("bench e2e (dry run): %s K=%d C=%d rows=%d [%s] gemm=%s: bytes/step %.6g GB "
               "(weights %.6g, state %.6g, KV %.6g)\n", o.label, Ks[ki], sets[si].C,
               sets[si].C * Ks[ki], sets[si].label, precs[pi] ? "bf16" : "fp32",
               bm.total * 1e-9, bm.weight * 1e-9, bm.state * 1e-9, bm.kv * 1e-9);
      }
  model_config_free(&dc);
  return 0;
}

#ifdef RSSM_HAVE_CUDA
/* The model (a checkpoint, or random weights at a shape) into *out: -1 to go on, or the exit
 * status after the message. */
static int e2e_load_model(const e2e_ctx *ctx, model *out) {
  const bench_args a = ctx->a;
  const run_opts o = ctx->o;
  const char *shape_dir = ctx->shape_dir;
  const int threads = ctx->threads;
  char err[1024] = "";
  int rc;
  model m;
  memset(&m, 0, sizeof m);
  double t0 = now_s();
  if (a.model_dir) {
    rc = model_load(a.model_dir, &m, err, sizeof err);
  } else {
    model_config probe;
    rc = model_config_load(shape_dir, &probe, err, sizeof err);
    if (rc == RSSM_OK) {
      const int64_t need = model_random_floats(&probe) * 4;
      const int64_t avail = host_available();
      model_config_free(&probe);
      if (avail >= 0 && need > avail - ((int64_t)1 << 30)) {
        cli_error(CMD, "%s: random fp32 weights need %.1f GB of host memory, %.1f GB available",
                  shape_dir, (double)need / 1e9, (double)avail / 1e9);
        return 2;
      }
      rc = model_random_build(shape_dir, o.seed, threads, &m, err, sizeof err);
    }
  }
  if (rc != RSSM_OK) {
    cli_error(CMD, "%s", err);
    return rc == RSSM_ERR_INPUT ? 2 : 1;
  }
  const model_config *c = &m.cfg;
  printf("bench e2e: model %s (%s, %s): %.3f G parameters, %d blocks (%d SSM, %d attention), "
         "H %" PRId64 ", V %" PRId64 "; %s in %.1f s\n",
         o.label, o.source, c->model_type, (double)m.n_params * 1e-9, m.nblocks, m.n_ssm, m.n_attn,
         c->H, c->V, a.model_dir ? "loaded" : "random weights built", now_s() - t0);
  fflush(stdout);
  *out = m;
  return -1;
}

/* One (GEMM precision, K) of the measurement: its tokens, the device model and the byte model. */
typedef struct {
  const model *m;
  const model_config *c;
  const e2e_weights *wm;
  mc_model *g;
  int K, pi, wbytes;
  const int64_t *tok;      /* [K][total_steps + 1] */
  int64_t *x, *y;          /* [MC_STEPS_MAX][K] scratch: a submission's tokens and targets */
  const uint32_t *seqs;    /* [K] */
  int64_t total_steps, nsteps, nblocks;
  double bw;               /* copy bandwidth, bytes per second */
} e2e_batch;

/* Configuration set si at q: builds the batch, times it, prints its line and keeps its result
 * row; cache holds the isolated measurements of (K, set), made at the first precision. Returns 0
 * or the exit status after the message. */
static int e2e_measure_set(const e2e_ctx *ctx, const e2e_batch *q, int si, e2e_micro *cache,
                           result_row *res, int *nres, int cap_res) {
  const bench_args a = ctx->a;
  const run_opts o = ctx->o;
  const model *m = q->m;
  const model_config *c = q->c;
  const e2e_weights *wm = q->wm;
  mc_model *g = q->g;
  const int K = q->K, pi = q->pi, wbytes = q->wbytes;
  const int64_t *tok = q->tok;
  int64_t *x = q->x, *y = q->y;
  const uint32_t *seqs = q->seqs;
  const int64_t total_steps = q->total_steps, nsteps = q->nsteps, nblocks = q->nblocks;
  const double bw = q->bw;
  char err[1024] = "";
  int rc;
  double t0 = 0;
  const config_set *s = &ctx->sets[si];
  const int R = s->C * K;
  mc_batch *b = NULL;
  mc_row_metrics *met = malloc((size_t)MC_STEPS_MAX * (size_t)R * sizeof *met); /* [n][R] */
  rc = met ? mc_batch_build(&b, g, s->cfg, s->C, K, o.seed, seqs, total_steps, err,
                            sizeof err)
           : RSSM_ERR_IO;
  if (rc != RSSM_OK) {
    cli_error(CMD, "K = %d, configurations '%s': %s", K, s->label,
              met ? err : "out of host memory");
    free(met);
    return rc == RSSM_ERR_INPUT ? 2 : 1;
  }
  mc_batch_use_graph(b, o.graph);
  double *blk = malloc((size_t)nblocks * sizeof *blk); /* [nblocks] seconds per step */
  double tmin = 1e30;
  /* as the run engine submits steps (cuda_engine_block.c): up to MC_STEPS_MAX per
   * mc_batch_steps, one synchronisation each. The first step alone (it captures the graph), the
   * rest of the warm-up, then each timed block of o.block steps on its own. */
  for (int64_t t = 0; t < total_steps && rc == RSSM_OK;) {
    const int64_t bi = t - o.warmup; /* index among the timed steps */
    const int64_t end = t == 0 ? 1 : bi < 0 ? o.warmup : t + o.block;
    if (bi >= 0) t0 = now_s();
    while (t < end && rc == RSSM_OK) {
      const int n = (int)(end - t < MC_STEPS_MAX ? end - t : MC_STEPS_MAX);
      for (int i = 0; i < n; i++)
        for (int k = 0; k < K; k++) {
          x[i * K + k] = tok[(int64_t)k * (total_steps + 1) + t + i];
          y[i * K + k] = tok[(int64_t)k * (total_steps + 1) + t + i + 1];
        }
      rc = mc_batch_steps(b, n, x, y, met, err, sizeof err);
      t += n;
    }
    if (rc == RSSM_OK && bi >= 0) {
      const double per = (now_s() - t0) / (double)o.block;
      blk[bi / o.block] = per;
      if (per < tmin) tmin = per;
    }
  }
  mc_batch_free(b);
  if (rc != RSSM_OK) {
    cli_error(CMD, "K = %d, configurations '%s': %s", K, s->label, err);
    free(met);
    free(blk);
    return rc == RSSM_ERR_INPUT ? 2 : 1;
  }
  const double tmed = gsl_stats_median(blk, 1, (size_t)nblocks);
  free(blk);
  if (o.profile) { /* the same batch again, launched step by step with events per block */
    const char *prev = getenv("RSSM_CUDA_PROFILE");
    char saved[64] = "";
    if (prev) snprintf(saved, sizeof saved, "%s", prev);
    setenv("RSSM_CUDA_PROFILE", "1", 1);
    mc_batch *pb = NULL;
    int prc = mc_batch_build(&pb, g, s->cfg, s->C, K, o.seed, seqs, total_steps, err,
                             sizeof err);
    if (prev) setenv("RSSM_CUDA_PROFILE", saved, 1);
    else unsetenv("RSSM_CUDA_PROFILE");
    if (prc == RSSM_OK) {
      fprintf(stderr, "bench e2e: profile of %s K=%d C=%d gemm=%s, %d launched steps from "
              "position 0 (events around each block; mc_step.cu):\n", o.label, K, s->C,
              o.bf16 ? "bf16" : "fp32", (int)(total_steps < 8 ? total_steps : 8));
      mc_batch_use_graph(pb, 0);
      for (int64_t t = 0; t < total_steps && t < 8 && prc == RSSM_OK; t++) {
        for (int k = 0; k < K; k++) {
          x[k] = tok[(int64_t)k * (total_steps + 1) + t];
          y[k] = tok[(int64_t)k * (total_steps + 1) + t + 1];
        }
        prc = mc_batch_step(pb, x, y, NULL, met, err, sizeof err);
      }
      mc_batch_free(pb); /* prints the per-block table on stderr */
    }
    if (prc != RSSM_OK) fprintf(stderr, "bench e2e: profile skipped: %s\n", err);
    fflush(stderr);
  }
  free(met);
  /* mean position of the timed steps: warmup .. warmup + nsteps - 1 */
  const double mean_pos = (double)o.warmup + 0.5 * (double)(nsteps - 1);
  const e2e_bytes bm = e2e_bytes_per_step(c, wm, wbytes, s->cfg, s->C, K, mean_pos);
  const double limit = bw > 0 ? bm.total / bw : 0;
  e2e_micro mr = {{-1, -1}, {0, 0}, -1};
  if (o.micro && pi > 0) mr = *cache;
  else if (o.micro) {
    e2e_micro_gemms(wm, R, &mr);
    mr.ssm_s = 0;
    for (int ci = 0; ci < s->C && mr.ssm_s >= 0; ci++) {
      const double t = e2e_micro_ssm(m, &s->cfg[ci], K, o.seed);
      mr.ssm_s = t < 0 ? -1 : mr.ssm_s + t;
    }
    *cache = mr;
  }
  printf("bench e2e: %s K=%d C=%d rows=%d [%s] gemm=%s graph=%s: %.4f ms/step (min %.4f), "
         "%.0f streams/s; bytes/step %.4g GB (weights %.4g, state %.4g, KV %.4g) -> limit "
         "%.4f ms, %.1f%% of the byte limit\n",
         o.label, K, s->C, R, s->label, o.bf16 ? "bf16" : "fp32", o.graph ? "on" : "off",
         tmed * 1e3, tmin * 1e3, (double)R / tmed, bm.total * 1e-9, bm.weight * 1e-9,
         bm.state * 1e-9, bm.kv * 1e-9, limit * 1e3, 100.0 * limit / tmed);
  if (o.micro)
    printf("bench e2e:   alone: GEMMs %.4f ms fp32 (%.1f TFLOP/s), %.4f ms bf16 (%.1f "
           "TFLOP/s); SSM engine %.4f ms; the rest of the step %.4f ms\n",
           mr.gemm_s[0] * 1e3, mr.gemm_tflops[0], mr.gemm_s[1] * 1e3, mr.gemm_tflops[1],
           mr.ssm_s * 1e3, (tmed - mr.gemm_s[o.bf16] - mr.ssm_s) * 1e3);
  fflush(stdout);
  char row[4096] = "";
  if (a.out) {
    char mic[3][32];
    const double mv[3] = {mr.gemm_s[0], mr.gemm_s[1], mr.ssm_s};
    for (int i = 0; i < 3; i++) { /* empty where not measured */
      mic[i][0] = 0;
      if (mv[i] >= 0) snprintf(mic[i], sizeof mic[i], "%.6f", mv[i] * 1e3);
    }
    snprintf(row, sizeof row,
             "%s,%s,%s,%s,%d,%d,%d,\"%s\",%" PRId64 ",%" PRId64 ",%.6f,%.6f,%.1f,%.0f,%.0f,"
             "%.0f,%.0f,%.2f,%.6f,%.4f,%s,%s,%.2f,%.2f,%s",
             o.label, o.source, o.bf16 ? "bf16" : "fp32", o.graph ? "on" : "off", K, s->C, R,
             s->label, o.warmup, nsteps, tmed * 1e3, tmin * 1e3, (double)R / tmed, bm.weight,
             bm.state, bm.kv, bm.total, bw * 1e-9, limit * 1e3, limit / tmed, mic[0], mic[1],
             mr.gemm_tflops[0], mr.gemm_tflops[1], mic[2]);
  }
  if (*nres < cap_res) {
    result_row *rr = &res[(*nres)++];
    rr->K = K;
    rr->R = R;
    rr->C = s->C;
    rr->bf16 = o.bf16;
    rr->ms = tmed * 1e3;
    snprintf(rr->csv, sizeof rr->csv, "%s", a.out ? row : "");
  }
  return 0;
}
#endif

/* After the measurements: transformers' own decoding of the same model, K and steps, in this
 * call (--transformers), the speed-ups, and the CSV rows (--out). Returns the exit status. */
static int e2e_finish(const e2e_ctx *ctx, const result_row *res, int nres, int64_t nsteps,
                      int status) {
  const bench_args a = ctx->a;
  const run_opts o = ctx->o;
  const char *hf_script = ctx->hf_script;
  const int *Ks = ctx->Ks, nK = ctx->nK;
  double hf_ms[MAX_STREAMS];
  for (int i = 0; i < MAX_STREAMS; i++) hf_ms[i] = -1;
  if (status == 0 && a.transformers) {
    char tmp[64] = "";
    const char *json = a.hf_json;
    if (!json) {
      snprintf(tmp, sizeof tmp, "/tmp/rssm-bench-e2e-XXXXXX");
      int fd = mkstemp(tmp);
      if (fd >= 0) close(fd);
      json = tmp;
    }
    printf("bench e2e: transformers baseline: %s %s --model %s (same K, %" PRId64 " steps after %"
           PRId64 ")\n", a.transformers, hf_script, a.model_dir, nsteps, o.warmup);
    fflush(stdout);
    if (e2e_run_transformers(a.transformers, hf_script, a.model_dir, Ks, nK, nsteps, o.warmup, json,
                         hf_ms) != 0)
      status = 1;
    if (tmp[0]) unlink(tmp);
    for (int i = 0; i < nres && status == 0; i++) {
      int ki = 0;
      while (ki < nK && Ks[ki] != res[i].K) ki++;
      if (ki == nK || hf_ms[ki] <= 0) continue;
      /* streams/s ratio: R rows against transformers' K streams (C = 1: the time ratio) */
      const double sp = ((double)res[i].R / res[i].ms) / ((double)res[i].K / hf_ms[ki]);
      printf("bench e2e: %s K=%d C=%d gemm=%s: replayssm %.4f ms/step, transformers %.3f ms/step: "
             "%.1fx the streams/s%s\n", o.label, res[i].K, res[i].C, res[i].bf16 ? "bf16" : "fp32",
             res[i].ms, hf_ms[ki], sp,
             res[i].C == 1 && res[i].K == 16
                 ? (sp >= SPEEDUP_TARGET ? " (issue 18's target >= 40x at K = 16: met)"
                                         : " (issue 18's target >= 40x at K = 16: MISSED)")
                 : "");
    }
  }
  for (int i = 0; i < nres && a.out; i++) {
    char tail[96] = ",,";
    int ki = 0;
    while (ki < nK && Ks[ki] != res[i].K) ki++;
    if (ki < nK && hf_ms[ki] > 0)
      snprintf(tail, sizeof tail, ",%.6f,%.4f", hf_ms[ki],
               ((double)res[i].R / res[i].ms) / ((double)res[i].K / hf_ms[ki]));
    char line[4200];
    snprintf(line, sizeof line, "%s%s\n", res[i].csv, tail);
    if (append_csv(a.out, line)) {
      status = 1;
      break;
    }
  }
  return status;
}

#ifdef RSSM_HAVE_CUDA
/* The measurement on the device: every GEMM precision, K and configuration set. */
static int e2e_measure(e2e_ctx *ctx) {
  const run_opts *o = &ctx->o; /* the measurements below read the precision from ctx->o */
  const int *Ks = ctx->Ks, nK = ctx->nK, *precs = ctx->precs, nprec = ctx->nprec;
  const int nsets = ctx->nsets;
  char err[1024] = "";
  int rc;
  double t0;
  model m;
  rc = e2e_load_model(ctx, &m);
  if (rc >= 0) return rc;
  const model_config *c = &m.cfg;
  /* ---- the copy bandwidth, before anything large is on the device ---- */
  double bw = e2e_copy_bandwidth((int64_t)1 << 30);
  if (bw <= 0) bw = e2e_copy_bandwidth((int64_t)1 << 26);
  printf("bench e2e: device-to-device copy bandwidth %.1f GB/s (2 x bytes / time, cudaMemcpy of "
         "1 GiB, median of 9)\n", bw * 1e-9);

  e2e_weights wm;
  e2e_weights_of(c, m.n_params, &wm);
  const int64_t nsteps = o->steps / o->block * o->block, nblocks = nsteps / o->block;
  const int64_t total_steps = o->warmup + nsteps;
  const int64_t V = c->V;
  int status = 0;
  /* the isolated measurements do not depend on the runtime's precision: made once per (K, set) */
  static e2e_micro micro[MAX_STREAMS][MAX_SETS];
  const int cap_res = nprec * nK * nsets;
  int nres = 0;
  result_row *res = calloc((size_t)cap_res, sizeof *res); /* [cap_res] */
  if (!res) {
    cli_error(CMD, "out of host memory");
    model_free(&m);
    return 1;
  }

  for (int pi = 0; pi < nprec && status == 0; pi++) {
    ctx->o.bf16 = precs[pi];
    const int wbytes = o->bf16 ? 2 : 4;
    t0 = now_s();
    mc_model *g = NULL;
    rc = mc_model_upload_prec(&m, o->bf16 ? MC_GEMM_BF16 : MC_GEMM_FP32, &g, err, sizeof err);
    if (rc != RSSM_OK) {
      cli_error(CMD, "%s", err);
      status = rc == RSSM_ERR_INPUT ? 2 : 1;
      break;
    }
    printf("bench e2e: weights on the device: %.2f GB (GEMMs %s by %s: %.2f GB, row tile %d), "
           "uploaded in %.1f s\n",
           (double)mc_model_bytes(g) * 1e-9, o->bf16 ? "bf16" : "fp32", mc_model_gemm_kernel(g),
           (double)mc_model_gemm_bytes(g) * 1e-9, mc_model_row_tile(g), now_s() - t0);
    /* the isolated GEMM timings pick their tile from the byte model's shapes: say so when that
     * is not the runtime's (the shapes of e2e_weights_of and the uploaded ones disagree) */
    if (mc_model_row_tile(g) != mc_row_tile_for(wm.gemm_floats * wbytes, o->bf16))
      fprintf(stderr, "replayssm " CMD ": warning: the runtime's row tile %d differs from the "
              "byte model's %d (GEMM weights %lld bytes uploaded, %lld modelled): the isolated "
              "GEMM timings are not the runtime's\n", mc_model_row_tile(g),
              mc_row_tile_for(wm.gemm_floats * wbytes, o->bf16), (long long)mc_model_gemm_bytes(g),
              (long long)(wm.gemm_floats * wbytes));
    fflush(stdout);

    for (int ki = 0; ki < nK && status == 0; ki++) {
      const int K = Ks[ki];
      /* tokens [K][total_steps + 1]: random ids, the target of step t is token t + 1 */
      int64_t *tok = malloc((size_t)K * (size_t)(total_steps + 1) * sizeof *tok); /* [K][T+1] */
      /* [MC_STEPS_MAX][K]: one submission's tokens and targets */
      int64_t *x = malloc((size_t)MC_STEPS_MAX * (size_t)K * sizeof *x),
              *y = malloc((size_t)MC_STEPS_MAX * (size_t)K * sizeof *y);
      uint32_t *seqs = malloc((size_t)K * sizeof *seqs);                             /* [K] */
      if (!tok || !x || !y || !seqs) {
        cli_error(CMD, "out of host memory");
        free(tok), free(x), free(y), free(seqs);
        status = 1;
        break;
      }
      for (int k = 0; k < K; k++) {
        seqs[k] = (uint32_t)k;
        for (int64_t t = 0; t <= total_steps; t++)
          tok[(int64_t)k * (total_steps + 1) + t] =
              (int64_t)(mix64(o->seed * 0x100000001b3ULL + (uint64_t)k * 1000003u + (uint64_t)t) %
                        (uint64_t)V);
      }
      for (int si = 0; si < nsets && status == 0; si++) {
        const e2e_batch q = {&m, c, &wm, g, K, pi, wbytes, tok, x, y, seqs, total_steps, nsteps,
                             nblocks, bw};
        status = e2e_measure_set(ctx, &q, si, &micro[ki][si], res, &nres, cap_res);
      }
      /* spec rounds against standard steps (fp32 GEMMs, the precision of `run`) */
      if (status == 0 && ctx->nspec > 0 && !o->bf16) {
        const bench_spec_opts so = {o->warmup, nblocks, o->block, o->seed, o->label, ctx->a.spec_out};
        rc = bench_spec_measure(g, V, K, ctx->spec_T, ctx->nspec, &so, err, sizeof err);
        if (rc != RSSM_OK) {
          cli_error(CMD, "spec rounds, K = %d: %s", K, err);
          status = rc == RSSM_ERR_INPUT ? 2 : 1;
        }
      }
      free(tok), free(x), free(y), free(seqs);
    }
    mc_model_free(g);
  }
  model_free(&m);
  status = e2e_finish(ctx, res, nres, nsteps, status);
  free(res);
  return status;
}
#endif

int bench_e2e_main(int argc, char **argv) {
  static e2e_ctx ctx;
  int rc = e2e_prepare(argc, argv, &ctx);
  if (rc >= 0) return rc;
  if (ctx.o.dry_run) return e2e_dry_run(&ctx);
  char err[1024] = "";
  if (mc_device_check(err, sizeof err) != 0) {
    cli_error(CMD, "%s", err);
    return 2;
  }
#ifndef RSSM_HAVE_CUDA
  /* mc_device_check refuses without CUDA; this is never reached */
  (void)now_s, (void)host_available, (void)mix64, (void)append_csv, (void)e2e_finish;
  return 2;
#else
  return e2e_measure(&ctx);
#endif
}
