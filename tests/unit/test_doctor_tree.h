/* Fake /proc, /sys and /dev trees for the doctor unit tests: each case
 * builds only the files its check reads, in a fresh temporary root. */
#ifndef FB_TEST_DOCTOR_TREE_H
#define FB_TEST_DOCTOR_TREE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tree_root[256];

__attribute__((unused)) static void tree_mkdirs(const char *path)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            mkdir(buf, 0755);
            *p = '/';
        }
    }
    mkdir(buf, 0755);
}

/* Removes the previous tree and starts an empty one. */
__attribute__((unused)) static const char *tree_new(void)
{
    if (tree_root[0]) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tree_root);
        if (system(cmd) != 0)
            fprintf(stderr, "cannot remove %s\n", tree_root);
    }
    snprintf(tree_root, sizeof tree_root, "%s/fbdoctor.XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (mkdtemp(tree_root) == NULL) {
        perror("mkdtemp");
        exit(2);
    }
    return tree_root;
}

__attribute__((unused)) static void tree_done(void)
{
    tree_new();
    rmdir(tree_root);
    tree_root[0] = '\0';
}

/* put("/proc/modules", "nvidia 1 0 - Live 0x0\n") */
__attribute__((unused)) static void put(const char *path, const char *content)
{
    char full[1024], dir[1024];
    snprintf(full, sizeof full, "%s%s", tree_root, path);
    snprintf(dir, sizeof dir, "%s", full);
    char *slash = strrchr(dir, '/');
    *slash = '\0';
    tree_mkdirs(dir);
    FILE *f = fopen(full, "w");
    if (f == NULL) {
        perror(full);
        exit(2);
    }
    fputs(content, f);
    fclose(f);
}

__attribute__((unused)) static void put_dir(const char *path)
{
    char full[1024];
    snprintf(full, sizeof full, "%s%s", tree_root, path);
    tree_mkdirs(full);
}

/* put_link("/sys/class/infiniband/efa_0/device/driver", "../../bus/pci/drivers/efa"):
 * a symbolic link holding `target` as written (sysfs driver links). */
__attribute__((unused)) static void put_link(const char *path, const char *target)
{
    char full[1024], dir[1024];
    snprintf(full, sizeof full, "%s%s", tree_root, path);
    snprintf(dir, sizeof dir, "%s", full);
    *strrchr(dir, '/') = '\0';
    tree_mkdirs(dir);
    if (symlink(target, full) != 0) {
        perror(full);
        exit(2);
    }
}

#endif
