#include <string.h>

#include "coll/backend.h"

#ifdef HAVE_NCCL
extern const struct fb_backend_ops fb_backend_nccl;
#endif

const struct fb_backend_ops *fb_backend_find(const char *name, int *compiled)
{
    *compiled = 1;
    if (strcmp(name, "mpi") == 0)
        return &fb_backend_mpi;
    if (strcmp(name, "nccl") == 0) {
#ifdef HAVE_NCCL
        return &fb_backend_nccl;
#else
        *compiled = 0;
        return NULL;
#endif
    }
    *compiled = 0;
    return NULL;
}

const struct fb_backend_ops *fb_backend_default(void)
{
#ifdef HAVE_NCCL
    struct fb_err err = {0};
    if (fb_backend_nccl.available(&err) == FB_OK)
        return &fb_backend_nccl;
#endif
    return &fb_backend_mpi;
}

char *fb_buffer_span(const struct fb_buffers *b, enum fb_buf which, size_t off, size_t n,
                     const char *verb, struct fb_err *err)
{
    size_t len = which == FB_BUF_SEND ? b->send_bytes : b->recv_bytes;
    if (off > len || n > len - off) {
        fb_fail(err, FB_ERR_INTERNAL, "%s past buffer end (%zu + %zu > %zu)", verb, off, n, len);
        return NULL;
    }
    return (which == FB_BUF_SEND ? b->send : b->recv) + off;
}
