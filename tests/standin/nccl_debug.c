/* NCCL stand-in, the debug log: NCCL_DEBUG=WARN|INFO|TRACE lines in NCCL's
 * own form, "host:pid:tid [dev] NCCL INFO ...", on stdout or in
 * NCCL_DEBUG_FILE (%h host, %p pid), so that tools reading NCCL logs read
 * these. The settings are read at the first line, as NCCL does: a program
 * may set them before its first NCCL call. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "nccl_internal.h"

enum level { L_NONE, L_VERSION, L_WARN, L_INFO };

/* The library's own log state: one per process, as NCCL's. */
static struct {
    pthread_once_t once;
    pthread_mutex_t lock;
    enum level level;
    FILE *out;
    char host[FBSI_HOST_MAX];
} dbg = {.once = PTHREAD_ONCE_INIT, .lock = PTHREAD_MUTEX_INITIALIZER};

void fbsi_short_host(char *buf, size_t len)
{
    if (gethostname(buf, len) != 0)
        snprintf(buf, len, "unknown");
    buf[len - 1] = '\0';
    buf[strcspn(buf, ".")] = '\0';
}

static void expand_path(const char *spec, char *out, size_t len)
{
    size_t n = 0;
    for (const char *p = spec; *p && n + 1 < len; p++) {
        if (p[0] == '%' && (p[1] == 'h' || p[1] == 'p' || p[1] == '%')) {
            p++;
            if (*p == 'h')
                n += (size_t)snprintf(out + n, len - n, "%s", dbg.host);
            else if (*p == 'p')
                n += (size_t)snprintf(out + n, len - n, "%ld", (long)getpid());
            else
                out[n++] = '%';
            if (n >= len)
                n = len - 1;
        } else {
            out[n++] = *p;
        }
    }
    out[n] = '\0';
}

static void open_log(void)
{
    const char *lv = getenv("NCCL_DEBUG");
    fbsi_short_host(dbg.host, sizeof dbg.host);
    dbg.level = L_NONE;
    if (lv != NULL) {
        if (strcasecmp(lv, "VERSION") == 0)
            dbg.level = L_VERSION;
        else if (strcasecmp(lv, "WARN") == 0)
            dbg.level = L_WARN;
        else if (strcasecmp(lv, "INFO") == 0 || strcasecmp(lv, "TRACE") == 0)
            dbg.level = L_INFO;
    }
    dbg.out = stdout;
    const char *file = getenv("NCCL_DEBUG_FILE");
    if (dbg.level != L_NONE && file != NULL && *file) {
        char path[4096];
        expand_path(file, path, sizeof path);
        FILE *f = fopen(path, "w");
        if (f != NULL)
            dbg.out = f;
    }
}

static void vlog(enum level at, const char *tag, int dev, const char *fmt, va_list ap)
{
    pthread_once(&dbg.once, open_log);
    if (dbg.level < at)
        return;
    pthread_mutex_lock(&dbg.lock);
    fprintf(dbg.out, "%s:%ld:%ld [%d] NCCL %s ", dbg.host, (long)getpid(), (long)syscall(SYS_gettid), dev, tag);
    vfprintf(dbg.out, fmt, ap);
    fputc('\n', dbg.out);
    /* Each line whole on disk: a job that is killed keeps its log. */
    fflush(dbg.out);
    pthread_mutex_unlock(&dbg.lock);
}

void fbsi_info(int dev, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vlog(L_INFO, "INFO", dev, fmt, ap);
    va_end(ap);
}

void fbsi_warn(int dev, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vlog(L_WARN, "WARN", dev, fmt, ap);
    va_end(ap);
}
