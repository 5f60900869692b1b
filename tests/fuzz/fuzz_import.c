/*
 * libFuzzer targets for the importers of hccn-topo import (tools/import/):
 * built once per format with -DIMP_FORMAT=0..4 (nccl-xml, hccl-ranktable,
 * nvidia-smi, astrasim, simgrid). Any bytes must give either a topology,
 * which is then written as JSON and loaded, or an error naming the input,
 * never a crash, a leak or undefined behaviour. Build and run:
 * docs/fuzzing.md.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "device_sim/topo.h"
#include "tools/import/imp.h"

#ifndef IMP_FORMAT
#define IMP_FORMAT 0
#endif

/* What tools/import/imp_load.c does through the public API, here through
 * the loader itself (the target links device_sim/topo*.c, not libhccn). */
int hccn_imp_check_json(const char *json, const char *name, char *err)
{
    hccn_sim_topo_t *topo = NULL;
    if (hccn_sim_topo_load_string(json, name, &topo, err, HCCN_IMP_ERRLEN) !=
        HCCN_OK)
        return -1;
    hccn_sim_topo_free(topo);
    return 0;
}

int hccn_imp_check_file(const char *path, char *err)
{
    hccn_sim_topo_t *topo = NULL;
    if (hccn_sim_topo_load_file(path, &topo, err, HCCN_IMP_ERRLEN) != HCCN_OK)
        return -1;
    hccn_sim_topo_free(topo);
    return 0;
}

typedef int (*import_fn)(const char *, size_t, const char *,
                         const hccn_imp_opts_t *, hccn_imp_topo_t *, char *);

static const import_fn formats[] = {
    hccn_imp_nccl_text, hccn_imp_ranktable_text, hccn_imp_nvsmi_text,
    hccn_imp_astrasim_text, hccn_imp_simgrid_text};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1), err[HCCN_IMP_ERRLEN];
    if (text == NULL)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    hccn_imp_opts_t o = {0};
    if (IMP_FORMAT == 2)
        o.model = "a100";   /* nvidia-smi needs a model */
    hccn_imp_topo_t t = {0};
    err[0] = '\0';
    if (formats[IMP_FORMAT](text, size, "fuzz", &o, &t, err) == 0) {
        char *json = hccn_imp_to_json(&t, err);
        hccn_sim_topo_t *topo = NULL;
        if (json != NULL && hccn_sim_topo_load_string(json, "fuzz-out", &topo,
                                                      err, sizeof(err)) == 0)
            hccn_sim_topo_free(topo);
        free(json);
    } else if (strncmp(err, "fuzz", 4) != 0) {
        abort();   /* every error names its input */
    }
    hccn_imp_free(&t);
    free(text);
    return 0;
}
