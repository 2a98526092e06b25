/* Safetensors reader (see safetensors.h). */
#include "src/io/errbuf.h"
#include "src/io/json_strict.h"
#include "src/model/safetensors.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors data is little-endian; this reader copies it as host order"
#endif

static const struct {
  const char *name;
  int size;
} dtype_info[ST_DTYPE_COUNT] = {
    [ST_F32] = {"F32", 4},         [ST_BF16] = {"BF16", 2},       [ST_F16] = {"F16", 2},
    [ST_F64] = {"F64", 8},         [ST_I64] = {"I64", 8},         [ST_I32] = {"I32", 4},
    [ST_I16] = {"I16", 2},         [ST_I8] = {"I8", 1},           [ST_U64] = {"U64", 8},
    [ST_U32] = {"U32", 4},         [ST_U16] = {"U16", 2},         [ST_U8] = {"U8", 1},
    [ST_BOOL] = {"BOOL", 1},       [ST_F8_E4M3] = {"F8_E4M3", 1}, [ST_F8_E5M2] = {"F8_E5M2", 1},
    [ST_F8_E8M0] = {"F8_E8M0", 1},
};

const char *st_dtype_name(st_dtype d) {
  return ((unsigned)d < ST_DTYPE_COUNT) ? dtype_info[d].name : "?";
}
int st_dtype_size(st_dtype d) { return ((unsigned)d < ST_DTYPE_COUNT) ? dtype_info[d].size : 0; }

void st_shape_string(int ndim, const int64_t *shape, char *buf, size_t buflen) {
  size_t used = 0;
  if (buflen == 0) return;
  buf[0] = '\0';
  int k = snprintf(buf, buflen, "[");
  if (k > 0) used = (size_t)k;
  for (int i = 0; i < ndim && used < buflen; i++) {
    k = snprintf(buf + used, buflen - used, "%s%" PRId64, i ? ", " : "", shape[i]);
    if (k > 0) used += (size_t)k;
  }
  if (used < buflen) snprintf(buf + used, buflen - used, "]");
}

static int cmp_tensor_name(const void *x, const void *y) {
  return strcmp(((const st_tensor *)x)->name, ((const st_tensor *)y)->name);
}

const st_tensor *st_find(const st_archive *a, const char *name) {
  if (!a || a->ntensors == 0) return NULL;
  st_tensor key;
  key.name = (char *)name;
  return bsearch(&key, a->tensors, (size_t)a->ntensors, sizeof *a->tensors, cmp_tensor_name);
}

void st_close(st_archive *a) {
  if (!a) return;
  for (int i = 0; i < a->nfiles; i++) {
    if (a->files[i].map) munmap(a->files[i].map, (size_t)a->files[i].size);
    free(a->files[i].path);
  }
  free(a->files);
  for (int64_t i = 0; i < a->ntensors; i++) free(a->tensors[i].name);
  free(a->tensors);
  memset(a, 0, sizeof *a);
}

/* A JSON number that is an exact non-negative integer no larger than 2^53 (the largest that a
 * double holds exactly; cJSON parses numbers as doubles). */
static int json_u53(const cJSON *v, int64_t *out) {
  if (!cJSON_IsNumber(v)) return -1;
  double d = v->valuedouble;
  if (!(d >= 0.0) || d > 9007199254740992.0 || d != floor(d)) return -1;
  *out = (int64_t)d;
  return 0;
}

static char *xstrdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = malloc(n);
  if (p) memcpy(p, s, n);
  return p;
}

