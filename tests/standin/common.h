/* What both stand-in libraries use: the environment knobs
 * (docs/standin.md) and growing arrays. Nothing here is shared state: each
 * call reads the environment afresh, so a knob a program sets before its
 * first CUDA or NCCL call counts. */
#ifndef FBSI_COMMON_H
#define FBSI_COMMON_H

#include <stddef.h>
#include <stdint.h>

/* The integer in `name`, or `def` when unset, empty or not a number. */
long fbsi_env_long(const char *name, long def);

/* Bytes in `name`: a plain count or a number with a binary suffix (K, M,
 * G, T: 80G, 1.5G, 512M); `def` when unset or malformed. */
uint64_t fbsi_env_bytes(const char *name, uint64_t def);

/* The value of `name`, or `def` when unset or empty. */
const char *fbsi_env_str(const char *name, const char *def);

/* `array` (of `n` elements of `elem` bytes, room for *cap) with room for
 * one more: itself, or a larger copy (*cap updated); NULL when out of
 * memory, `array` left as it was. */
void *fbsi_grow(void *array, size_t *cap, size_t n, size_t elem);

#endif
