/* The tool's version (version.h). */
#include "src/io/version.h"

#ifndef RSSM_VERSION
#error "RSSM_VERSION is defined by src/io/CMakeLists.txt"
#endif

const char *rssm_version(void) { return RSSM_VERSION; }
