#include <string.h>

#include "scan/engine.h"

#ifdef HAVE_NCCL
extern const struct scan_engine_ops scan_engine_nccl;
#endif

const struct scan_engine_ops *scan_engine_find(const char *name, int *compiled)
{
    *compiled = 1;
    if (strcmp(name, "mpi") == 0)
        return &scan_engine_mpi;
    if (strcmp(name, "nccl") == 0) {
#ifdef HAVE_NCCL
        return &scan_engine_nccl;
#else
        *compiled = 0;
        return NULL;
#endif
    }
    *compiled = 0;
    return NULL;
}
