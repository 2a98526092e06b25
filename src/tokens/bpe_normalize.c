/* The NFC normalizer (bpe_internal.h), through GLib's g_utf8_normalize (Unicode's canonical
 * composition; PCRE2 does not normalise). Text without a byte >= 0xCC holds only code points
 * below U+0300, where no combining mark or NFC-changing character lives, so it is returned as
 * it is: ASCII and Latin-1 text such as PG-19 never reaches GLib. GLib stops at a NUL byte, so
 * the text goes to it in NUL-separated parts (U+0000 never composes, so this changes nothing). */
#include <glib.h>
#include <stdlib.h>
#include <string.h>

#include "src/tokens/bpe_internal.h"

int bpe_nfc(const char *s, int64_t n, char **out, int64_t *outn) {
  *out = NULL;
  *outn = n;
  int64_t i = 0;
  while (i < n && (unsigned char)s[i] < 0xCC) i++;
  if (i == n) return 0;
  /* NFC never grows text by more than a factor of 3 (Unicode's stated bound), plus the NULs */
  int64_t cap = 3 * n + 1, len = 0;
  char *buf = malloc((size_t)cap);
  if (!buf) return -1;
  for (int64_t a = 0; a <= n;) {
    const char *z = memchr(s + a, '\0', (size_t)(n - a));
    int64_t b = z ? z - s : n;
    if (b > a) {
      gchar *g = g_utf8_normalize(s + a, (gssize)(b - a), G_NORMALIZE_NFC);
      size_t gl = g ? strlen(g) : 0;
      if (!g || len + (int64_t)gl + 1 > cap) { /* g NULL: invalid UTF-8, excluded by the caller */
        g_free(g);
        free(buf);
        return -1;
      }
      memcpy(buf + len, g, gl);
      len += (int64_t)gl;
      g_free(g);
    }
    if (b == n) break;
    buf[len++] = '\0';
    a = b + 1;
  }
  buf[len] = '\0';
  *out = buf;
  *outn = len;
  return 0;
}
