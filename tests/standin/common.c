#include "common.h"

#include <stdlib.h>

long fbsi_env_long(const char *name, long def)
{
    const char *v = getenv(name);
    char *end = NULL;
    if (v == NULL || *v == '\0')
        return def;
    long n = strtol(v, &end, 10);
    return *end == '\0' ? n : def;
}

uint64_t fbsi_env_bytes(const char *name, uint64_t def)
{
    const char *v = getenv(name);
    char *end = NULL;
    if (v == NULL || *v == '\0')
        return def;
    double n = strtod(v, &end);
    int shift = 0;
    switch (*end) {
    case 'K': case 'k': shift = 10; end++; break;
    case 'M': case 'm': shift = 20; end++; break;
    case 'G': case 'g': shift = 30; end++; break;
    case 'T': case 't': shift = 40; end++; break;
    default: break;
    }
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end != '\0' || n < 0 || n > 1e15)
        return def;
    return (uint64_t)(n * (double)(1ULL << shift));
}

const char *fbsi_env_str(const char *name, const char *def)
{
    const char *v = getenv(name);
    return v != NULL && *v != '\0' ? v : def;
}

void *fbsi_grow(void *array, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return array;
    size_t more = *cap ? *cap * 2 : 16;
    void *bigger = realloc(array, more * elem);
    if (bigger != NULL)
        *cap = more;
    return bigger;
}
