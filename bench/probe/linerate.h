/* A port's line rate from the speed and width codes verbs reports
 * (ibv_port_attr.active_speed / active_width; RoCE ports map their Ethernet
 * speed onto the same codes). */
#ifndef FB_PROBE_LINERATE_H
#define FB_PROBE_LINERATE_H

#include <stddef.h>

/* Lanes for an active_width code (1, 2, 4, 8, 16 -> 1X, 4X, 8X, 12X, 2X); 0
 * for a code this build does not know. */
int probe_width_lanes(unsigned width_code);

/* Per-lane data rate in Gb/s after line encoding: what a bandwidth test can
 * approach. SDR/DDR/QDR lose 20 % to 8b/10b; FDR10 and later use 64b/66b
 * and their nominal lane rates already are data rates (FDR: 14.0625 Gbaud
 * -> 13.64 Gb/s). 0 for an unknown code. */
double probe_lane_data_gbps(unsigned speed_code);

/* "SDR" ... "NDR", "XDR", or "?". */
const char *probe_speed_name(unsigned speed_code);

/* Lanes x lane data rate, or 0 when either code is unknown. */
double probe_line_rate_gbps(unsigned speed_code, unsigned width_code);

/* "4X NDR (400 Gb/s)" as ibstat prints it, or "unknown (speed 3, width 2)". */
void probe_rate_describe(unsigned speed_code, unsigned width_code, char *buf, size_t len);

#endif
