/* Core helpers: status, size parsing, JSON I/O. */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "core/files.h"
#include "core/jsonio.h"
#include "core/status.h"
#include "core/units.h"

static void test_sizes_use_binary_suffixes(void)
{
    struct fb_err err = {0};
    uint64_t v = 0;
    CHECK_INT(fb_parse_size("1K", "-b", &v, &err), FB_OK);
    CHECK_INT(v, 1024);
    CHECK_INT(fb_parse_size("16G", "-e", &v, &err), FB_OK);
    CHECK_INT(v, 16ULL << 30);
    CHECK_INT(fb_parse_size("65536", "-s", &v, &err), FB_OK);
    CHECK_INT(v, 65536);
    CHECK_INT(fb_parse_size("1.5M", "-b", &v, &err), FB_OK);
    CHECK_INT(v, 1572864);
    CHECK_INT(fb_parse_size("8m", "-b", &v, &err), FB_OK);
    CHECK_INT(v, 8 << 20);
    CHECK_INT(fb_parse_size("4KiB", "-b", &v, &err), FB_OK);
    CHECK_INT(v, 4096);
}

static void test_bad_sizes_name_the_flag(void)
{
    const char *bad[] = {"", "-1K", "12Q", "abc", "1KX", "99999999999999999999T"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        struct fb_err err = {0};
        uint64_t v = 7;
        CHECK_INT(fb_parse_size(bad[i], "-b", &v, &err), FB_ERR_USAGE);
        CHECK_CONTAINS(err.msg, "-b");
        CHECK_INT(v, 7);
    }
}

static void test_format_size_round_trips(void)
{
    char buf[32];
    fb_format_size(16ULL << 30, buf, sizeof buf);
    CHECK_STR(buf, "16G");
    fb_format_size(1536, buf, sizeof buf);
    CHECK_STR(buf, "1536");
    fb_format_size(8, buf, sizeof buf);
    CHECK_STR(buf, "8");
    fb_format_size(3 << 20, buf, sizeof buf);
    CHECK_STR(buf, "3M");
}

static void test_first_error_wins(void)
{
    struct fb_err err = {0};
    CHECK_INT(fb_fail(&err, FB_ERR_IO, "first %d", 1), FB_ERR_IO);
    CHECK_INT(fb_fail(&err, FB_ERR_USAGE, "second"), FB_ERR_USAGE);
    CHECK_INT(err.code, FB_ERR_IO);
    CHECK_STR(err.msg, "first 1");
    CHECK_STR(fb_status_name(FB_ERR_TIMEOUT), "timeout");
}

static void test_json_atomic_write_and_read(void)
{
    char dir[] = "/tmp/fbcoreXXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[256];
    snprintf(path, sizeof path, "%s/a/b/r.json", dir);
    struct fb_err err = {0};
    json_object *o = json_object_new_object();
    json_object_object_add(o, "x", json_object_new_int(3));
    json_object_object_add(o, "nan", fb_json_number(NAN));
    CHECK_INT(fb_json_write_atomic(path, o, &err), FB_OK);
    json_object_put(o);
    json_object *back = NULL;
    CHECK_INT(fb_json_read_file(path, &back, &err), FB_OK);
    int64_t x = 0;
    CHECK(fb_json_get_int64(back, "x", &x));
    CHECK_INT(x, 3);
    json_object *nan = NULL;
    CHECK(json_object_object_get_ex(back, "nan", &nan));
    CHECK(nan == NULL);
    json_object_put(back);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK_INT(system(cmd), 0);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

static enum fb_status count_visit(const char *path, void *ctx, struct fb_err *err)
{
    (void)path;
    (void)err;
    (*(int *)ctx)++;
    return FB_OK;
}

static void test_json_read_errors_are_one_line(void)
{
    char path[] = "/tmp/fbjsonXXXXXX";
    int fd = mkstemp(path);
    close(fd);
    struct {
        const char *text, *expect;
    } cases[] = {
        {"", "is empty"},
        {"{\"a\": [1, 2", "truncated"},
        {"hello", "not valid JSON"},
        {"{} {}", "not valid JSON"},
        {"null", "holds only null at the top level"},
        {" null \n", "holds only null at the top level"},
        {"null x", "not valid JSON"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        write_file(path, cases[i].text);
        struct fb_err err = {0};
        json_object *o = NULL;
        CHECK_INT(fb_json_read_file(path, &o, &err), FB_ERR_INPUT);
        CHECK_CONTAINS(err.msg, cases[i].expect);
        CHECK(strchr(err.msg, '\n') == NULL);
    }
    unlink(path);
    struct fb_err err = {0};
    json_object *o = NULL;
    CHECK_INT(fb_json_read_file("/nonexistent/x.json", &o, &err), FB_ERR_INPUT);
    CHECK_CONTAINS(err.msg, "cannot open");
}

/* Nothing but a regular file within the limit is read: a FIFO would block
 * the open, /dev/zero never ends, a sparse file costs its full size. */
static void test_inputs_are_regular_files_within_the_limit(void)
{
    char dir[] = "/tmp/fbfilesXXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char fifo[64], big[64], link[64], walked[64];
    snprintf(fifo, sizeof fifo, "%s/fifo.json", dir);
    snprintf(big, sizeof big, "%s/big.json", dir);
    snprintf(link, sizeof link, "%s/zero.json", dir);
    CHECK_INT(mkfifo(fifo, 0600), 0);
    CHECK_INT(symlink("/dev/zero", link), 0);
    write_file(big, "");
    CHECK_INT(truncate(big, (off_t)FB_INPUT_MAX_BYTES + 1), 0);
    struct {
        const char *path, *expect;
    } cases[] = {
        {fifo, "is a FIFO (named pipe), not a regular file"},
        {link, "is a character device, not a regular file"},
        {"/dev/zero", "is a character device, not a regular file"},
        {dir, "is a directory, not a regular file"},
        {big, "over the 256 MiB limit"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct fb_err err = {0};
        char *text = NULL;
        size_t len = 0;
        CHECK_INT(fb_read_text_file(cases[i].path, &text, &len, &err), FB_ERR_INPUT);
        CHECK_CONTAINS(err.msg, cases[i].expect);
        CHECK_CONTAINS(err.msg, cases[i].path);
        CHECK(text == NULL);
    }
    unlink(big);
    /* A walk passes over the FIFO and the device, reads the one file. */
    snprintf(walked, sizeof walked, "%s/ok.json", dir);
    write_file(walked, "{}");
    int seen = 0;
    struct fb_err err = {0};
    CHECK_INT(fb_walk_json_files(dir, 0, false, count_visit, &seen, &err), FB_OK);
    CHECK_INT(seen, 1);
    unlink(walked);
    unlink(fifo);
    unlink(link);
    rmdir(dir);
}

static void test_unwritable_path_is_io_error(void)
{
    struct fb_err err = {0};
    CHECK_INT(fb_probe_writable("/proc/fabric-bench/x.json", &err), FB_ERR_IO);
    CHECK_CONTAINS(err.msg, "/proc/fabric-bench");
}

int main(void)
{
    RUN(test_sizes_use_binary_suffixes);
    RUN(test_bad_sizes_name_the_flag);
    RUN(test_format_size_round_trips);
    RUN(test_first_error_wins);
    RUN(test_json_atomic_write_and_read);
    RUN(test_json_read_errors_are_one_line);
    RUN(test_inputs_are_regular_files_within_the_limit);
    RUN(test_unwritable_path_is_io_error);
    return fbt_done();
}