/* Map one file and register it in a->files (index *file_index). */
static int map_file(st_archive *a, const char *path, int *file_index, char *err, size_t errlen) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) {
    rssm_fail(err, errlen, "%s: cannot open (%s)", path, strerror(errno));
    return errno == ENOENT || errno == ENOTDIR ? RSSM_ERR_INPUT : RSSM_ERR_IO;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    rssm_fail(err, errlen, "%s: cannot stat (%s)", path, strerror(errno));
    close(fd);
    return RSSM_ERR_IO;
  }
  if (!S_ISREG(st.st_mode)) {
    rssm_fail(err, errlen, "%s: not a regular file", path);
    close(fd);
    return RSSM_ERR_INPUT;
  }
  int64_t size = (int64_t)st.st_size;
  if (size < 8) {
    rssm_fail(err, errlen,
              "%s: file is %" PRId64 " bytes (expected at least 8: the header length field)", path,
              size);
    close(fd);
    return RSSM_ERR_INPUT;
  }
  if ((uint64_t)size > (uint64_t)SIZE_MAX) {
    rssm_fail(err, errlen, "%s: file of %" PRId64 " bytes cannot be mapped", path, size);
    close(fd);
    return RSSM_ERR_IO;
  }
  void *map = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED) {
    rssm_fail(err, errlen, "%s: mmap failed (%s)", path, strerror(errno));
    return RSSM_ERR_IO;
  }
  st_file *nf = realloc(a->files, (size_t)(a->nfiles + 1) * sizeof *nf);
  if (!nf) {
    munmap(map, (size_t)size);
    rssm_fail(err, errlen, "%s: out of memory", path);
    return RSSM_ERR_IO;
  }
  a->files = nf;
  const int fi = a->nfiles++;
  *file_index = fi;
  a->files[fi].map = map;
  a->files[fi].size = size;
  a->files[fi].path = xstrdup(path);
  if (!a->files[fi].path) {
    rssm_fail(err, errlen, "%s: out of memory", path);
    return RSSM_ERR_IO;
  }

  return RSSM_OK;
}

/* One header entry `name` of file fi into *t, its byte span into span [2] (begin, end of the data
 * block data [data_size]). */
