/* `bench e2e --transformers` (e2e_transformers.h). */
#include "src/bench_e2e/e2e_transformers.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "src/io/cli_opts.h"

#define CMD "bench e2e"

extern char **environ;

int e2e_run_transformers(const char *py, const char *script, const char *dir, const int *Ks, int nK,
                         int64_t steps, int64_t warmup, const char *json,
                         double *hf_ms /* [nK] */) {
  char streams[256] = "", st[32], wu[32];
  for (int i = 0; i < nK; i++) {
    size_t n = strlen(streams);
    snprintf(streams + n, sizeof streams - n, "%s%d", i ? "," : "", Ks[i]);
  }
  snprintf(st, sizeof st, "%" PRId64, steps);
  snprintf(wu, sizeof wu, "%" PRId64, warmup);
  char *argv[] = {(char *)py,
                  (char *)script,
                  (char *)"--model",
                  (char *)dir,
                  (char *)"--streams",
                  streams,
                  (char *)"--steps",
                  st,
                  (char *)"--warmup",
                  wu,
                  (char *)"--out",
                  (char *)json,
                  NULL};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid;
  fflush(stdout);
  fflush(stderr);
  int e = posix_spawnp(&pid, py, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (e != 0) {
    cli_error(CMD, "--transformers %s: cannot start (%s)", py, strerror(e));
    return -1;
  }
  int ws = 0;
  while (waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0) {
    cli_error(CMD, "--transformers: %s %s failed (status %d)", py, script,
              WIFEXITED(ws) ? WEXITSTATUS(ws) : -1);
    return -1;
  }
  FILE *f = fopen(json, "rb");
  char *text = NULL;
  long len = -1;
  if (f && fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
      (text = malloc((size_t)len + 1)) && fread(text, 1, (size_t)len, f) == (size_t)len)
    text[len] = 0;
  else {
    free(text);
    text = NULL;
  }
  if (f) fclose(f);
  cJSON *root = text ? cJSON_Parse(text) : NULL;
  free(text);
  const cJSON *runs = root ? cJSON_GetObjectItemCaseSensitive(root, "runs") : NULL;
  if (!cJSON_IsArray(runs)) {
    cli_error(CMD, "--transformers: %s: not the JSON of scripts/bench/transformers_decode.py",
              json);
    cJSON_Delete(root);
    return -1;
  }
  for (int i = 0; i < nK; i++) hf_ms[i] = -1;
  const cJSON *r;
  cJSON_ArrayForEach(r, runs) {
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(r, "K");
    const cJSON *ms = cJSON_GetObjectItemCaseSensitive(r, "ms_per_step");
    if (!cJSON_IsNumber(k) || !cJSON_IsNumber(ms)) continue;
    for (int i = 0; i < nK; i++)
      if (Ks[i] == (int)k->valuedouble) hf_ms[i] = ms->valuedouble;
  }
  cJSON_Delete(root);
  return 0;
}
