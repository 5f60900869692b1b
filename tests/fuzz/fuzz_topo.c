/*
 * libFuzzer target for the topology loader: any bytes must give either a
 * topology or a one-line error naming the source, never a crash, a leak or
 * undefined behaviour. Loaded topologies are also routed and summarised.
 * Build and run: docs/fuzzing.md.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "device_sim/topo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (text == NULL)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    char err[512];
    hccn_sim_topo_t *topo = NULL;
    hccn_status_t rc = hccn_sim_topo_load_string(text, "fuzz", &topo, err,
                                                 sizeof(err));
    if (rc == HCCN_OK) {
        /* Exercise routing on a few pairs and the summary. */
        int links[HCCN_SIM_ROUTE_MAX];
        double lat;
        int n = topo->nnpus;
        for (int k = 0; k < 16 && n > 0; k++)
            hccn_sim_topo_route(topo, (k * 7) % n, (k * 13 + 1) % n, links, &lat);
        hccn_sim_topo_summary_t sum;
        hccn_sim_topo_summarize(topo, &sum);
        hccn_sim_topo_free(topo);
    } else if (strncmp(err, "fuzz", 4) != 0) {
        abort();   /* every error names its source */
    }
    free(text);
    return 0;
}
