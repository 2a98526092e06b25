/* GPT-2's bytes_to_unicode, the alphabet of byte-level vocabularies, and UTF-8 decoding.
 *
 * Bytes that are printable on their own ('!'..'~', 0xA1..0xAC, 0xAE..0xFF) stand for themselves;
 * the other 68 (controls, space, 0x7F..0xA0, 0xAD) take the code points 256, 257, ... in byte
 * order, so that every vocabulary string is printable text. */
#include "src/tokens/bpe_internal.h"

static int printable(unsigned b) {
  return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

uint32_t bpe_byte_to_cp(unsigned b) {
  if (printable(b)) return b;
  uint32_t k = 0; /* rank of b among the non-printable bytes */
  for (unsigned c = 0; c < b; c++) k += !printable(c);
  return 256 + k;
}

int bpe_cp_to_byte(uint32_t cp) {
  if (cp < 256) return printable(cp) ? (int)cp : -1;
  if (cp >= 256 + 68) return -1;
  uint32_t k = 0;
  for (unsigned c = 0; c < 256; c++) {
    if (printable(c)) continue;
    if (k == cp - 256) return (int)c;
    k++;
  }
  return -1;
}

int bpe_utf8_next(const unsigned char *s, size_t n, uint32_t *cp) {
  if (n == 0) return 0;
  unsigned c = s[0];
  if (c < 0x80) {
    *cp = c;
    return 1;
  }
  int len;
  uint32_t v, min;
  if ((c & 0xE0) == 0xC0) len = 2, v = c & 0x1F, min = 0x80;
  else if ((c & 0xF0) == 0xE0) len = 3, v = c & 0x0F, min = 0x800;
  else if ((c & 0xF8) == 0xF0) len = 4, v = c & 0x07, min = 0x10000;
  else return 0;
  if ((size_t)len > n) return 0;
  for (int i = 1; i < len; i++) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    v = (v << 6) | (s[i] & 0x3F);
  }
  if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
  *cp = v;
  return len;
}

int64_t bpe_utf8_check(const unsigned char *s, int64_t n) {
  int64_t i = 0;
  while (i < n) {
    if (s[i] < 0x80) {
      i++;
      continue;
    }
    uint32_t cp;
    int k = bpe_utf8_next(s + i, (size_t)(n - i), &cp);
    if (k == 0) return i;
    i += k;
  }
  return -1;
}
