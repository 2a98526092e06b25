/* Format names, the "FORMAT[@BLOCK][/rtn|/sr]" syntax, and the byte layout of a stored matrix. */
#include "quant/format.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
  const char *name;
  qformat_kind kind;
} format_names[] = {
    {"fp32", QF_FP32},   {"bf16", QF_BF16},   {"fp16", QF_FP16},   {"fp8", QF_FP8_E4M3},
    {"fp8_e4m3", QF_FP8_E4M3}, {"fp8_e5m2", QF_FP8_E5M2}, {"int8", QF_INT8}, {"nvfp4", QF_NVFP4},
    {"mxfp8", QF_MXFP8}, {"mxfp4", QF_MXFP4},
};

const char *qformat_kind_name(qformat_kind k) {
  switch (k) {
    case QF_FP32: return "fp32";
    case QF_BF16: return "bf16";
    case QF_FP16: return "fp16";
    case QF_FP8_E4M3: return "fp8";
    case QF_FP8_E5M2: return "fp8_e5m2";
    case QF_INT8: return "int8";
    case QF_NVFP4: return "nvfp4";
    case QF_MXFP8: return "mxfp8";
    case QF_MXFP4: return "mxfp4";
    default: return "?";
  }
}

int qformat_default_block(qformat_kind k) {
  switch (k) {
    case QF_FP8_E4M3: case QF_FP8_E5M2: case QF_INT8: return 128;
    case QF_NVFP4: return 16;
    case QF_MXFP8: case QF_MXFP4: return 32;
    default: return 0;
  }
}

int qformat_is_identity(const qformat *f) { return f->kind == QF_FP32; }

static int is_four_bit(qformat_kind k) { return k == QF_NVFP4 || k == QF_MXFP4; }

/* Largest block accepted: one scale per 2^20 elements is already far beyond any real format. */
#define QFORMAT_MAX_BLOCK (1 << 20)

int qformat_parse(const char *text, qformat *out, char *err, size_t errlen) {
  if (!text || !*text) {
    snprintf(err, errlen, "empty format (expected FORMAT[@BLOCK][/rtn|/sr], e.g. fp8@64/sr)");
    return -1;
  }
  size_t name_len = strcspn(text, "@/");
  const char *rest = text + name_len;
  int found = 0;
  for (size_t i = 0; i < sizeof format_names / sizeof format_names[0]; i++) {
    if (strlen(format_names[i].name) == name_len && strncmp(format_names[i].name, text, name_len) == 0) {
      out->kind = format_names[i].kind;
      found = 1;
      break;
    }
  }
  if (!found) {
    snprintf(err, errlen,
             "unknown format '%.*s' in '%s' (expected one of fp32, bf16, fp16, fp8, fp8_e4m3, "
             "fp8_e5m2, int8, nvfp4, mxfp8, mxfp4)",
             (int)name_len, text, text);
    return -1;
  }
  out->block = qformat_default_block(out->kind);
  out->rounding = QR_RTN;
  if (*rest == '@') {
    const char *num = rest + 1;
    size_t digits = strspn(num, "0123456789");
    if (digits == 0 || digits > 7) {
      snprintf(err, errlen, "bad block size in '%s' (expected @N with N a positive integer)", text);
      return -1;
    }
    long b = strtol(num, NULL, 10);
    if (out->block == 0) {
      snprintf(err, errlen, "format '%s' has no scale blocks, so '@%ld' is not allowed in '%s'",
               qformat_kind_name(out->kind), b, text);
      return -1;
    }
    if (b < 1 || b > QFORMAT_MAX_BLOCK) {
      snprintf(err, errlen, "block size %ld in '%s' is out of range (expected 1..%d)", b, text,
               QFORMAT_MAX_BLOCK);
      return -1;
    }
    if (is_four_bit(out->kind) && (b % 2) != 0) {
      /* two 4-bit codes share a byte; an odd block would split a byte between two blocks */
      snprintf(err, errlen, "block size %ld in '%s' must be even for a 4-bit format", b, text);
      return -1;
    }
    out->block = (int)b;
    rest = num + digits;
  }
  if (*rest == '/') {
    const char *mode = rest + 1;
    if (strcmp(mode, "rtn") == 0) out->rounding = QR_RTN;
    else if (strcmp(mode, "sr") == 0) out->rounding = QR_SR;
    else {
      snprintf(err, errlen, "bad rounding '/%s' in '%s' (expected /rtn or /sr)", mode, text);
      return -1;
    }
    rest = mode + strlen(mode);
  }
  if (*rest != '\0') {
    snprintf(err, errlen, "unexpected '%s' after the format in '%s' (expected FORMAT[@BLOCK][/rtn|/sr])",
             rest, text);
    return -1;
  }
  if (out->kind == QF_FP32 && out->rounding == QR_SR) {
    snprintf(err, errlen, "'%s': fp32 is stored exactly, stochastic rounding does not apply", text);
    return -1;
  }
  return 0;
}

void qformat_to_string(const qformat *f, char *buf, size_t buflen) {
  char blk[24] = "";
  if (f->block != 0 && f->block != qformat_default_block(f->kind)) snprintf(blk, sizeof blk, "@%d", f->block);
  snprintf(buf, buflen, "%s%s%s", qformat_kind_name(f->kind), blk, f->rounding == QR_SR ? "/sr" : "");
}

static int64_t align16(int64_t v) { return (v + 15) & ~(int64_t)15; }

int qlayout_of(const qformat *f, int64_t rows, int64_t cols, qlayout *out) {
  memset(out, 0, sizeof *out);
  /* At most 2^58 elements: a format stores at most 8 bytes per element (a 4-byte code plus a
   * 4-byte scale for blocks of 1), so every product below stays under 2^61 and cannot overflow. */
  if (rows <= 0 || cols <= 0 || cols > ((int64_t)1 << 58) / rows) return -1;
  out->rows = rows;
  out->cols = cols;
  int64_t elem_bits;
  switch (f->kind) {
    case QF_FP32: elem_bits = 32; break;
    case QF_BF16: case QF_FP16: elem_bits = 16; break;
    case QF_NVFP4: case QF_MXFP4: elem_bits = 4; break;
    default: elem_bits = 8; break;
  }
  out->code_bytes_per_row = (cols * elem_bits + 7) / 8;
  if (f->block > 0) {
    out->blocks_per_row = (cols + f->block - 1) / f->block;
    out->scale_elem_bytes = (f->kind == QF_FP8_E4M3 || f->kind == QF_FP8_E5M2 || f->kind == QF_INT8) ? 4 : 1;
  }
  int64_t code_bytes = rows * out->code_bytes_per_row;
  int64_t scale_bytes = rows * out->blocks_per_row * out->scale_elem_bytes;
  out->codes_off = 0;
  int64_t end = align16(code_bytes);
  out->scales_off = -1;
  out->tscale_off = -1;
  if (scale_bytes > 0) {
    out->scales_off = end;
    end = align16(end + scale_bytes);
  }
  int64_t tscale = 0;
  if (f->kind == QF_NVFP4) {
    out->tscale_off = end;
    tscale = 4;
    end = align16(end + 4);
  }
  out->payload_bytes = code_bytes + scale_bytes + tscale;
  out->bytes_per_matrix = end;
  if (out->bytes_per_matrix > ((int64_t)1 << 62)) return -1;
  return 0;
}
