/* The collective table, the one list of collectives: names, look-ups, bus
 * factors and their inverses. */
#include <string.h>

#include "check.h"
#include "nccl/collective.h"

static void test_every_row_is_whole(void)
{
    for (int i = 0; i < FB_NCOLLS; i++) {
        const struct fb_collective *c = fb_collective((enum fb_coll_id)i);
        CHECK_INT(c->id, i);
        CHECK(c->name != NULL && c->perf_name != NULL);
        CHECK(strncmp(c->perf_name, c->name, strlen(c->name)) == 0);
        CHECK(c->counts && c->bus_factor && c->ranks_for_factor && c->inplace_offsets && c->input &&
              c->expected);
        CHECK(fb_collective_named(c->name) == c);
        CHECK(fb_collective_find(c->perf_name) == c);
    }
}

static void test_names_list_the_table(void)
{
    char names[FB_COLL_NAMES_MAX];
    fb_collective_names(names, sizeof names, " or ");
    CHECK(strncmp(names, "all_reduce, all_gather, ", 24) == 0);
    CHECK_CONTAINS(names, fb_collective((enum fb_coll_id)(FB_NCOLLS - 1))->name);
    CHECK_CONTAINS(names, " or ");
    CHECK(fb_collective_known("alltoall"));
    CHECK(!fb_collective_known("allreduce")); /* exact names only */
    CHECK(fb_collective_find("allreduce") != NULL);
}

static void test_collective_in_file_names(void)
{
    CHECK_STR(fb_collective_in_text("logs/AllReduce_8n.log")->name, "all_reduce");
    CHECK_STR(fb_collective_in_text("reduce_scatter_perf.txt")->name, "reduce_scatter");
    CHECK_STR(fb_collective_in_text("all-to-all-16.txt")->name, "alltoall");
    CHECK_STR(fb_collective_in_text("reduce.log")->name, "reduce");
    CHECK(fb_collective_in_text("nccl.log") == NULL);
}

static void test_rank_count_from_bus_factor(void)
{
    for (int n = 2; n <= 512; n *= 2) {
        const struct fb_collective *ar = fb_collective(FB_ALL_REDUCE);
        const struct fb_collective *ag = fb_collective(FB_ALL_GATHER);
        if (n < 200)
            CHECK_INT(ar->ranks_for_factor(ar->bus_factor(n)), n);
        CHECK_INT(ag->ranks_for_factor(ag->bus_factor(n)), n);
    }
    const struct fb_collective *bc = fb_collective(FB_BROADCAST);
    CHECK_INT(bc->ranks_for_factor(bc->bus_factor(8)), 0);
    CHECK_NEAR(fb_busbw_GBps(fb_collective(FB_ALL_REDUCE), 1000000000, 1.0, 16), 1.875, 1e-12);
}

int main(void)
{
    RUN(test_every_row_is_whole);
    RUN(test_names_list_the_table);
    RUN(test_collective_in_file_names);
    RUN(test_rank_count_from_bus_factor);
    return fbt_done();
}
