/* Status codes shared by the file readers/writers and the command line.
 *
 * They equal the process exit codes of `replayssm` (SPEC section 7 / docs/cli.md), so that a
 * command can return a library status unchanged: bad input is the caller's to fix, an I/O or
 * internal failure is not. */
#ifndef RSSM_IO_STATUS_H
#define RSSM_IO_STATUS_H

enum {
  RSSM_OK = 0,
  RSSM_ERR_IO = 1,    /* I/O failure, out of memory, internal error */
  RSSM_ERR_INPUT = 2  /* bad input or usage: a missing or malformed file, a bad argument */
};

#endif
