/* Which links are slow, and which endpoint is to blame. A fleet's bad cable
 * or NIC shows as links below a reference; an endpoint in most of the slow
 * links it takes part in is the suspect. */
#ifndef FB_PROBE_OUTLIERS_H
#define FB_PROBE_OUTLIERS_H

struct probe_link_score {
    int src, dst;       /* endpoint ids (ranks) */
    double avg_gbps;
    double line_gbps;   /* the lower of the two ports' line rates; 0 unknown */
};

struct probe_flag {
    int index;             /* into the scores */
    double reference_gbps; /* line rate or median */
    int by_line_rate;      /* 1: reference is the line rate, 0: the median */
    double threshold_gbps;
};

/* Flags links with avg < frac x reference, where the reference is the link's
 * line rate when known and the median of all links otherwise. Returns the
 * number of flags written to `flags` (room for n). */
int probe_flag_links(const struct probe_link_score *v, int n, double frac,
                     struct probe_flag *flags);

struct probe_suspect {
    int endpoint;
    int flagged; /* slow links it is in */
    int links;   /* all links it is in */
};

/* Endpoints in two or more flagged links that are at least half of their
 * links, most flagged first. Returns how many were written (room for
 * nendpoints). */
int probe_suspects(const struct probe_link_score *v, int n, const struct probe_flag *flags,
                   int nflags, int nendpoints, struct probe_suspect *out);

#endif