static int parse_tensor(const cJSON *e, const char *name, const char *path, int fi,
                        const unsigned char *data, int64_t data_size, st_tensor *t,
                        int64_t *span, char *err, size_t errlen) {
  char sh[256];
  if (!cJSON_IsObject(e)) {
    rssm_fail(err, errlen, "%s: tensor '%s': header entry is not an object", path, name);
    return RSSM_ERR_INPUT;
  }
  const cJSON *jd = cJSON_GetObjectItemCaseSensitive(e, "dtype");
  const cJSON *js = cJSON_GetObjectItemCaseSensitive(e, "shape");
  const cJSON *jo = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
  if (!cJSON_IsString(jd)) {
    rssm_fail(err, errlen, "%s: tensor '%s': field dtype missing or not a string", path, name);
    return RSSM_ERR_INPUT;
  }
  int dt = -1;
  for (int d = 0; d < ST_DTYPE_COUNT; d++)
    if (strcmp(jd->valuestring, dtype_info[d].name) == 0) dt = d;
  if (dt < 0) {
    rssm_fail(
        err, errlen,
        "%s: tensor '%s': unknown dtype '%s' (expected a safetensors dtype such as F32, BF16, "
        "F16)",
        path, name, jd->valuestring);
    return RSSM_ERR_INPUT;
  }
  if (!cJSON_IsArray(js)) {
    rssm_fail(err, errlen, "%s: tensor '%s': field shape missing or not an array", path, name);
    return RSSM_ERR_INPUT;
  }
  memset(t, 0, sizeof *t);
  t->dtype = (st_dtype)dt;
  int nd = cJSON_GetArraySize(js);
  if (nd > ST_MAX_NDIM) {
    rssm_fail(err, errlen, "%s: tensor '%s': shape has %d axes (expected at most %d)", path, name,
              nd, ST_MAX_NDIM);
    return RSSM_ERR_INPUT;
  }
  t->ndim = nd;
  int64_t numel = 1;
  int bad = 0;
  for (int i = 0; i < nd; i++) {
    const cJSON *v = cJSON_GetArrayItem(js, i);
    int64_t d;
    if (json_u53(v, &d) != 0) {
      rssm_fail(
          err, errlen,
          "%s: tensor '%s': shape[%d] is not a non-negative integer below 2^53 (found %s%g)",
          path, name, i, cJSON_IsNumber(v) ? "" : "a non-number ",
          cJSON_IsNumber(v) ? v->valuedouble : 0.0);
      bad = 1;
      break;
    }
    t->shape[i] = d;
    if (d != 0 && numel > INT64_MAX / d) {
      rssm_fail(err, errlen, "%s: tensor '%s': shape overflows 64-bit element count", path, name);
      bad = 1;
      break;
    }
    numel *= d;
  }
  if (bad) {
    return RSSM_ERR_INPUT;
  }
  t->numel = numel;
  int64_t esize = dtype_info[dt].size;
  if (numel > INT64_MAX / esize) {
    rssm_fail(err, errlen, "%s: tensor '%s': byte size overflows 64 bits", path, name);
    return RSSM_ERR_INPUT;
  }
  int64_t nbytes = numel * esize;
  int64_t b0, b1;
  if (!cJSON_IsArray(jo) || cJSON_GetArraySize(jo) != 2 ||
      json_u53(cJSON_GetArrayItem(jo, 0), &b0) != 0 ||
      json_u53(cJSON_GetArrayItem(jo, 1), &b1) != 0) {
    rssm_fail(err, errlen,
              "%s: tensor '%s': field data_offsets is not two non-negative integers [begin, end]",
              path, name);
    return RSSM_ERR_INPUT;
  }
  if (b1 < b0 || b1 > data_size) {
    rssm_fail(err, errlen,
              "%s: tensor '%s': data_offsets [%" PRId64 ", %" PRId64
              "] out of range (expected "
              "begin <= end <= %" PRId64 ", the size of the data block)",
              path, name, b0, b1, data_size);
    return RSSM_ERR_INPUT;
  }
  if (b1 - b0 != nbytes) {
    st_shape_string(nd, t->shape, sh, sizeof sh);
    rssm_fail(err, errlen,
              "%s: tensor '%s': data_offsets [%" PRId64 ", %" PRId64 "] span %" PRId64
              " bytes (expected %" PRId64 " for shape %s of %s)",
              path, name, b0, b1, b1 - b0, nbytes, sh, dtype_info[dt].name);
    return RSSM_ERR_INPUT;
  }
  t->name = xstrdup(name);
  if (!t->name) {
    rssm_fail(err, errlen, "%s: out of memory", path);
    return RSSM_ERR_IO;
  }
  t->file = fi;
  t->data = data + b0;
  span[0] = b0;
  span[1] = b1;
  return RSSM_OK;
}

/* The k tensors of one file (a->tensors [base, base + k), byte spans span [k][2]) must not
 * overlap. */
static int check_overlap(const st_archive *a, int64_t base, const int64_t *span, int64_t k,
                         const char *path, char *err, size_t errlen) {
  int rc = RSSM_OK;
  /* Overlap: sort the spans by begin (insertion order of an index array, small n) and check
   * neighbours. Empty tensors occupy no bytes and cannot overlap. */
  int64_t *ord = malloc((size_t)(k + 1) * sizeof *ord); /* [k] */
  if (!ord) {
    rssm_fail(err, errlen, "%s: out of memory", path);
    rc = RSSM_ERR_IO;
  } else {
    int64_t m = 0;
    for (int64_t i = 0; i < k; i++)
      if (span[2 * i + 1] > span[2 * i]) ord[m++] = i;
    /* shell sort by begin */
    for (int64_t gap = m / 2; gap > 0; gap /= 2)
      for (int64_t i = gap; i < m; i++) {
        int64_t v = ord[i], j = i;
        while (j >= gap && span[2 * ord[j - gap]] > span[2 * v]) {
          ord[j] = ord[j - gap];
          j -= gap;
        }
        ord[j] = v;
      }
    for (int64_t i = 1; i < m && rc == RSSM_OK; i++) {
      int64_t p = ord[i - 1], q = ord[i];
      if (span[2 * q] < span[2 * p + 1]) {
        rssm_fail(err, errlen,
                  "%s: tensors '%s' [%" PRId64 ", %" PRId64 ") and '%s' [%" PRId64 ", %" PRId64
                  ") overlap (expected disjoint data_offsets)",
                  path, a->tensors[base + p].name, span[2 * p], span[2 * p + 1],
                  a->tensors[base + q].name, span[2 * q], span[2 * q + 1]);
        rc = RSSM_ERR_INPUT;
      }
    }
    free(ord);
  }
  return rc;
}

