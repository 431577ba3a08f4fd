/* Output files (core/outfile.h), UTF-8-valid documents and cluster labels:
 * what a writer may replace, what it writes into and what it refuses; the
 * directories it will not write through; the temporaries a killed writer
 * leaves; walks of trees (core/files.h) that read each file once. */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "core/envelope.h"
#include "core/files.h"
#include "core/jsonio.h"
#include "core/outfile.h"
#include "core/text.h"

/* Short enough that every name below fits a PATH_MAX buffer. */
static char dir[256];

static void in_dir(char *out, size_t len, const char *name)
{
    snprintf(out, len, "%s/%s", dir, name);
}

static json_object *doc_with(const char *key, const char *value)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, key, json_object_new_string(value));
    return o;
}

static char *slurp(const char *path)
{
    char *text = NULL;
    size_t len = 0;
    struct fb_err err = {0};
    return fb_read_file(path, &text, &len, &err) == FB_OK ? text : NULL;
}

/* Temporary files of `name` left in `where` (.NAME@HOST.NS.PID.TAG.tmp). */
static int count_tmp_files(const char *where, const char *name)
{
    char cmd[PATH_MAX + 64];
    snprintf(cmd, sizeof cmd, "ls -a '%s' | grep -c '^\\.%s@.*\\.tmp$'", where, name);
    FILE *p = popen(cmd, "r");
    int n = -1;
    if (p != NULL && fscanf(p, "%d", &n) != 1)
        n = -1;
    if (p != NULL)
        pclose(p);
    return n;
}

static void test_regular_file_replaced_whole(void)
{
    char path[PATH_MAX];
    in_dir(path, sizeof path, "r.json");
    struct fb_err err = {0};
    json_object *a = doc_with("v", "first"), *b = doc_with("v", "second");
    CHECK_INT(fb_json_write_atomic(path, a, &err), FB_OK);
    CHECK_INT(fb_json_write_atomic(path, b, &err), FB_OK);
    char *text = slurp(path);
    CHECK_CONTAINS(text, "second");
    CHECK(text != NULL && strstr(text, "first") == NULL);
    CHECK_INT(count_tmp_files(dir, "r.json"), 0);
    free(text);
    json_object_put(a);
    json_object_put(b);
}

/* A FIFO with a reader: the document goes in, the FIFO stays a FIFO. */
static void test_fifo_written_into_and_kept(void)
{
    char path[PATH_MAX];
    in_dir(path, sizeof path, "fifo");
    CHECK_INT(mkfifo(path, 0600), 0);
    int rd = open(path, O_RDONLY | O_NONBLOCK);
    CHECK(rd >= 0);
    struct fb_err err = {0};
    json_object *d = doc_with("k", "through the pipe");
    CHECK(fb_out_is_stream(path));
    CHECK_INT(fb_probe_writable(path, &err), FB_OK);
    CHECK_INT(fb_json_write_atomic(path, d, &err), FB_OK);
    char buf[256] = "";
    ssize_t n = read(rd, buf, sizeof buf - 1);
    buf[n > 0 ? n : 0] = '\0';
    CHECK_CONTAINS(buf, "through the pipe");
    struct stat st;
    CHECK(lstat(path, &st) == 0 && S_ISFIFO(st.st_mode));
    close(rd);
    unlink(path);
    json_object_put(d);
}

/* A character device (root only: mknod of /dev/null's numbers). */
static void test_device_stays_a_device(void)
{
    char path[PATH_MAX];
    in_dir(path, sizeof path, "null");
    if (mknod(path, S_IFCHR | 0666, makedev(1, 3)) != 0) {
        printf("# no mknod here (not root): the device case is covered by the FIFO\n");
        return;
    }
    struct fb_err err = {0};
    json_object *d = doc_with("k", "v");
    CHECK_INT(fb_json_write_atomic(path, d, &err), FB_OK);
    struct stat st;
    CHECK(lstat(path, &st) == 0 && S_ISCHR(st.st_mode));
    CHECK_INT(count_tmp_files(dir, "null"), 0);
    unlink(path);
    json_object_put(d);
}

static void test_symlink_to_file_replaces_the_file(void)
{
    char target[PATH_MAX], link_path[PATH_MAX];
    in_dir(target, sizeof target, "real.json");
    in_dir(link_path, sizeof link_path, "link.json");
    struct fb_err err = {0};
    json_object *a = doc_with("v", "old"), *b = doc_with("v", "new");
    CHECK_INT(fb_json_write_atomic(target, a, &err), FB_OK);
    CHECK_INT(symlink("real.json", link_path), 0);
    CHECK_INT(fb_json_write_atomic(link_path, b, &err), FB_OK);
    struct stat st;
    CHECK(lstat(link_path, &st) == 0 && S_ISLNK(st.st_mode));
    char *text = slurp(target);
    CHECK_CONTAINS(text, "new");
    free(text);
    json_object_put(a);
    json_object_put(b);
}

