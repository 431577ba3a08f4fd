/* Replays every input the fuzzers keep (tests/fixtures/report/fuzz/<target>/:
 * seeds and the crashers they found, fixed since) through the same targets,
 * each in a child process so that a crash is reported, not fatal. Under the
 * sanitizer build (make SAN=1) this also catches memory errors. */
#include <dirent.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "core/text.h"

#include "../report/fuzz/targets.c"

#define SAVED "tests/fixtures/report/fuzz/"

static const struct {
    const char *name;
    int (*fn)(const uint8_t *, size_t);
} targets[] = {
    {"fuzz_results", fuzz_results},     {"fuzz_ncclt_text", fuzz_ncclt_text},
    {"fuzz_ncclt_json", fuzz_ncclt_json}, {"fuzz_perftest", fuzz_perftest},
    {"fuzz_import_auto", fuzz_import_auto}, {"fuzz_nccl_log", fuzz_nccl_log},
    {"fuzz_profile", fuzz_profile},
};

static int current;

static bool run_one(int (*fn)(const uint8_t *, size_t), const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return false;
    struct fb_str data = {0};
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        fb_str_addn(&data, chunk, n);
    fclose(f);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(30); /* an input that once hung must not hang the suite */
        fn((const uint8_t *)(data.s ? data.s : ""), data.len);
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    fb_str_free(&data);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        printf("#   %s: %s %d\n", path, WIFSIGNALED(status) ? "killed by signal" : "exit status",
               WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
        return false;
    }
    return true;
}

static void test_saved_inputs(void)
{
    char dir[256];
    snprintf(dir, sizeof dir, SAVED "%s", targets[current].name);
    struct dirent **names = NULL;
    int n = scandir(dir, &names, NULL, alphasort);
    CHECK(n > 2); /* at least one input besides . and .. */
    int failed = 0, ran = 0;
    for (int i = 0; i < n; i++) {
        if (names[i]->d_name[0] != '.') {
            char path[600];
            snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name);
            failed += !run_one(targets[current].fn, path);
            ran++;
        }
        free(names[i]);
    }
    free(names);
    CHECK_INT(failed, 0);
    CHECK(ran > 0);
}

int main(void)
{
    for (current = 0; current < (int)(sizeof targets / sizeof *targets); current++)
        fbt_run(targets[current].name, test_saved_inputs);
    return fbt_done();
}
