/* NCCL log capture in fabric-coll: environment set-up, and gathering a
 * rank's log into the results' transport object (a one-rank MPI job fed
 * with recorded logs of a 2-node run on sockets). */
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "coll/transport.h"
#include "core/jsonio.h"

static struct fb_world world;

static void test_capture_sets_nccl_environment(void)
{
    unsetenv("NCCL_DEBUG_FILE");
    unsetenv("NCCL_DEBUG_SUBSYS");
    setenv("NCCL_DEBUG", "WARN", 1);
    struct fb_nccl_capture cap;
    char note[256];
    fb_nccl_capture_start(&cap, "/tmp", note, sizeof note);
    CHECK(cap.active);
    CHECK_STR(note, "");
    CHECK_STR(getenv("NCCL_DEBUG"), "INFO");
    CHECK_STR(getenv("NCCL_DEBUG_SUBSYS"), "INIT,NET");
    CHECK_STR(getenv("NCCL_DEBUG_FILE"), cap.path);
    CHECK_CONTAINS(cap.path, "/tmp/fabric-coll.");
}

static void test_users_debug_file_is_respected(void)
{
    setenv("NCCL_DEBUG_FILE", "/var/log/mine.%h.%p", 1);
    struct fb_nccl_capture cap;
    char note[256];
    fb_nccl_capture_start(&cap, "/tmp", note, sizeof note);
    CHECK(!cap.active);
    CHECK_CONTAINS(note, "NCCL_DEBUG_FILE is set (/var/log/mine.%h.%p)");
    CHECK_STR(getenv("NCCL_DEBUG_FILE"), "/var/log/mine.%h.%p");
    unsetenv("NCCL_DEBUG_FILE");
}

static void append_file(FILE *out, const char *path)
{
    FILE *in = fopen(path, "r");
    CHECK(in != NULL);
    if (in == NULL)
        return;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        fwrite(buf, 1, n, out);
    fclose(in);
}

static void test_gathered_log_gives_socket_transport(void)
{
    struct fb_nccl_capture cap = {.active = 1};
    snprintf(cap.path, sizeof cap.path, "/tmp/fbtransport.%ld.log", (long)getpid());
    FILE *f = fopen(cap.path, "w");
    const char *dir = "tests/fixtures/report/nccl-logs/socket/";
    const char *files[] = {"nccl.gpu-a.5200", "nccl.gpu-a.5201", "nccl.gpu-b.5202", "nccl.gpu-b.5203"};
    for (int i = 0; i < 4; i++) {
        char p[256];
        snprintf(p, sizeof p, "%s%s", dir, files[i]);
        append_file(f, p);
    }
    fclose(f);
    char saved[64];
    snprintf(saved, sizeof saved, "/tmp/fbtransport.%ld.saved", (long)getpid());
    json_object *t = NULL;
    struct fb_err err = {0};
    CHECK_INT(fb_nccl_capture_finish(&cap, &world, saved, &t, &err), FB_OK);
    CHECK(t != NULL);
    CHECK_STR(fb_json_get_string(t, "net"), "Socket");
    CHECK(access(cap.path, F_OK) != 0); /* the private file is removed */
    CHECK(access(saved, F_OK) == 0);    /* a copy is kept beside the results */
    char text[256];
    fb_transport_describe(t, text, sizeof text);
    CHECK_CONTAINS(text, "net Socket, GPUDirect RDMA no");
    json_object_put(t);
    unlink(saved);
}

static void test_empty_log_is_reported_not_fatal(void)
{
    struct fb_nccl_capture cap = {.active = 1};
    snprintf(cap.path, sizeof cap.path, "/tmp/fbtransport.%ld.none", (long)getpid());
    json_object *t = NULL;
    struct fb_err err = {0};
    CHECK_INT(fb_nccl_capture_finish(&cap, &world, NULL, &t, &err), FB_ERR_INPUT);
    CHECK(t == NULL);
    CHECK(err.msg[0] != '\0');
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    struct fb_err err = {0};
    fb_world_init(&world, MPI_COMM_WORLD, &err);
    RUN(test_capture_sets_nccl_environment);
    RUN(test_users_debug_file_is_respected);
    RUN(test_gathered_log_gives_socket_transport);
    RUN(test_empty_log_is_reported_not_fatal);
    fb_world_free(&world);
    MPI_Finalize();
    return fbt_done();
}
