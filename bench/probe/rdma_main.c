/* fabric-rdma: raw link probes across every pair of an MPI job, over RDMA
 * verbs (ib_write_bw / ib_write_lat style, optionally GPUDirect) or TCP.
 * The stages are in driver_setup.c, driver_rounds.c and driver_step.c
 * (probe/driver.h). */
#include <signal.h>
#include <stdio.h>

#include "core/version.h"
#include "probe/driver.h"

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig) { stop_signal = sig; }

static void print_help_or_version(const struct probe_driver *d)
{
    if (d->w.rank == 0 && d->o.help)
        probe_opts_help("fabric-rdma");
    if (d->w.rank == 0 && d->o.version) {
        char transports[128];
        probe_transport_build(transports, sizeof transports);
        printf("fabric-rdma %s (transports: %s)\n", FB_VERSION, transports);
    }
}

int main(int argc, char **argv)
{
    /* TCP streams run on threads; only this one calls MPI. */
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    static struct probe_driver d;
    d.c.comm = MPI_COMM_NULL;
    struct fb_err err = {0};
    if (fb_world_init(&d.w, MPI_COMM_WORLD, &err) != FB_OK) {
        fprintf(stderr, "fabric-rdma: %s\n", err.msg);
        MPI_Abort(MPI_COMM_WORLD, err.code);
    }
    int rc = probe_driver_prepare(&d, argc, argv, &stop_signal);
    if (rc < 0) {
        print_help_or_version(&d);
        rc = FB_OK;
    } else if (rc == FB_OK) {
        rc = probe_driver_rounds(&d);
        if (rc == FB_OK)
            rc = probe_driver_finish(&d);
    }
    probe_driver_release(&d);
    /* Bounded like every other wait: a rank stopped after its last size
     * would hold MPI_Finalize forever. */
    fb_world_end(&d.w, d.w.comm, d.o.timeout > 0 ? d.o.timeout : 30, rc);
    fb_world_free(&d.w);
    return rc;
}
