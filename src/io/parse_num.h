/* Strict number parsing of text from the command line and from experiment files: the whole text
 * is the number, or the call fails (no trailing characters, no empty text). */
#ifndef RSSM_IO_PARSE_NUM_H
#define RSSM_IO_PARSE_NUM_H

#include <stdint.h>

/* A uint64 written in decimal or as 0x-hex, with nothing else around it (no sign, no spaces, no
 * suffix). Returns 0, or -1 when the text is not such a number or overflows. */
int rssm_parse_u64(const char *text, uint64_t *out);

/* A decimal long in [lo, hi] as strtol reads it (an optional sign, leading blanks allowed).
 * Returns 0, or -1 when the text is not such a number or lies outside the range. */
int rssm_parse_long(const char *text, long lo, long hi, long *out);

/* A double in [lo, hi] as strtod reads it. Returns 0, or -1 (not a number, NaN, out of range). */
int rssm_parse_double(const char *text, double lo, double hi, double *out);

/* "a,b,c": a comma-separated list of decimal integers in [lo, hi], each as strtoll reads it,
 * into out[0..max-1] (no empty item, no trailing comma, no more than max items). Returns the
 * count (at least 1), or -1. The benchmarks' --rows, --positions, --batches lists. */
int rssm_parse_int_list(const char *text, int64_t lo, int64_t hi, int64_t *out /* [max] */, int max);

#endif
