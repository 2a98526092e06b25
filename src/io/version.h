/* The tool's version, recorded by every file writer (run, ssm-sim, theory) and printed by
 * `replayssm --version`. */
#ifndef RSSM_IO_VERSION_H
#define RSSM_IO_VERSION_H

/* "MAJOR.MINOR.PATCH" from the CMake project. */
const char *rssm_version(void);

#endif
