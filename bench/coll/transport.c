#include "coll/transport.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/gather.h"
#include "core/jsonio.h"
#include "core/text.h"
#include "nccl/nccl_log.h"

/* A pathological log must not make rank 0 gather gigabytes. */
#define LOG_CAP_BYTES (4u << 20)

void fb_nccl_capture_start(struct fb_nccl_capture *cap, const char *dir, char *note, size_t len)
{
    memset(cap, 0, sizeof *cap);
    note[0] = '\0';
    const char *user_file = getenv("NCCL_DEBUG_FILE");
    if (user_file != NULL && *user_file) {
        snprintf(note, len, "NCCL_DEBUG_FILE is set (%s): transport capture left to it; read it with fabric-report",
                 user_file);
        return;
    }
    snprintf(cap->path, sizeof cap->path, "%s/fabric-coll.%ld.nccl.log", dir, (long)getpid());
    unlink(cap->path);
    setenv("NCCL_DEBUG", "INFO", 1);
    setenv("NCCL_DEBUG_SUBSYS", "INIT,NET", 0);
    setenv("NCCL_DEBUG_FILE", cap->path, 1);
    cap->active = 1;
}

static char *read_capped(const char *path, int *truncated)
{
    *truncated = 0;
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return strdup("");
    char *buf = malloc(LOG_CAP_BYTES + 1);
    size_t n = buf ? fread(buf, 1, LOG_CAP_BYTES, f) : 0;
    *truncated = n == LOG_CAP_BYTES && fgetc(f) != EOF;
    fclose(f);
    if (buf == NULL)
        return strdup("");
    buf[n] = '\0';
    return buf;
}

/* The copy beside the results, written like them: never through a link
 * planted there or over something that is not a regular file. */
static void save_logs(const char *save_path, char **texts, int n)
{
    struct fb_str all = {0};
    for (int r = 0; r < n; r++)
        fb_str_addf(&all, "%s", texts[r]);
    struct fb_err ignored = {0};
    if (!all.oom)
        fb_out_write(save_path, fb_str_get(&all), all.len, &ignored);
    fb_str_free(&all);
}

enum fb_status fb_nccl_capture_finish(struct fb_nccl_capture *cap, const struct fb_world *w,
                                      const char *save_path, json_object **transport,
                                      struct fb_err *err)
{
    *transport = NULL;
    int truncated = 0;
    char *mine = cap->active ? read_capped(cap->path, &truncated) : strdup("");
    char **all = NULL;
    enum fb_status st = fb_gather_strings(w, mine ? mine : "", &all, err);
    free(mine);
    if (cap->active)
        unlink(cap->path);
    if (st != FB_OK || w->rank != 0)
        return st;
    if (save_path != NULL)
        save_logs(save_path, all, w->size);
    struct fb_nccl_log *log = fb_nccl_log_new();
    for (int r = 0; st == FB_OK && r < w->size; r++) {
        char source[64];
        snprintf(source, sizeof source, "rank %d", r);
        st = fb_nccl_log_feed(log, source, all[r], strlen(all[r]), err);
    }
    if (st == FB_OK)
        st = fb_nccl_log_transport(log, transport, err);
    fb_nccl_log_free(log);
    fb_gather_free(w, all);
    return st;
}

void fb_transport_describe(json_object *transport, char *buf, size_t len)
{
    const char *net = fb_json_get_string(transport, "net");
    json_object *gdr = NULL, *ranks = NULL;
    json_object_object_get_ex(transport, "gdr", &gdr);
    json_object_object_get_ex(transport, "per_rank", &ranks);
    snprintf(buf, len, "net %s, GPUDirect RDMA %s, %zu rank%s logged",
             net ? net : "none (no inter-node channel)",
             gdr == NULL ? "unknown" : json_object_get_boolean(gdr) ? "yes" : "no",
             ranks ? json_object_array_length(ranks) : (size_t)0,
             ranks && json_object_array_length(ranks) == 1 ? "" : "s");
}
