/* run_signal_install / run_signal_pending / run_signal_restore (run_signal.h). */
#include "src/driver/run_signal.h"

#include <signal.h>
#include <string.h>

static volatile sig_atomic_t pending;
static struct sigaction old_term, old_int;

static void note(int sig) { pending = sig; }

void run_signal_install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = note;
  sigemptyset(&sa.sa_mask);
  /* the second signal takes the default action: stop at once */
  sa.sa_flags = SA_RESTART | SA_RESETHAND;
  pending = 0;
  sigaction(SIGTERM, &sa, &old_term);
  sigaction(SIGINT, &sa, &old_int);
}

int run_signal_pending(void) { return (int)pending; }

void run_signal_restore(void) {
  sigaction(SIGTERM, &old_term, NULL);
  sigaction(SIGINT, &old_int, NULL);
}
