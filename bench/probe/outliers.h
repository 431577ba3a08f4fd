/* Which links are slow, and which endpoint and direction is to blame. A
 * link runs from its source's send path to its destination's receive path;
 * a bad cable, transceiver lane or NIC shows as every link that shares one
 * of those paths being slow, while the links at its other ends are fine.
 *
 * Each endpoint is judged against what does not involve it: the line rate
 * where known, else the median of the links that do not touch it. A slow
 * node in a small fleet touches half the links or more; the median of all
 * links would then be its own. */
#ifndef FB_PROBE_OUTLIERS_H
#define FB_PROBE_OUTLIERS_H

struct probe_link_score {
    int src, dst;       /* endpoint ids (ranks) */
    double avg_gbps;
    double line_gbps;   /* the lower of the two ports' line rates; 0 unknown */
};

/* One direction of an endpoint: the links it sends on (or receives on). */
struct probe_path {
    int links, slow;
    double ratio; /* median of avg / reference over its links; NAN without links */
    int suspect;  /* every link of the path is slow, and the path explains it */
};

struct probe_suspect {
    int endpoint;
    struct probe_path send, recv;
    double reference_gbps; /* the median of links not touching it (0: line rate) */
    int by_line_rate;
    int flagged; /* slow links it is in, either direction */
    int links;   /* all links it is in */
};

/* Endpoints with a send or receive path whose links are all slow (below
 * frac x the line rate, or x the median of the links that do not touch the
 * endpoint). A path of one link is named only when the link's other end is
 * no likelier: its opposite path is not slow too, or it has fewer of its
 * links slow. Most severe (lowest ratio) first; returns how many were
 * written (room for nendpoints). */
int probe_suspects(const struct probe_link_score *v, int n, double frac, int nendpoints,
                   struct probe_suspect *out);

struct probe_flag {
    int index;             /* into the scores */
    double reference_gbps; /* line rate or median */
    int by_line_rate;      /* 1: reference is the line rate, 0: the median */
    double threshold_gbps;
};

/* Flags links with avg < frac x reference, where the reference is the link's
 * line rate when known, else the median of the links that touch none of the
 * suspects (all links when every link touches one). Returns the number of
 * flags written to `flags` (room for n). */
int probe_flag_links(const struct probe_link_score *v, int n, double frac,
                     const struct probe_suspect *suspects, int nsuspects,
                     struct probe_flag *flags);

#endif