static void test_what_is_refused(void)
{
    char sub[PATH_MAX], dangling[PATH_MAX], slash[PATH_MAX];
    in_dir(sub, sizeof sub, "adir");
    in_dir(dangling, sizeof dangling, "dangling.json");
    in_dir(slash, sizeof slash, "new-dir/");
    CHECK_INT(mkdir(sub, 0700), 0);
    CHECK_INT(symlink("missing.json", dangling), 0);
    const char *refused[] = {sub, dangling, slash, ""};
    const char *why[] = {"is a directory", "symbolic link to a missing", "names a directory", "empty"};
    json_object *d = doc_with("k", "v");
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        struct fb_err err = {0};
        CHECK_INT(fb_json_write_atomic(refused[i], d, &err), FB_ERR_IO);
        CHECK_CONTAINS(err.msg, why[i]);
        CHECK(strchr(err.msg, '\n') == NULL);
        struct fb_err probe = {0};
        CHECK_INT(fb_probe_writable(refused[i], &probe), FB_ERR_IO);
    }
    struct stat st;
    CHECK(lstat(sub, &st) == 0 && S_ISDIR(st.st_mode));
    CHECK(lstat(dangling, &st) == 0 && S_ISLNK(st.st_mode));
    json_object_put(d);
}

static void test_create_never_replaces(void)
{
    char path[PATH_MAX], first[PATH_MAX], second[PATH_MAX], third[PATH_MAX];
    in_dir(path, sizeof path, "runs/stamp-all_reduce.json");
    snprintf(first, sizeof first, "%s", path);
    snprintf(second, sizeof second, "%s", path);
    snprintf(third, sizeof third, "%s", path);
    struct fb_err err = {0};
    json_object *a = doc_with("run", "a"), *b = doc_with("run", "b"), *c = doc_with("run", "c");
    CHECK_INT(fb_json_create(first, sizeof first, a, &err), FB_OK);
    CHECK_INT(fb_json_create(second, sizeof second, b, &err), FB_OK);
    CHECK_INT(fb_json_create(third, sizeof third, c, &err), FB_OK);
    CHECK_STR(first, path);
    CHECK(fb_has_suffix(second, "/runs/stamp-all_reduce-2.json"));
    CHECK(fb_has_suffix(third, "/runs/stamp-all_reduce-3.json"));
    char *text = slurp(first);
    CHECK_CONTAINS(text, "\"a\"");
    free(text);
    text = slurp(third);
    CHECK_CONTAINS(text, "\"c\"");
    free(text);
    char runs[PATH_MAX];
    in_dir(runs, sizeof runs, "runs");
    CHECK_INT(count_tmp_files(runs, "stamp-all_reduce.json"), 0);
    json_object_put(a);
    json_object_put(b);
    json_object_put(c);
}

static void test_numbered_names(void)
{
    char out[PATH_MAX];
    CHECK(fb_out_numbered("r/x.json", 1, out, sizeof out));
    CHECK_STR(out, "r/x.json");
    CHECK(fb_out_numbered("r/x.json", 2, out, sizeof out));
    CHECK_STR(out, "r/x-2.json");
    CHECK(fb_out_numbered("a.b/run", 3, out, sizeof out));
    CHECK_STR(out, "a.b/run-3");
    CHECK(fb_out_numbered(".hidden", 2, out, sizeof out));
    CHECK_STR(out, ".hidden-2");
    CHECK(!fb_out_numbered("x.json", 2, out, 6));
}

