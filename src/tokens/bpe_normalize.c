/* The NFC normalizer (bpe_internal.h), through GLib's g_utf8_normalize (Unicode's canonical
 * composition; PCRE2 does not normalise).
 *
 * GLib is slow (it widens the whole text to UCS-4), and nearly all of a book never changes, so
 * only windows around characters that might are handed to it. A "stable" character is one that
 * NFC leaves alone whatever surrounds it: a starter (combining class 0) with NFC_Quick_Check=Yes
 * that never composes with a character before it. Code points below U+0300 are (every combining
 * mark and NFC-changing character lies above), and so are the ranges below that books are full of
 * (typographic quotes and dashes, currency signs, CJK ideographs). Text can be cut before any
 * stable character without changing its NFC, so each run of other characters is normalised
 * together with the stable starter just before it (which a combining mark may compose with). */
#include <glib.h>
#include <stdlib.h>
#include <string.h>

#include "src/tokens/bpe_internal.h"

static int stable(uint32_t cp) {
  return cp < 0x300 || (cp >= 0x2002 && cp <= 0x206F) /* General Punctuation (not 2000, 2001) */
         || (cp >= 0x20A0 && cp <= 0x20C0)            /* currency signs */
         || (cp >= 0x4E00 && cp <= 0x9FFF);           /* CJK unified ideographs */
}

/* The code point at s[i] (valid UTF-8) and its length. */
static int next_cp(const char *s, int64_t n, int64_t i, uint32_t *cp) {
  int k = bpe_utf8_next((const unsigned char *)s + i, (size_t)(n - i), cp);
  return k ? k : 1;
}

int bpe_nfc(const char *s, int64_t n, char **out, int64_t *outn) {
  *out = NULL;
  *outn = n;
  int64_t i = 0;
  while (i < n && (unsigned char)s[i] < 0xCC) i++; /* bytes < 0xCC start code points < U+0300 */
  if (i == n) return 0;
  /* NFC grows text at most threefold (Unicode's stated bound) */
  int64_t cap = 3 * n + 1, len = 0, copied = 0, prev = -1;
  char *buf = NULL;
  for (i = 0; i < n;) {
    uint32_t cp;
    int k = next_cp(s, n, i, &cp);
    if (stable(cp)) {
      prev = i;
      i += k;
      continue;
    }
    /* a run of unstable characters [i, b), with the stable starter before it (not a NUL: GLib
     * stops at NUL, and U+0000 composes with nothing) */
    int64_t a = prev >= copied && prev >= 0 && s[prev] != '\0' ? prev : i, b = i + k;
    while (b < n) {
      k = next_cp(s, n, b, &cp);
      if (stable(cp)) break;
      b += k;
    }
    if (!buf && !(buf = malloc((size_t)cap))) return -1;
    memcpy(buf + len, s + copied, (size_t)(a - copied));
    len += a - copied;
    gchar *g = g_utf8_normalize(s + a, (gssize)(b - a), G_NORMALIZE_NFC);
    size_t gl = g ? strlen(g) : 0;
    if (!g || len + (int64_t)gl + (n - b) + 1 > cap) { /* g NULL only for invalid UTF-8 */
      g_free(g);
      free(buf);
      return -1;
    }
    memcpy(buf + len, g, gl);
    len += (int64_t)gl;
    g_free(g);
    copied = i = b;
  }
  if (!buf) return 0; /* every character was stable */
  memcpy(buf + len, s + copied, (size_t)(n - copied));
  len += n - copied;
  buf[len] = '\0';
  *out = buf;
  *outn = len;
  return 0;
}
