/*
 * hccn-topo list: the configs that a topology name can find (the config
 * directories of device_sim/topo_find.c, in lookup order), one line each:
 * the name to give to -t, the cluster's size, and the first phrase of the
 * file's "description" (included by hccn-topo.c only).
 */
#ifndef HCCN_TOOLS_TOPO_LIST_H
#define HCCN_TOOLS_TOPO_LIST_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "hccn/hccn_sim.h"

#define LIST_DESC_MAX 64

/* The first phrase of a description (up to the first ". " or ": "),
 * shortened to about LIST_DESC_MAX characters at a space. */
static void short_desc(const char *desc, char *out, size_t len)
{
    size_t n = strlen(desc);
    for (const char *p = desc; *p != '\0'; p++)
        if ((p[0] == '.' || p[0] == ':') && (p[1] == ' ' || p[1] == '\0')) {
            n = (size_t)(p - desc);
            break;
        }
    int cut = 0;
    if (n > LIST_DESC_MAX) {
        n = LIST_DESC_MAX;
        while (n > 0 && desc[n] != ' ')
            n--;
        cut = 1;
    }
    snprintf(out, len, "%.*s%s", (int)n, desc, cut ? " ..." : "");
}

/* One line for the config file path named name. */
static void list_one(const char *path, const char *name)
{
    char desc[LIST_DESC_MAX + 8] = "";
    hccn_topo_t *t = NULL;
    json_object *doc = json_object_from_file(path), *d;
    if (doc != NULL && json_object_object_get_ex(doc, "description", &d) &&
        json_object_is_type(d, json_type_string))
        short_desc(json_object_get_string(d), desc, sizeof(desc));
    json_object_put(doc);
    if (hccn_topo_load(path, NULL, 0, &t) != HCCN_OK) {
        printf("  %-16s invalid: %s\n", name, hccn_last_error());
        return;
    }
    char size[64];
    int npus = hccn_topo_npus(t), nodes = hccn_topo_nodes(t);
    snprintf(size, sizeof(size), "%d NPU%s on %d node%s", npus,
             npus == 1 ? "" : "s", nodes, nodes == 1 ? "" : "s");
    printf("  %-16s %-22s %s\n", name, size, desc);
    hccn_topo_free(t);
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

static int is_json(const struct dirent *e)
{
    size_t n = strlen(e->d_name);
    return e->d_name[0] != '.' && n > 5 &&
           strcmp(e->d_name + n - 5, ".json") == 0;
}

/* Prints every config directory that exists and its configs. Returns the
 * exit status: 0, or 1 when no directory exists. */
static int list_configs(void)
{
    char dirs[4][PATH_MAX];
    int ndirs = 0, shown = 0;
    while (ndirs < 4 &&
           hccn_topo_config_dir(ndirs, dirs[ndirs], sizeof(dirs[0])) == 0)
        ndirs++;
    for (int i = 0; i < ndirs; i++) {
        struct dirent **names = NULL;
        int n = scandir(dirs[i], &names, is_json, by_name);
        if (n < 0)
            continue;
        printf("%s:\n", dirs[i]);
        for (int k = 0; k < n; k++) {
            char path[PATH_MAX + 256], name[256];
            snprintf(name, sizeof(name), "%.*s",
                     (int)strlen(names[k]->d_name) - 5, names[k]->d_name);
            if (snprintf(path, sizeof(path), "%s/%s", dirs[i],
                         names[k]->d_name) < (int)sizeof(path))
                list_one(path, name);
            free(names[k]);
        }
        free(names);
        shown++;
    }
    if (shown == 0)
        fprintf(stderr, "hccn-topo: no config directory found (looked for "
                        "%s%s%s)\n", ndirs > 0 ? dirs[0] : "none",
                ndirs > 1 ? ", " : "", ndirs > 1 ? dirs[1] : "");
    return shown > 0 ? 0 : 1;
}

#endif /* HCCN_TOOLS_TOPO_LIST_H */