static void test_utf8_sanitize(void)
{
    struct {
        const char *in, *out;
    } cases[] = {
        {"plain", "plain"},
        {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"},
        {"\xff\xfe", "\xef\xbf\xbd\xef\xbf\xbd"},
        {"a\xc0\xafz", "a\xef\xbf\xbd\xef\xbf\xbdz"},                   /* overlong '/' */
        {"\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},       /* a surrogate */
        {"\xf4\x90\x80\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"}, /* > U+10FFFF */
        {"cut \xe2\x82", "cut \xef\xbf\xbd\xef\xbf\xbd"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        size_t n = 0;
        char *s = fb_utf8_sanitize(cases[i].in, strlen(cases[i].in), &n);
        CHECK_STR(s, cases[i].out);
        CHECK_INT(n, strlen(cases[i].out));
        free(s);
    }
}

static void test_documents_are_utf8(void)
{
    json_object *d = doc_with("FABRIC_RAW", "x\xff\xfey");
    char *text = fb_json_text(d, FB_JSON_FILE_FLAGS);
    CHECK_CONTAINS(text, "\"x\xef\xbf\xbd\xef\xbf\xbdy\"");
    CHECK(text != NULL && text[strlen(text) - 1] == '\n');
    free(text);
    json_object_put(d);
}

static void test_labels_stay_distinct_and_inside(void)
{
    const char *names[] = {"a b", "a_b", "a/b", "a\nb", "a%20b", ".", "..", "ok-1.2_x"};
    const char *want[] = {"a%20b", "a_b", "a%2Fb", "a%0Ab", "a%2520b", "%2E", "%2E%2E", "ok-1.2_x"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char out[FB_LABEL_MAX];
        fb_label_escape(names[i], out, sizeof out);
        CHECK_STR(out, want[i]);
    }
    char out[7];
    fb_label_escape("abcd/efgh", out, sizeof out); /* "abcd%2" would be a cut escape */
    CHECK_STR(out, "abcd");
}

static void test_given_labels_are_checked(void)
{
    unsetenv("FABRIC_CLUSTER");
    const char *bad[] = {"", ".", "..", "a b", "a/b", "a\nb", "caf\xc3\xa9"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char out[FB_LABEL_MAX];
        struct fb_err err = {0};
        CHECK_INT(fb_cluster_label_checked(bad[i], "host", out, sizeof out, &err), FB_ERR_USAGE);
        CHECK_CONTAINS(err.msg, "--cluster");
        CHECK_CONTAINS(err.msg, "'.', '_' and '-'");
        CHECK(strchr(err.msg, '\n') == NULL);
    }
    char out[FB_LABEL_MAX];
    struct fb_err err = {0};
    CHECK_INT(fb_cluster_label_checked("gke-a3.mega_1", "host", out, sizeof out, &err), FB_OK);
    CHECK_STR(out, "gke-a3.mega_1");
    CHECK_INT(fb_cluster_label_checked(NULL, "node 7", out, sizeof out, &err), FB_OK);
    CHECK_STR(out, "node%207");
    setenv("FABRIC_CLUSTER", "..", 1);
    CHECK_INT(fb_cluster_label_checked(NULL, "host", out, sizeof out, &err), FB_ERR_USAGE);
    CHECK_CONTAINS(err.msg, "FABRIC_CLUSTER=");
    setenv("FABRIC_CLUSTER", "", 1);
    struct fb_err ok_err = {0};
    CHECK_INT(fb_cluster_label_checked(NULL, "host", out, sizeof out, &ok_err), FB_OK);
    CHECK_STR(out, "host");
    unsetenv("FABRIC_CLUSTER");
}

/* ---- the results root and below: no links, nobody else's directories ---- */

static bool empty_dir(const char *path)
{
    char cmd[PATH_MAX + 32];
    snprintf(cmd, sizeof cmd, "[ -z \"$(ls -A '%s')\" ]", path);
    return system(cmd) == 0;
}

/* A one-line FB_ERR_IO containing `why`, nothing written at `target`. */
static void check_refused(enum fb_status st, const struct fb_err *err, const char *why, const char *target)
{
    CHECK_INT(st, FB_ERR_IO);
    CHECK_CONTAINS(err->msg, why);
    CHECK(strchr(err->msg, '\n') == NULL);
    CHECK(empty_dir(target));
}

static void test_links_below_the_results_root_refused(void)
{
    char target[PATH_MAX], res[PATH_MAX], cluster[PATH_MAX], linked_root[PATH_MAX], path[PATH_MAX];
    in_dir(target, sizeof target, "theirs");
    in_dir(res, sizeof res, "res");
    in_dir(cluster, sizeof cluster, "res/lab");
    in_dir(linked_root, sizeof linked_root, "linked-res");
    CHECK_INT(mkdir(target, 0755), 0);
    CHECK_INT(mkdir(res, 0755), 0);
    CHECK_INT(symlink(target, cluster), 0);
    CHECK_INT(symlink(target, linked_root), 0);
    json_object *d = doc_with("k", "v");
    /* results/<cluster> a link: a made-up name, a -J name, the probe. */
    struct fb_err e1 = {0}, e2 = {0}, e3 = {0}, e4 = {0}, e5 = {0};
    in_dir(path, sizeof path, "res/lab/stamp-all_reduce.json");
    check_refused(fb_json_create(path, sizeof path, d, &e1), &e1, "res/lab is a symbolic link", target);
    in_dir(path, sizeof path, "res/lab/run.json");
    check_refused(fb_json_write_atomic(path, d, &e2), &e2, "res/lab is a symbolic link", target);
    check_refused(fb_probe_writable(path, &e3), &e3, "res/lab is a symbolic link", target);
    /* The results root itself a link: its cluster directory is not made there. */
    in_dir(path, sizeof path, "linked-res/lab/stamp-all_reduce.json");
    check_refused(fb_json_create(path, sizeof path, d, &e4), &e4, "linked-res is a symbolic link", target);
    in_dir(path, sizeof path, "res/lab/run.json");
    check_refused(fb_make_parent_dirs(path, &e5), &e5, "res/lab is a symbolic link", target);
    json_object_put(d);
}

static void test_directories_of_another_user_refused(void)
{
    if (geteuid() != 0) {
        printf("# test_directories_of_another_user_refused: chown needs root; passed over\n");
        return;
    }
    char res[PATH_MAX], theirs[PATH_MAX], path[PATH_MAX];
    in_dir(res, sizeof res, "uidres");
    in_dir(theirs, sizeof theirs, "uidres/lab");
    CHECK_INT(mkdir(res, 0755), 0);
    CHECK_INT(mkdir(theirs, 0777), 0);
    CHECK_INT(chown(theirs, 65534, 65534), 0);
    json_object *d = doc_with("k", "v");
    struct fb_err e1 = {0}, e2 = {0}, e3 = {0};
    in_dir(path, sizeof path, "uidres/lab/stamp-all_reduce.json");
    check_refused(fb_json_create(path, sizeof path, d, &e1), &e1, "belongs to uid 65534", theirs);
    in_dir(path, sizeof path, "uidres/lab/run.json");
    check_refused(fb_json_write_atomic(path, d, &e2), &e2, "belongs to uid 65534", theirs);
    /* The results root itself of another user. */
    CHECK_INT(chown(theirs, 0, 0), 0);
    CHECK_INT(chown(res, 65534, 65534), 0);
    in_dir(path, sizeof path, "uidres/lab/stamp-all_reduce.json");
    check_refused(fb_json_create(path, sizeof path, d, &e3), &e3, "uidres belongs to uid 65534", theirs);
    /* Root's own directories (the /tmp this runs in) are trusted. */
    CHECK_INT(chown(res, 0, 0), 0);
    struct fb_err ok_err = {0};
    CHECK_INT(fb_json_create(path, sizeof path, d, &ok_err), FB_OK);
    json_object_put(d);
}

/* ---- temporaries: hidden from readers, removed once their writer is gone - */

/* A PID that no process has: a child that has exited and been reaped. */
static pid_t dead_pid(void)
{
    pid_t child = fork();
    if (child == 0)
        _exit(0);
    waitpid(child, NULL, 0);
    return child;
}

static void touch_at(const char *where, const char *name)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s", where, name) >= (int)sizeof path)
        return;
    FILE *f = fopen(path, "w");
    if (f != NULL) {
        fputs("{\"half\": ", f); /* what a writer killed mid-write leaves */
        fclose(f);
    }
}

static bool exists_at(const char *where, const char *name)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s", where, name) >= (int)sizeof path)
        return false;
    struct stat st;
    return lstat(path, &st) == 0;
}

static enum fb_status count_visit(const char *path, void *ctx, struct fb_err *err)
{
    (void)path;
    (void)err;
    ++*(int *)ctx;
    return FB_OK;
}

static void test_stale_temporaries_hidden_and_removed(void)
{
    char where[PATH_MAX], path[PATH_MAX], stale[NAME_MAX + 1], live[NAME_MAX + 1], foreign[NAME_MAX + 1],
        theirs[NAME_MAX + 1];
    in_dir(where, sizeof where, "stale");
    CHECK_INT(mkdir(where, 0755), 0);
    CHECK(fb_out_tmp_name("run.json", (long)dead_pid(), 0xdeadbeefu, stale, sizeof stale));
    CHECK(fb_out_tmp_name("run.json", (long)getppid(), 1u, live, sizeof live));
    CHECK(fb_out_tmp_name("old.json", (long)dead_pid(), 2u, theirs, sizeof theirs));
    snprintf(foreign, sizeof foreign, ".run.json@another-host.1.%ld.00000003.tmp", (long)dead_pid());
    CHECK(stale[0] == '.' && fb_has_suffix(stale, ".tmp"));
    const char *names[] = {stale, live, foreign, theirs, "run.json.tmp.1.00000004", "kept.json"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        touch_at(where, names[i]);
    if (geteuid() == 0) {
        CHECK(snprintf(path, sizeof path, "%s/%s", where, theirs) < (int)sizeof path);
        CHECK_INT(chown(path, 65534, 65534), 0);
    }
    /* Readers: only the result, never a temporary. */
    int visited = 0;
    struct fb_err err = {0};
    CHECK_INT(fb_walk_json_files(where, 8, false, count_visit, &visited, &err), FB_OK);
    CHECK_INT(visited, 1);
    /* The next write into the directory removes the dead writer's temporary
     * alone: a live PID's, another host's, another user's and a name of no
     * writer's stay. */
    json_object *d = doc_with("k", "v");
    in_dir(path, sizeof path, "stale/next.json");
    CHECK_INT(fb_json_write_atomic(path, d, &err), FB_OK);
    CHECK(!exists_at(where, stale));
    CHECK(exists_at(where, live));
    CHECK(exists_at(where, foreign));
    CHECK(exists_at(where, "run.json.tmp.1.00000004"));
    CHECK(exists_at(where, theirs) == (geteuid() == 0));
    CHECK_INT(count_tmp_files(where, "next.json"), 0);
    json_object_put(d);
}

/* ---- walks: each file once, links never followed ------------------------ */

static void test_walk_reads_each_run_once(void)
{
    char tree[PATH_MAX], lab[PATH_MAX], other[PATH_MAX], path[PATH_MAX], link_to[PATH_MAX];
    in_dir(tree, sizeof tree, "tree");
    in_dir(lab, sizeof lab, "tree/lab");
    in_dir(other, sizeof other, "tree/other");
    CHECK_INT(mkdir(tree, 0755), 0);
    CHECK_INT(mkdir(lab, 0755), 0);
    CHECK_INT(mkdir(other, 0755), 0);
    touch_at(lab, "a.json");
    touch_at(lab, "b.json");
    touch_at(other, "c.json");
    in_dir(path, sizeof path, "tree/lab/loop"); /* lab/loop -> tree: a loop */
    CHECK_INT(symlink("..", path), 0);
    in_dir(path, sizeof path, "tree/lab/latest.json"); /* a link to a sibling run */
    CHECK_INT(symlink("b.json", path), 0);
    in_dir(path, sizeof path, "tree/lab/a.json"); /* a hard link to it from another directory */
    in_dir(link_to, sizeof link_to, "tree/other/a-again.json");
    CHECK_INT(link(path, link_to), 0);
    int visited = 0;
    struct fb_err err = {0};
    CHECK_INT(fb_walk_json_files(tree, 8, false, count_visit, &visited, &err), FB_OK);
    CHECK_INT(visited, 3);
    /* Directories given together, one inside another: still once each. */
    struct fb_walk w = {0};
    visited = 0;
    CHECK_INT(fb_walk_tree(&w, lab, 8, false, count_visit, &visited, &err), FB_OK);
    CHECK_INT(fb_walk_tree(&w, tree, 8, false, count_visit, &visited, &err), FB_OK);
    CHECK_INT(fb_walk_tree(&w, tree, 8, false, count_visit, &visited, &err), FB_OK);
    CHECK_INT(visited, 3);
    CHECK(w.repeats > 0);
    fb_walk_free(&w);
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");
    if (tmp == NULL || strlen(tmp) > 200)
        tmp = "/tmp";
    snprintf(dir, sizeof dir, "%s/fbt-outfile.XXXXXX", tmp);
    if (mkdtemp(dir) == NULL) {
        printf("not ok - setup: mkdtemp %s\n", dir);
        return 1;
    }
    RUN(test_regular_file_replaced_whole);
    RUN(test_fifo_written_into_and_kept);
    RUN(test_device_stays_a_device);
    RUN(test_symlink_to_file_replaces_the_file);
    RUN(test_what_is_refused);
    RUN(test_create_never_replaces);
    RUN(test_numbered_names);
    RUN(test_utf8_sanitize);
    RUN(test_documents_are_utf8);
    RUN(test_labels_stay_distinct_and_inside);
    RUN(test_given_labels_are_checked);
    RUN(test_links_below_the_results_root_refused);
    RUN(test_directories_of_another_user_refused);
    RUN(test_stale_temporaries_hidden_and_removed);
    RUN(test_walk_reads_each_run_once);
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        printf("# could not remove %s\n", dir);
    return fbt_done();
}