/* Map one file and append its tensors to a. */
static int add_file(st_archive *a, const char *path, char *err, size_t errlen) {
  int fi;
  int rc = map_file(a, path, &fi, err, errlen);
  if (rc != RSSM_OK) return rc;
  const unsigned char *bytes = a->files[fi].map;
  const int64_t size = a->files[fi].size;
  uint64_t hlen = 0;
  for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | bytes[i];
  if (hlen > (uint64_t)(size - 8)) {
    rssm_fail(err, errlen,
              "%s: header length %" PRIu64
              " runs past the end of the file (expected at most %" PRId64 ", the %" PRId64
              " bytes after the length field)",
              path, hlen, size - 8, size - 8);
    return RSSM_ERR_INPUT;
  }
  if ((int64_t)hlen > ST_MAX_HEADER || hlen < 2) {
    rssm_fail(err, errlen, "%s: header length %" PRIu64 " (expected 2 to %" PRId64 " bytes)", path,
              hlen, ST_MAX_HEADER);
    return RSSM_ERR_INPUT;
  }
  const int64_t data_start = 8 + (int64_t)hlen;
  const int64_t data_size = size - data_start;
  cJSON *root = cJSON_ParseWithLength((const char *)bytes + 8, (size_t)hlen);
  char why[512];
  if (json_strict_check(root, (const char *)bytes + 8, (size_t)hlen, why, sizeof why)) {
    rssm_fail(err, errlen, "%s: header: %s", path, why);
    cJSON_Delete(root);
    return RSSM_ERR_INPUT;
  }
  if (!root || !cJSON_IsObject(root)) {
    rssm_fail(err, errlen,
              "%s: header is not a JSON object (expected {\"name\": {\"dtype\", \"shape\", "
              "\"data_offsets\"}, ...})",
              path);
    cJSON_Delete(root);
    return RSSM_ERR_INPUT;
  }
  int64_t count = 0;
  for (const cJSON *e = root->child; e; e = e->next)
    if (strcmp(e->string, "__metadata__") != 0) count++;
  int64_t base = a->ntensors;
  st_tensor *nt = realloc(a->tensors, (size_t)(base + count + 1) * sizeof *nt);
  if (!nt) {
    cJSON_Delete(root);
    rssm_fail(err, errlen, "%s: out of memory for %" PRId64 " tensors", path, count);
    return RSSM_ERR_IO;
  }
  a->tensors = nt;
  /* begin/end of each tensor of this file, for the overlap check: [count][2] */
  int64_t *span = malloc((size_t)(count + 1) * 2 * sizeof *span);
  if (!span) {
    cJSON_Delete(root);
    rssm_fail(err, errlen, "%s: out of memory", path);
    return RSSM_ERR_IO;
  }
  int64_t k = 0;
  for (const cJSON *e = root->child; e && rc == RSSM_OK; e = e->next) {
    const char *name = e->string;
    if (strcmp(name, "__metadata__") == 0) continue;
    rc = parse_tensor(e, name, path, fi, bytes + data_start, data_size, &a->tensors[base + k],
                      span + 2 * k, err, errlen);
    if (rc == RSSM_OK) k++;
  }
  a->ntensors = base + k;
  if (rc == RSSM_OK) rc = check_overlap(a, base, span, k, path, err, errlen);
  free(span);
  cJSON_Delete(root);
  return rc;
}

