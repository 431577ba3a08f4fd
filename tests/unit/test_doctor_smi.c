/* nvidia-smi topo -m matrices as users paste them: tab-separated with NIC
 * rows and legends, space-separated without NICs, and cut short. */
#include <string.h>

#include "check.h"
#include "doctor/smi_topo.h"

static void test_tabs_nic_rows_and_legend(void)
{
    const char text[] = "user@node:~$ nvidia-smi topo -m\n"
                        "\tGPU0\tGPU1\tNIC0\tNIC1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
                        "GPU0\t X \tNV18\tPXB\tSYS\t0-15\t0\t\tN/A\n"
                        "GPU1\tNV18\t X \tSYS\tNODE\t\t1\t\tN/A\n"
                        "NIC0\tPXB\tSYS\t X \tSYS\t\t\t\t\n"
                        "NIC1\tSYS\tNODE\tSYS\t X \t\t\t\t\n"
                        "\nLegend:\n\n  X    = Self\n\nNIC Legend:\n\n  NIC0: mlx5_0\n  NIC1: mlx5_7\n";
    CHECK(fb_smi_topo_detect(text, sizeof text - 1));
    struct fb_smi_topo t;
    struct fb_err err = {0};
    CHECK_INT(fb_smi_topo_parse("m.txt", text, sizeof text - 1, &t, &err), FB_OK);
    CHECK_INT(t.ngpus, 2);
    CHECK_INT(t.nnics, 2);
    CHECK_STR(t.nic_name[1], "mlx5_7");
    CHECK_INT(t.link[0][0], FB_LINK_PXB);
    CHECK_INT(t.link[0][1], FB_LINK_SYS);
    CHECK_INT(t.link[1][1], FB_LINK_NODE);
    CHECK_STR(t.cpus[0], "0-15");
    CHECK_STR(t.cpus[1], "");
    CHECK_STR(t.numa[1], "1");
}

static void test_spaces_without_nics(void)
{
    const char text[] = "      GPU0  GPU1  CPU Affinity  NUMA Affinity\n"
                        "GPU0   X    NV12   0-23         0\n"
                        "GPU1  NV12   X    24-47         1\n";
    struct fb_smi_topo t;
    struct fb_err err = {0};
    CHECK_INT(fb_smi_topo_parse("s.txt", text, sizeof text - 1, &t, &err), FB_OK);
    CHECK_INT(t.ngpus, 2);
    CHECK_INT(t.nnics, 0);
    CHECK_STR(t.cpus[1], "24-47");
    CHECK_STR(t.numa[1], "1");
}

/* Drivers up to R470 name each NIC column by its RDMA device and print no
 * NIC Legend. */
static void test_nic_columns_named_by_device(void)
{
    const char text[] = "\tGPU0\tGPU1\tmlx5_0\tmlx5_1\tCPU Affinity\tNUMA Affinity\n"
                        "GPU0\t X \tSYS\tNODE\tSYS\t0-63\t0\n"
                        "GPU1\tSYS\t X \tSYS\tPIX\t64-127\t1\n"
                        "mlx5_0\tNODE\tSYS\t X \tSYS\t\t\n"
                        "mlx5_1\tSYS\tPIX\tSYS\t X \t\t\n"
                        "\nLegend:\n\n  X    = Self\n";
    CHECK(fb_smi_topo_detect(text, sizeof text - 1));
    struct fb_smi_topo t;
    struct fb_err err = {0};
    CHECK_INT(fb_smi_topo_parse("old.txt", text, sizeof text - 1, &t, &err), FB_OK);
    CHECK_INT(t.ngpus, 2);
    CHECK_INT(t.nnics, 2);
    CHECK_STR(t.nic_name[0], "mlx5_0");
    CHECK_STR(t.nic_name[1], "mlx5_1");
    CHECK_INT(t.link[0][0], FB_LINK_NODE);
    CHECK_INT(t.link[1][1], FB_LINK_PIX);
    CHECK_STR(t.cpus[1], "64-127");
    CHECK_STR(t.numa[1], "1");
}

/* A copy kept as comments in a script, and one aligned by hand with extra
 * tabs and blanks between the cells, read as the matrix. */
static void test_quoted_and_hand_aligned_copies(void)
{
    const char quoted[] = "# nvidia-smi topo -mp\n"
                          "#\tGPU0\tGPU1\tmlx5_0\tCPU Affinity\tNUMA Affinity\n"
                          "# GPU0\t X \tSYS\tSYS\t48-63\t3\n"
                          "# GPU1\tSYS\t X \tPIX\t16-31\t1\n"
                          "# mlx5_0\tSYS\tPIX\t X \n#\n# Legend:\n";
    CHECK(fb_smi_topo_detect(quoted, sizeof quoted - 1));
    struct fb_smi_topo t;
    struct fb_err err = {0};
    CHECK_INT(fb_smi_topo_parse("q.sh", quoted, sizeof quoted - 1, &t, &err), FB_OK);
    CHECK_INT(t.ngpus, 2);
    CHECK_INT(t.nnics, 1);
    CHECK_INT(t.link[1][0], FB_LINK_PIX);
    CHECK_STR(t.numa[0], "3");
    const char aligned[] = "\t\tGPU0\tGPU1\tmlx5_0\tCPU Affinity    NUMA Affinity\n"
                           "GPU0\t X \t\tNV1\t    NODE\t\t0-23,48-71\t\t0\n"
                           "GPU1\tNV1\t \tX \t\tPIX\t24-47,72-95\t\t1\n";
    CHECK_INT(fb_smi_topo_parse("a.txt", aligned, sizeof aligned - 1, &t, &err), FB_OK);
    CHECK_INT(t.link[0][0], FB_LINK_NODE);
    CHECK_INT(t.link[1][0], FB_LINK_PIX);
    CHECK_STR(t.cpus[0], "0-23,48-71");
    CHECK_STR(t.numa[0], "0");
    CHECK_STR(t.numa[1], "1");
}

static void test_cut_or_foreign_text_is_refused(void)
{
    const char cut[] = "\tGPU0\tGPU1\tNIC0\nGPU0\t X \tNV18\n";
    struct fb_smi_topo t;
    struct fb_err err = {0};
    CHECK_INT(fb_smi_topo_parse("cut.txt", cut, sizeof cut - 1, &t, &err), FB_ERR_INPUT);
    CHECK_CONTAINS(err.msg, "cut.txt, line 2: GPU0 has 2 cells for 3 columns");
    const char xml[] = "<?xml version=\"1.0\"?>\n<topology version=\"2.0\">\n";
    CHECK(!fb_smi_topo_detect(xml, sizeof xml - 1));
}

int main(void)
{
    RUN(test_tabs_nic_rows_and_legend);
    RUN(test_spaces_without_nics);
    RUN(test_nic_columns_named_by_device);
    RUN(test_quoted_and_hand_aligned_copies);
    RUN(test_cut_or_foreign_text_is_refused);
    return fbt_done();
}
