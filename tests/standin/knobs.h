/* The stand-in's environment knobs (docs/standin.md), read by both stand-in
 * libraries. Nothing here is shared state: each call reads the environment
 * afresh, so a knob a program sets before its first CUDA or NCCL call counts. */
#ifndef FBSI_KNOBS_H
#define FBSI_KNOBS_H

#include <stddef.h>
#include <stdint.h>

/* The integer in `name`, or `def` when unset, empty or not a number. */
long fbsi_env_long(const char *name, long def);

/* Bytes in `name`: a plain count or a number with a binary suffix (K, M,
 * G, T: 80G, 1.5G, 512M); `def` when unset or malformed. */
uint64_t fbsi_env_bytes(const char *name, uint64_t def);

/* The value of `name`, or `def` when unset or empty. */
const char *fbsi_env_str(const char *name, const char *def);

#endif