/* Sort by name and refuse duplicates (possible across shards). */
static int finish(st_archive *a, char *err, size_t errlen) {
  if (a->ntensors > 1)
    qsort(a->tensors, (size_t)a->ntensors, sizeof *a->tensors, cmp_tensor_name);
  for (int64_t i = 1; i < a->ntensors; i++)
    if (strcmp(a->tensors[i - 1].name, a->tensors[i].name) == 0) {
      rssm_fail(err, errlen, "tensor '%s' appears in both %s and %s (expected once)",
                a->tensors[i].name, a->files[a->tensors[i - 1].file].path,
                a->files[a->tensors[i].file].path);
      return RSSM_ERR_INPUT;
    }
  return RSSM_OK;
}

int st_open_file(const char *path, st_archive *a, char *err, size_t errlen) {
  memset(a, 0, sizeof *a);
  int rc = add_file(a, path, err, errlen);
  if (rc == RSSM_OK) rc = finish(a, err, errlen);
  if (rc != RSSM_OK) st_close(a);
  return rc;
}

static char *read_text(const char *path, size_t *len, char *err, size_t errlen, int *rc) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    rssm_fail(err, errlen, "%s: cannot open (%s)", path, strerror(errno));
    *rc = RSSM_ERR_INPUT;
    return NULL;
  }
  size_t cap = 1 << 16, n = 0, got;
  char *buf = malloc(cap + 1);
  while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
    n += got;
    if (n == cap) {
      if (cap > ((size_t)1 << 30)) {
        free(buf);
        fclose(f);
        rssm_fail(err, errlen, "%s: larger than 1 GiB (expected a JSON text file)", path);
        *rc = RSSM_ERR_INPUT;
        return NULL;
      }
      char *nb = realloc(buf, 2 * cap + 1);
      if (!nb) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = nb;
      cap *= 2;
    }
  }
  int bad = ferror(f);
  fclose(f);
  if (!buf || bad) {
    free(buf);
    rssm_fail(err, errlen, "%s: read failed or out of memory", path);
    *rc = RSSM_ERR_IO;
    return NULL;
  }
  buf[n] = '\0';
  *len = n;
  *rc = RSSM_OK;
  return buf;
}

/* Sharded checkpoint: {"weight_map": {"tensor": "file.safetensors", ...}}. Every file named is
 * opened once; every tensor named must be in the file that the map names. */
static int open_index(const char *dir, const char *index_path, st_archive *a, char *err,
                      size_t errlen) {
  size_t len = 0;
  int rc;
  char *text = read_text(index_path, &len, err, errlen, &rc);
  if (!text) return rc;
  cJSON *root = cJSON_ParseWithLength(text, len);
  char why[512];
  int strict_bad = json_strict_check(root, text, len, why, sizeof why);
  free(text);
  if (strict_bad) {
    rssm_fail(err, errlen, "%s: %s", index_path, why);
    cJSON_Delete(root);
    return RSSM_ERR_INPUT;
  }
  const cJSON *wm = root ? cJSON_GetObjectItemCaseSensitive(root, "weight_map") : NULL;
  if (!cJSON_IsObject(wm)) {
    rssm_fail(err, errlen,
              "%s: field weight_map missing or not an object (expected {\"tensor\": "
              "\"file.safetensors\", ...})",
              index_path);
    cJSON_Delete(root);
    return RSSM_ERR_INPUT;
  }
  rc = RSSM_OK;
  char path[4096];
  for (const cJSON *e = wm->child; e && rc == RSSM_OK; e = e->next) {
    if (!cJSON_IsString(e) || strchr(e->valuestring, '/') || e->valuestring[0] == '.' ||
        e->valuestring[0] == '\0') {
      rssm_fail(err, errlen, "%s: weight_map['%s'] is not a plain file name in the model directory",
                index_path, e->string);
      rc = RSSM_ERR_INPUT;
      break;
    }
    int n = snprintf(path, sizeof path, "%s/%s", dir, e->valuestring);
    if (n < 0 || (size_t)n >= sizeof path) {
      rssm_fail(err, errlen, "%s: path of shard '%s' too long", index_path, e->valuestring);
      rc = RSSM_ERR_INPUT;
      break;
    }
    int seen = 0;
    for (int i = 0; i < a->nfiles; i++)
      if (strcmp(a->files[i].path, path) == 0) seen = 1;
    if (!seen) rc = add_file(a, path, err, errlen);
  }
  if (rc == RSSM_OK) rc = finish(a, err, errlen);
  for (const cJSON *e = wm->child; e && rc == RSSM_OK; e = e->next) {
    const st_tensor *t = st_find(a, e->string);
    snprintf(path, sizeof path, "%s/%s", dir, e->valuestring);
    if (!t) {
      rssm_fail(err, errlen, "%s: tensor '%s' listed in weight_map is missing from %s", index_path,
                e->string, path);
      rc = RSSM_ERR_INPUT;
    } else if (strcmp(a->files[t->file].path, path) != 0) {
      rssm_fail(err, errlen, "%s: tensor '%s' listed in %s but found in %s", index_path, e->string,
                path, a->files[t->file].path);
      rc = RSSM_ERR_INPUT;
    }
  }
  cJSON_Delete(root);
  return rc;
}

