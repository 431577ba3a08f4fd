#include "probe/linerate.h"

#include <stdio.h>

struct speed {
    unsigned code;
    const char *name;
    double nominal_gbps; /* per lane, as ibstat's "Rate" adds it up */
    double data_gbps;    /* per lane, after encoding */
};

/* Codes from the InfiniBand PortInfo LinkSpeedActive/Ext fields as verbs
 * exposes them; XDR only fits active_speed_ex (newer rdma-core). */
static const struct speed speeds[] = {
    {1, "SDR", 2.5, 2.0},    {2, "DDR", 5.0, 4.0},    {4, "QDR", 10.0, 8.0},
    {8, "FDR10", 10.0, 10.0}, {16, "FDR", 14.0, 14.0625 * 64 / 66},
    {32, "EDR", 25.0, 25.0},  {64, "HDR", 50.0, 50.0}, {128, "NDR", 100.0, 100.0},
    {256, "XDR", 200.0, 200.0},
};

static const struct speed *find_speed(unsigned code)
{
    for (size_t i = 0; i < sizeof speeds / sizeof *speeds; i++)
        if (speeds[i].code == code)
            return &speeds[i];
    return NULL;
}

int probe_width_lanes(unsigned width_code)
{
    switch (width_code) {
    case 1: return 1;
    case 2: return 4;
    case 4: return 8;
    case 8: return 12;
    case 16: return 2;
    }
    return 0;
}

double probe_lane_data_gbps(unsigned speed_code)
{
    const struct speed *s = find_speed(speed_code);
    return s ? s->data_gbps : 0.0;
}

const char *probe_speed_name(unsigned speed_code)
{
    const struct speed *s = find_speed(speed_code);
    return s ? s->name : "?";
}

double probe_line_rate_gbps(unsigned speed_code, unsigned width_code)
{
    return probe_lane_data_gbps(speed_code) * probe_width_lanes(width_code);
}

void probe_rate_describe(unsigned speed_code, unsigned width_code, char *buf, size_t len)
{
    const struct speed *s = find_speed(speed_code);
    int lanes = probe_width_lanes(width_code);
    if (s == NULL || lanes == 0) {
        snprintf(buf, len, "unknown (speed %u, width %u)", speed_code, width_code);
        return;
    }
    snprintf(buf, len, "%dX %s (%g Gb/s)", lanes, s->name, s->nominal_gbps * lanes);
}
