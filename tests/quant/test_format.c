/* Format strings (SPEC sections 3 and 6): FORMAT[@BLOCK][/rtn|/sr], what is accepted, what is
 * rejected and with which message, and the canonical text round trip. */
#include <criterion/criterion.h>
#include <string.h>

#include "quant/format.h"

static qformat parse_ok(const char *text) {
  qformat f;
  char err[256] = "";
  int rc = qformat_parse(text, &f, err, sizeof err);
  cr_assert_eq(rc, 0, "'%s' should parse, got: %s", text, err);
  return f;
}

Test(quant_format, accepts_examples) {
  qformat f = parse_ok("fp8@64/sr");
  cr_assert_eq(f.kind, QF_FP8_E4M3);
  cr_assert_eq(f.block, 64);
  cr_assert_eq(f.rounding, QR_SR);

  f = parse_ok("nvfp4");
  cr_assert_eq(f.kind, QF_NVFP4);
  cr_assert_eq(f.block, 16, "nvfp4 blocks are 16 elements");
  cr_assert_eq(f.rounding, QR_RTN);

  f = parse_ok("fp16/sr");
  cr_assert_eq(f.kind, QF_FP16);
  cr_assert_eq(f.block, 0, "fp16 has no scale blocks");
  cr_assert_eq(f.rounding, QR_SR);

  f = parse_ok("fp8_e4m3");
  cr_assert_eq(f.kind, QF_FP8_E4M3, "fp8_e4m3 is another name for fp8");
  cr_assert_eq(f.block, 128);

  f = parse_ok("fp8/rtn");
  cr_assert_eq(f.rounding, QR_RTN);
}

Test(quant_format, default_blocks) {
  static const struct { const char *name; qformat_kind kind; int block; } t[] = {
      {"fp32", QF_FP32, 0},       {"bf16", QF_BF16, 0},   {"fp16", QF_FP16, 0},
      {"fp8", QF_FP8_E4M3, 128},  {"fp8_e5m2", QF_FP8_E5M2, 128}, {"int8", QF_INT8, 128},
      {"nvfp4", QF_NVFP4, 16},    {"mxfp8", QF_MXFP8, 32}, {"mxfp4", QF_MXFP4, 32},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    qformat f = parse_ok(t[i].name);
    cr_assert_eq(f.kind, t[i].kind, "%s: kind", t[i].name);
    cr_assert_eq(f.block, t[i].block, "%s: block %d, expected %d", t[i].name, f.block, t[i].block);
    cr_assert_eq(qformat_default_block(t[i].kind), t[i].block, "%s: default block", t[i].name);
    cr_assert_eq(qformat_is_identity(&f), t[i].kind == QF_FP32, "%s: identity", t[i].name);
  }
}

/* Each bad string with a word that its message must contain, so that a user sees what is wrong. */
Test(quant_format, rejects_with_reason) {
  static const struct { const char *text; const char *must_mention; } bad[] = {
      {"fp9", "fp9"},               /* unknown name: the message names it */
      {"fp8@", "block"},            /* missing block size */
      {"fp8@0", "block"},           /* zero block */
      {"fp8@x", "block"},           /* not a number */
      {"fp16@32", "no scale blocks"}, /* unscaled format with a block */
      {"nvfp4@15", "even"},         /* two 4-bit codes share a byte */
      {"fp8/rnd", "rnd"},           /* unknown rounding */
      {"fp32/sr", "stochastic"},    /* fp32 is stored exactly */
      {"", "empty"},
      {"fp8@64@32", "@32"},         /* trailing garbage */
      {"fp8/sr/sr", "sr/sr"},
      {"FP8", "FP8"},               /* names are lower case */
      {"fp8@99999999", "block"},    /* absurd block */
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    qformat f;
    char err[256] = "";
    int rc = qformat_parse(bad[i].text, &f, err, sizeof err);
    cr_assert_eq(rc, -1, "'%s' should be rejected", bad[i].text);
    cr_assert(strlen(err) > 0, "'%s': empty error message", bad[i].text);
    cr_assert(strstr(err, bad[i].must_mention) != NULL, "'%s': message '%s' does not mention '%s'",
              bad[i].text, err, bad[i].must_mention);
    cr_assert(strchr(err, '\n') == NULL, "'%s': message should be one line: '%s'", bad[i].text, err);
  }
}

/* A short error buffer truncates the message but must stay a terminated string. */
Test(quant_format, short_error_buffer) {
  qformat f;
  char err[8];
  memset(err, 'x', sizeof err);
  cr_assert_eq(qformat_parse("fp9", &f, err, sizeof err), -1);
  cr_assert(memchr(err, '\0', sizeof err) != NULL, "error message not terminated");
}

static void assert_same(const qformat *a, const qformat *b, const char *text) {
  cr_assert_eq(a->kind, b->kind, "'%s': kind changed in the round trip", text);
  cr_assert_eq(a->block, b->block, "'%s': block changed in the round trip", text);
  cr_assert_eq(a->rounding, b->rounding, "'%s': rounding changed in the round trip", text);
}

Test(quant_format, canonical_round_trip) {
  static const char *inputs[] = {
      "fp32",      "bf16",      "bf16/sr",     "fp16",       "fp16/sr",   "fp8",      "fp8/sr",
      "fp8@64",    "fp8@64/sr", "fp8@1",       "fp8_e4m3",   "fp8_e5m2",  "fp8_e5m2@256/sr",
      "int8",      "int8@32",   "int8/sr",     "nvfp4",      "nvfp4/sr",  "nvfp4@32", "mxfp8",
      "mxfp8@16",  "mxfp4",     "mxfp4@64/sr", "fp8@128",    "fp8/rtn",   "nvfp4@16/rtn",
  };
  for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; i++) {
    qformat f = parse_ok(inputs[i]);
    char canon[64];
    qformat_to_string(&f, canon, sizeof canon);
    qformat g = parse_ok(canon);
    assert_same(&f, &g, inputs[i]);
    char again[64];
    qformat_to_string(&g, again, sizeof again);
    cr_assert_str_eq(canon, again, "'%s': canonical text is not a fixed point", inputs[i]);
  }
}

Test(quant_format, canonical_text) {
  static const struct { const char *in, *canon; } t[] = {
      {"fp8@128", "fp8"},          {"fp8_e4m3", "fp8"},         {"fp8/rtn", "fp8"},
      {"fp8@64/sr", "fp8@64/sr"},  {"nvfp4@16", "nvfp4"},       {"nvfp4@32/sr", "nvfp4@32/sr"},
      {"fp16/sr", "fp16/sr"},      {"mxfp8@32/rtn", "mxfp8"},   {"fp8_e5m2@128", "fp8_e5m2"},
      {"int8@127", "int8@127"},    {"fp32/rtn", "fp32"},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    qformat f = parse_ok(t[i].in);
    char buf[64];
    qformat_to_string(&f, buf, sizeof buf);
    cr_assert_str_eq(buf, t[i].canon, "'%s' canonicalises to '%s', expected '%s'", t[i].in, buf,
                     t[i].canon);
  }
}

Test(quant_format, kind_names) {
  for (int k = 0; k < QF_COUNT; k++) {
    const char *name = qformat_kind_name((qformat_kind)k);
    qformat f = parse_ok(name);
    cr_assert_eq((int)f.kind, k, "kind name '%s' does not parse back to itself", name);
  }
}
