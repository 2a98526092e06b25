/* `replayssm quant --format FORMAT[@B][/rtn|/sr] [--seed S] IN.npy OUT.npy` (SPEC section 7):
 * fake-quantise a float32 array matrix by matrix and write the fp32 result with the same shape.
 *
 * The last two axes are one matrix [rows = dv][cols = dk] (a 1-D array is one row), leading axes
 * index matrices. Matrix i gets the SR identity qsr_matrix_id(0, 0, i), event 0, stream
 * QSR_STREAM_QUANT_CLI, so the output is a pure function of (input, format, seed). An array with
 * no elements (a 0 anywhere in its shape) is written back unchanged: there is nothing to round. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant/format.h"
#include "quant/quant.h"
#include "src/io/cli_opts.h"
#include "src/cli/commands.h"
#include "src/io/npy.h"
#include "src/io/parse_num.h"

#define USAGE "quant --format FORMAT[@B][/rtn|/sr] [--seed S] IN.npy OUT.npy"

/* The formats with their default block sizes, for --help. */
static void format_list(char *buf, size_t len) {
  size_t n = (size_t)snprintf(buf, len, "formats (default block size):");
  for (int k = 0; k < QF_COUNT && n < len; k++) {
    int b = qformat_default_block((qformat_kind)k);
    const char *name = qformat_kind_name((qformat_kind)k);
    n += (size_t)(b ? snprintf(buf + n, len - n, " %s@%d", name, b)
                    : snprintf(buf + n, len - n, " %s", name));
  }
  if (n < len)
    snprintf(buf + n, len - n,
             "\n\nexample: replayssm quant --format nvfp4/sr --seed 7 state.npy state_q.npy");
}

typedef struct {
  const char *format, *seed_text, *in, *out;
} quant_args;

/* Returns 0 to go on, or the exit status with *done set (0 after --help, 2 after a message). */
static int parse_args(int argc, char **argv, quant_args *a, int *done) {
  memset(a, 0, sizeof *a);
  const char *pos[2];
  int npos = 0;
  char epilog[512];
  format_list(epilog, sizeof epilog);
  const cli_opt opts[] = {
      {.name = "--format", .type = CLI_STR, .dest = &a->format, .meta = "F", .flags = CLI_ONCE,
       .help = "FORMAT[@BLOCK][/rtn|/sr]: round to nearest (default) or stochastically"},
      {.name = "--seed", .type = CLI_STR, .dest = &a->seed_text, .meta = "S", .flags = CLI_ONCE,
       .def = "0", .help = "seed of stochastic rounding, decimal or 0x-hex uint64"},
  };
  const cli_spec spec = {
      .cmd = "quant",
      .usage = USAGE,
      .about = "Fake-quantise a float32 .npy array (SPEC section 3) and write the float32 result with\n"
               "the same shape. The last two axes are one matrix [dv][dk], scale blocks run along the\n"
               "last axis; a 1-D array is one row; leading axes index matrices.",
      .epilog = epilog,
      .opts = opts,
      .nopts = 2,
      .operands = pos,
      .max_operands = 2,
      .noperands = &npos,
      .dashdash = 1,
  };
  int rc = cli_parse_or_help(&spec, argc, argv, done);
  if (*done) return rc;
  *done = 1;
  if (!a->format) {
    cli_error("quant", "missing --format (usage: replayssm " USAGE ")");
    return 2;
  }
  if (npos < 2) {
    cli_error("quant", "missing %s (usage: replayssm " USAGE ")", npos == 0 ? "IN.npy and OUT.npy" : "OUT.npy");
    return 2;
  }
  a->in = pos[0];
  a->out = pos[1];
  *done = 0;
  return 0;
}

int cmd_quant(int argc, char **argv) {
  quant_args a;
  int done;
  int rc = parse_args(argc, argv, &a, &done);
  if (done) return rc;

  char err[1024];
  qformat fmt;
  if (qformat_parse(a.format, &fmt, err, sizeof err) != 0) {
    cli_error("quant", "--format '%s': %s", a.format, err);
    return 2;
  }
  uint64_t seed = 0;
  if (a.seed_text && rssm_parse_u64(a.seed_text, &seed) != 0) {
    cli_error("quant", "--seed '%s': expected a decimal or 0x-hex integer in [0, 2^64)",
              a.seed_text);
    return 2;
  }

  npy_f32 arr;
  rc = npy_load_f32(a.in, &arr, err, sizeof err);
  if (rc != RSSM_OK) {
    cli_error("quant", "%s", err);
    return rc;
  }
  const npy_shape *s = &arr.shape;
  if (s->ndim == 0) {
    cli_error("quant",
              "%s: shape (): a 0-d array holds no matrix (expected at least 1 axis: [dk] or "
              "[..., dv, dk])",
              a.in);
    npy_f32_free(&arr);
    return 2;
  }
  int64_t cols = s->dim[s->ndim - 1];
  int64_t rows = s->ndim >= 2 ? s->dim[s->ndim - 2] : 1;

  if (s->count > 0) {
    /* every axis is positive here, so the product is at most count: no overflow */
    int64_t nmat = 1;
    for (int d = 0; d < s->ndim - 2; d++) nmat *= s->dim[d];
    qlayout L;
    if (qlayout_of(&fmt, rows, cols, &L) != 0) {
      cli_error("quant",
                "%s: matrix of %" PRId64 " x %" PRId64 " is too large for format '%s' (expected "
                "rows and cols at most 2^31)",
                a.in, rows, cols, a.format);
      npy_f32_free(&arr);
      return 2;
    }
    /* qsr_matrix_id keeps 32 bits of the matrix index */
    if (nmat > (int64_t)UINT32_MAX + 1) {
      cli_error("quant", "%s: %" PRId64 " matrices, more than the 2^32 that SR can tell apart",
                a.in, nmat);
      npy_f32_free(&arr);
      return 2;
    }
    uint64_t *ids = NULL; /* [nmat] */
    qsr_params sr = {seed, NULL, NULL, QSR_STREAM_QUANT_CLI};
    if (fmt.rounding == QR_SR) {
      ids = malloc((size_t)nmat * sizeof *ids);
      if (!ids) {
        cli_error("quant", "out of memory for %" PRId64 " matrix ids", nmat);
        npy_f32_free(&arr);
        return 1;
      }
      for (int64_t i = 0; i < nmat; i++) ids[i] = qsr_matrix_id(0, 0, (uint32_t)i);
      sr.matrix_id = ids;
    }
    /* in place: x and y may be the same array */
    int qrc = q_fake_cpu(&fmt, &L, nmat, arr.data, arr.data, ids ? &sr : NULL);
    free(ids);
    if (qrc != 0) {
      cli_error("quant", "out of memory quantising %s", a.in);
      npy_f32_free(&arr);
      return 1;
    }
  }

  rc = npy_save_f32(a.out, s->ndim, s->dim, arr.data, err, sizeof err);
  npy_f32_free(&arr);
  if (rc != RSSM_OK) {
    cli_error("quant", "%s", err);
    return rc;
  }
  return 0;
}
