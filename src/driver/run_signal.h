/* SIGTERM and SIGINT during `replayssm run` (docs/reliability.md, "Signals"): the first one is
 * noted and the run stops after the block in flight, with a checkpoint, a line saying how to
 * resume, and exit status 128 + the signal; a second one ends the process at once (the default
 * action: the last checkpoint, written atomically, is still consistent). */
#ifndef RSSM_DRIVER_RUN_SIGNAL_H
#define RSSM_DRIVER_RUN_SIGNAL_H

/* Installs the handlers (until run_signal_restore). */
void run_signal_install(void);
/* The signal received since run_signal_install, or 0. */
int run_signal_pending(void);
/* Restores the actions found by run_signal_install. */
void run_signal_restore(void);

#endif
