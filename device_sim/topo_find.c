/*
 * Topologies by name: the one place where a topology argument becomes a
 * file. An argument that names an existing file is that file. Otherwise a
 * relative argument is looked up by its file name ("hgx-h100",
 * "hgx-h100.json", "configs/hgx-h100.json" all find hgx-h100.json) in the
 * config directories, in order:
 *
 *   1. the installed configs, <prefix>/share/hccn/configs, found relative
 *      to the file that holds this code (libhccn.so, or the program that
 *      links libhccn.a), so a moved install prefix still finds them;
 *   2. the source tree's configs/, when that file lives in the build tree.
 *
 * The relative paths come from the build (HCCN_LIB_TO_CONFIGS,
 * HCCN_BIN_TO_CONFIGS); the build and source trees too.
 */
#include "device_sim/topo_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifndef HCCN_LIB_TO_CONFIGS
#define HCCN_LIB_TO_CONFIGS "../share/hccn/configs"
#endif
#ifndef HCCN_BIN_TO_CONFIGS
#define HCCN_BIN_TO_CONFIGS "../share/hccn/configs"
#endif

static int is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The real directory holding path into out ("" when path cannot be
 * resolved). */
static void real_dir(const char *path, char *out, size_t len)
{
    char real[PATH_MAX];
    out[0] = '\0';
    if (path == NULL || realpath(path, real) == NULL)
        return;
    char *slash = strrchr(real, '/');
    if (slash != NULL)
        *slash = '\0';
    snprintf(out, len, "%s", real[0] != '\0' ? real : "/");
}

/* The directory of the file this code was loaded from, and whether that
 * file is the program itself (libhccn.a linked in) or a shared library. */
static void code_dir(char *dir, size_t len, int *is_program)
{
    Dl_info info;
    struct link_map *map = NULL;
    *is_program = 1;
    dir[0] = '\0';
    if (dladdr1((void *)&hccn_sim_topo_dirs, &info, (void **)&map,
                RTLD_DL_LINKMAP) != 0 && map != NULL && map->l_name != NULL &&
        map->l_name[0] != '\0') {
        *is_program = 0;
        real_dir(map->l_name, dir, len);
        return;
    }
    real_dir("/proc/self/exe", dir, len);
}

/* Whether two directories are the same (by real path). */
static int same_dir(const char *a, const char *b)
{
    char ra[PATH_MAX], rb[PATH_MAX];
    return realpath(a, ra) != NULL && realpath(b, rb) != NULL &&
           strcmp(ra, rb) == 0;
}

/* Joins dir and the relative path rel into out, folding each leading
 * "../" of rel into dir ("/p/lib" + "../share/x" = "/p/share/x"). */
static void join(const char *dir, const char *rel, char *out, size_t len)
{
    char base[PATH_MAX];
    snprintf(base, sizeof(base), "%s", dir);
    while (strncmp(rel, "../", 3) == 0) {
        char *slash = strrchr(base, '/');
        if (slash == NULL || slash == base)
            break;
        *slash = '\0';
        rel += 3;
    }
    if (snprintf(out, len, "%s/%s", base, rel) >= (int)len)
        out[0] = '\0';     /* too long to be a directory */
}

int hccn_sim_topo_dirs(char (*dirs)[PATH_MAX], int max)
{
    char here[PATH_MAX];
    int program, n = 0;
    code_dir(here, sizeof(here), &program);
    if (here[0] == '\0' || max < 1)
        return 0;
    join(here, program ? HCCN_BIN_TO_CONFIGS : HCCN_LIB_TO_CONFIGS,
         dirs[n++], PATH_MAX);
#if defined(HCCN_BUILD_TREE) && defined(HCCN_SOURCE_TREE)
    if (n < max && same_dir(here, HCCN_BUILD_TREE) &&
        snprintf(dirs[n], PATH_MAX, "%s/configs", HCCN_SOURCE_TREE) <
            PATH_MAX)
        n++;
#else
    (void)same_dir;
#endif
    return n;
}

/* The file name to look up for arg: its last component. */
static const char *file_name(const char *arg)
{
    const char *s = strrchr(arg, '/');
    return s != NULL ? s + 1 : arg;
}

/* Looks name, then name.json, up in dir; 0 and path written when found. */
static int look_in(const char *dir, const char *name, char *path,
                   size_t pathlen)
{
    size_t n = strlen(name);
    int has_ext = n > 5 && strcmp(name + n - 5, ".json") == 0;
    char cand[PATH_MAX];
    for (int ext = 0; ext <= !has_ext; ext++) {
        int w = snprintf(cand, sizeof(cand), "%s/%s%s", dir, name,
                         ext ? ".json" : "");
        if (w > 0 && (size_t)w < sizeof(cand) && is_file(cand) &&
            (size_t)w < pathlen) {
            memcpy(path, cand, (size_t)w + 1);
            return 0;
        }
    }
    return -1;
}

/* "arg: no such file, and no topology NAME in DIR, DIR (...)" into err. */
static void not_found(const char *arg, const char *name,
                      char (*dirs)[PATH_MAX], int ndirs, char *err,
                      size_t errlen)
{
    char where[2048] = "";
    size_t used = 0;
    for (int i = 0; i < ndirs && used < sizeof(where); i++) {
        int w = snprintf(where + used, sizeof(where) - used, "%s%s",
                         i ? ", " : "", dirs[i]);
        if (w < 0)
            break;
        used += (size_t)w;
    }
    hccn_sim_topo_errf(err, errlen, arg, "no such file, and no topology "
                       "named '%s' in the config directories (%s); "
                       "'hccn-topo list' shows the known ones", name,
                       ndirs ? where : "none found");
}

hccn_status_t hccn_sim_topo_find(const char *arg, char *path, size_t pathlen,
                                 char *err, size_t errlen)
{
    size_t n = arg != NULL ? strlen(arg) : 0;
    if (arg == NULL || path == NULL || pathlen == 0) {
        hccn_sim_topo_errf(err, errlen, "hccn_sim_topo_find",
                           "NULL argument");
        return HCCN_ERR_INVALID;
    }
    if (n >= pathlen) {
        hccn_sim_topo_errf(err, errlen, "topology", "path of %zu bytes is "
                           "longer than %zu", n, pathlen - 1);
        return HCCN_ERR_INVALID;
    }
    memcpy(path, arg, n + 1);
    const char *name = file_name(arg);
    struct stat st;
    if (arg[0] == '/' || name[0] == '\0' || stat(arg, &st) == 0 ||
        errno != ENOENT)
        return HCCN_OK;     /* the file itself: the loader reports on it */
    char dirs[4][PATH_MAX];
    int ndirs = hccn_sim_topo_dirs(dirs, 4);
    for (int i = 0; i < ndirs; i++)
        if (look_in(dirs[i], name, path, pathlen) == 0)
            return HCCN_OK;
    memcpy(path, arg, n + 1);
    not_found(arg, name, dirs, ndirs, err, errlen);
    return HCCN_ERR_IO;
}
