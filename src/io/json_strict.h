/* What cJSON lets through but a JSON file of ours must not hold (docs/reliability.md, "Strict
 * inputs"): a key given twice in one object (cJSON keeps both and finds the first; Python's json
 * takes the last, so the two would read different files), and a nesting deeper than cJSON's
 * limit (cJSON then fails as if the text were not JSON at all). */
#ifndef RSSM_IO_JSON_STRICT_H
#define RSSM_IO_JSON_STRICT_H

#include <cjson/cJSON.h>
#include <stddef.h>

/* The first key that appears twice in one object anywhere inside v: its path ("a.b.key", "[3]"
 * for array elements) goes to out and 1 is returned; 0 when every object's keys are distinct. */
int json_find_duplicate_key(const cJSON *v, char *out, size_t outlen);

/* The deepest nesting of [ and { in text[0..len) outside strings. */
int json_nesting_depth(const char *text, size_t len);

/* After cJSON parsed text[0..len) into root (NULL: it failed): 1 with the reason in why (no file
 * name) when the text nests deeper than cJSON's limit or an object repeats a key; 0 otherwise
 * (a NULL root that is not too deep is then the caller's "not JSON"). */
int json_strict_check(const cJSON *root, const char *text, size_t len, char *why, size_t whylen);

#endif
