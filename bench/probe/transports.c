/* The transport table: --transport names a row. */
#include "probe/transport.h"

#include <string.h>

#include "core/text.h"

static const struct probe_transport_ops *const transports[] = {
    [PROBE_RDMA] = &probe_transport_verbs,
    [PROBE_TCP] = &probe_transport_tcp,
    [PROBE_OFI] = &probe_transport_ofi,
};

#define NTRANSPORTS (sizeof transports / sizeof transports[0])

const struct probe_transport_ops *probe_transport_find(const char *name,
                                                       enum probe_transport *row)
{
    for (size_t i = 0; i < NTRANSPORTS; i++) {
        if (strcmp(transports[i]->name, name) == 0) {
            *row = (enum probe_transport)i;
            return transports[i];
        }
    }
    return NULL;
}

void probe_transport_names(int gpu_only, char *buf, size_t len)
{
    const char *names[NTRANSPORTS];
    size_t n = 0, used = 0;
    for (size_t i = 0; i < NTRANSPORTS; i++)
        if (!gpu_only || transports[i]->gpu_memory)
            names[n++] = transports[i]->name;
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++)
        fb_strbuf_append(buf, len, &used, "%s%s", i == 0 ? "" : i + 1 == n ? " or " : ", ",
                         names[i]);
}

void probe_transport_build(char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < NTRANSPORTS; i++)
        fb_strbuf_append(buf, len, &used, "%s%s%s", i == 0 ? "" : ", ", transports[i]->name,
                         transports[i]->unavailable != NULL ? " (not in this build)" : "");
}