int st_open_dir(const char *dir, st_archive *a, char *err, size_t errlen) {
  memset(a, 0, sizeof *a);
  char path[4096];
  int n = snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
  if (n < 0 || (size_t)n >= sizeof path) {
    rssm_fail(err, errlen, "%s: model directory path too long", dir);
    return RSSM_ERR_INPUT;
  }
  struct stat st;
  int rc;
  if (stat(path, &st) == 0) {
    rc = open_index(dir, path, a, err, errlen);
  } else {
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (stat(path, &st) != 0) {
      rssm_fail(err, errlen,
                "%s: no model.safetensors or model.safetensors.index.json (expected a Hugging Face "
                "model directory)",
                dir);
      return RSSM_ERR_INPUT;
    }
    rc = add_file(a, path, err, errlen);
    if (rc == RSSM_OK) rc = finish(a, err, errlen);
  }
  if (rc != RSSM_OK) st_close(a);
  return rc;
}

/* IEEE binary16 to binary32: exact (every half is a float). */
static float half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t man = h & 0x3FFu;
  uint32_t bits;
  if (exp == 0x1F) {
    bits = sign | 0x7F800000u | (man << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112u) << 23) | (man << 13);
  } else if (man == 0) {
    bits = sign;
  } else {
    /* subnormal: value = man * 2^-24; normalise */
    int e = -1;
    do {
      man <<= 1;
      e++;
    } while (!(man & 0x400u));
    man &= 0x3FFu;
    bits = sign | ((uint32_t)(112 - e) << 23) | (man << 13);
  }
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

int st_to_f32(const st_archive *a, const st_tensor *t, float *out, char *err, size_t errlen) {
  const unsigned char *p = t->data;
  switch (t->dtype) {
    case ST_F32:
      if (t->numel) memcpy(out, p, (size_t)t->numel * 4);
      return RSSM_OK;
    case ST_BF16:
      for (int64_t i = 0; i < t->numel; i++) {
        uint16_t h;
        memcpy(&h, p + 2 * i, 2);
        uint32_t bits = (uint32_t)h << 16;
        memcpy(&out[i], &bits, 4);
      }
      return RSSM_OK;
    case ST_F16:
      for (int64_t i = 0; i < t->numel; i++) {
        uint16_t h;
        memcpy(&h, p + 2 * i, 2);
        out[i] = half_to_float(h);
      }
      return RSSM_OK;
    default:
      rssm_fail(err, errlen,
                "%s: tensor '%s': dtype %s is not supported (expected F32, BF16 or F16)",
                a->files[t->file].path, t->name, st_dtype_name(t->dtype));
      return RSSM_ERR_INPUT;
  }
}
