#include "probe/devsel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/text.h"

static int is_present(const char *const *present, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(present[i], name) == 0)
            return 1;
    return 0;
}

/* The l-th comma-separated entry of `list`, or -1 when there are fewer. */
static int nth_entry(const char *list, int l, char *out, size_t len, int *count)
{
    int i = 0, found = -1;
    const char *p = list;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        if (i == l) {
            snprintf(out, len, "%.*s", (int)n, p);
            found = 0;
        }
        i++;
        if (comma == NULL)
            break;
        p = comma + 1;
    }
    *count = i;
    return found;
}

enum fb_status probe_pick_device(const char *const *present, int npresent, const char *requested,
                                 int local_rank, int local_size, const char *what,
                                 const char *flag, const char *host, char *out, size_t len,
                                 struct fb_err *err)
{
    char have[512];
    const char **sorted = malloc((size_t)(npresent > 0 ? npresent : 1) * sizeof *sorted);
    if (sorted == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory");
    memcpy(sorted, present, (size_t)npresent * sizeof *sorted);
    qsort(sorted, (size_t)npresent, sizeof *sorted, fb_name_order);
    fb_join_names(sorted, (size_t)npresent, "none", have, sizeof have);

    enum fb_status st = FB_OK;
    if (requested == NULL || *requested == '\0') {
        if (local_size > npresent)
            st = fb_fail(err, FB_ERR_USAGE,
                         "%s runs %d ranks but has %d %s%s (%s); launch one rank per %s or name "
                         "one to share with %s", host, local_size, npresent, what,
                         npresent == 1 ? "" : "s", have, what, flag);
        else
            snprintf(out, len, "%s", sorted[local_rank]);
    } else {
        int count = 0;
        char name[256];
        int miss = nth_entry(requested, local_rank, name, sizeof name, &count);
        if (count == 1)
            miss = nth_entry(requested, 0, name, sizeof name, &count);
        if (miss != 0 || (count > 1 && count < local_size))
            st = fb_fail(err, FB_ERR_USAGE,
                         "%s runs %d ranks but %s %s names %d %ss; give one per local rank or a "
                         "single one to share", host, local_size, flag, requested, count, what);
        else if (!is_present(present, npresent, name))
            st = fb_fail(err, FB_ERR_USAGE, "%s %s does not exist on %s; it has: %s", what, name,
                         host, have);
        else
            snprintf(out, len, "%s", name);
    }
    free(sorted);
    return st;
}
