/*
 * The import, export and detect subcommands of hccn-topo: arguments, format
 * detection, and the call into one importer or exporter. Exit status 0 on
 * success, 2 with one line on stderr on any error.
 */
#include <stdlib.h>
#include <string.h>

#include "imp.h"

static int usage(FILE *f, int code)
{
    fprintf(f,
        "usage: hccn-topo import FORMAT FILE... [-o OUT.json] [options]\n"
        "       hccn-topo export astrasim|simgrid TOPO.json [-o OUT]\n"
        "       hccn-topo detect [-o OUT.json] [--per core|numa]\n"
        "FORMAT: nccl-xml, hccl-ranktable, nvidia-smi, astrasim, simgrid, "
        "auto\n"
        "  --gpu MODEL, --npu MODEL   device preset (%s)\n"
        "  --hosts N                  repeat the one host read N times\n"
        "  --network switch|fat-tree:R[:O]   the network between hosts "
        "(R nodes per leaf, oversubscription O)\n"
        "  --nic-gbps G               NIC speed in Gb/s where the input has "
        "none\n"
        "  --name NAME                the topology's name\n"
        "See docs/import.md.\n", hccn_imp_preset_names());
    return code;
}

static int die(const char *err)
{
    fprintf(stderr, "hccn-topo: %s\n", err);
    return 2;
}

static int parse_network(const char *s, hccn_imp_opts_t *o)
{
    if (!strcmp(s, "switch")) {
        o->net = HCCN_IMP_NET_SWITCH;
        return 0;
    }
    char *end;
    if (strncmp(s, "fat-tree:", 9))
        return -1;
    long r = strtol(s + 9, &end, 10);
    if (end == s + 9 || r < 1 || r > 65536)
        return -1;
    o->net = HCCN_IMP_NET_LEAF_SPINE;
    o->per_leaf = (int)r;
    o->oversub = 1;
    if (*end == ':') {
        o->oversub = strtod(end + 1, &end);
        if (!(o->oversub >= 1 && o->oversub <= 1e6))
            return -1;
    }
    return *end == '\0' ? 0 : -1;
}

/* A number in lo..hi, or -1. */
static double ranged(const char *s, double lo, double hi)
{
    char *end;
    double v = strtod(s, &end);
    return end != s && *end == '\0' && v >= lo && v <= hi ? v : -1;
}

/* Parses the options common to the subcommands; files[] gets the rest. */
static int parse_opts(int argc, char **argv, hccn_imp_opts_t *o,
                      const char **out, const char **files, int *nfiles)
{
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help"))
            return 1;
        if (a[0] != '-') {
            files[(*nfiles)++] = a;
            continue;
        }
        if (v == NULL)
            return -1;
        i++;
        if (!strcmp(a, "-o"))
            *out = v;
        else if (!strcmp(a, "--gpu") || !strcmp(a, "--npu"))
            o->model = v;
        else if (!strcmp(a, "--name"))
            o->name = v;
        else if (!strcmp(a, "--hosts"))
            o->hosts = (int)ranged(v, 1, 65536);
        else if (!strcmp(a, "--nic-gbps"))
            o->nic_gbps = ranged(v, 1e-6, 1e9);
        else if (!strcmp(a, "--per"))
            o->per_numa = !strcmp(v, "numa") ? 1 : !strcmp(v, "core") ? 0 : -1;
        else if (!strcmp(a, "--network")) {
            if (parse_network(v, o))
                return -1;
        } else
            return -1;
    }
    if (o->hosts < 0 || o->hosts > 65536 || o->nic_gbps < 0 ||
        o->nic_gbps > 1e9 || o->per_numa < 0)
        return -1;
    return 0;
}

static const char *sniff_file(const char *file, char *err)
{
    size_t len;
    char *text = hccn_imp_read_file(file, &len, err);
    if (text == NULL)
        return NULL;
    const char *fmt = hccn_imp_sniff(text, len);
    free(text);
    if (fmt == NULL)
        hccn_imp_fail(err, "%s: format not recognised (give it: nccl-xml, "
                      "hccl-ranktable, nvidia-smi, astrasim, simgrid)", file);
    return fmt;
}

static int one_file(const char *fmt, int nfiles, char *err)
{
    if (nfiles == 1)
        return 0;
    return hccn_imp_fail(err, "%s reads one file (got %d)", fmt, nfiles);
}

static int run_import(const char *fmt, const char **files, int nfiles,
                      const hccn_imp_opts_t *o, hccn_imp_topo_t *t, char *err)
{
    if (!strcmp(fmt, "auto") && (fmt = sniff_file(files[0], err)) == NULL)
        return -1;
    if (!strcmp(fmt, "nccl-xml"))
        return hccn_imp_nccl(files, nfiles, o, t, err);
    if (!strcmp(fmt, "nvidia-smi"))
        return hccn_imp_nvsmi(files, nfiles, o, t, err);
    if (one_file(fmt, nfiles, err))
        return -1;
    if (!strcmp(fmt, "hccl-ranktable"))
        return hccn_imp_ranktable(files[0], o, t, err);
    if (!strcmp(fmt, "astrasim"))
        return hccn_imp_astrasim(files[0], o, t, err);
    if (!strcmp(fmt, "simgrid"))
        return hccn_imp_simgrid(files[0], o, t, err);
    return hccn_imp_fail(err, "unknown format '%s' (nccl-xml, hccl-ranktable, "
                         "nvidia-smi, astrasim, simgrid, auto)", fmt);
}

static int cmd_import(int argc, char **argv, int detect)
{
    hccn_imp_opts_t o = {0};
    hccn_imp_topo_t t = {0};
    const char *out = NULL, **files = calloc((size_t)argc + 1, sizeof(char *));
    char err[HCCN_IMP_ERRLEN];
    int nfiles = 0, rc;
    if (files == NULL)
        return die("out of memory");
    rc = parse_opts(argc, argv, &o, &out, files, &nfiles);
    if (rc || (detect ? nfiles != 0 : nfiles < 2)) {
        free(files);
        return usage(rc > 0 ? stdout : stderr, rc > 0 ? 0 : 2);
    }
    rc = detect ? hccn_imp_detect(&o, &t, err)
                : run_import(files[0], files + 1, nfiles - 1, &o, &t, err);
    if (rc == 0)
        rc = hccn_imp_write(&t, &o, out, err);
    hccn_imp_free(&t);
    free(files);
    return rc ? die(err) : 0;
}

static int cmd_export(int argc, char **argv)
{
    hccn_imp_opts_t o = {0};
    const char *out = NULL, *files[3];
    char err[HCCN_IMP_ERRLEN];
    int nfiles = 0;
    if (argc > 6)
        return usage(stderr, 2);
    int rc = parse_opts(argc, argv, &o, &out, files, &nfiles);
    if (rc || nfiles != 2)
        return usage(rc > 0 ? stdout : stderr, rc > 0 ? 0 : 2);
    FILE *f = out ? fopen(out, "w") : stdout;
    if (f == NULL)
        return hccn_imp_fail(err, "%s: cannot write", out), die(err);
    if (!strcmp(files[0], "astrasim"))
        rc = hccn_imp_export_astrasim(files[1], f, err);
    else if (!strcmp(files[0], "simgrid"))
        rc = hccn_imp_export_simgrid(files[1], f, err);
    else
        rc = hccn_imp_fail(err, "export: unknown format '%s' (astrasim, "
                           "simgrid)", files[0]);
    if (out && fclose(f) != 0 && rc == 0)
        rc = hccn_imp_fail(err, "%s: write error", out);
    if (rc && out)
        remove(out);
    return rc ? die(err) : 0;
}

int hccn_imp_main(int argc, char **argv)
{
    if (!strcmp(argv[0], "import"))
        return cmd_import(argc - 1, argv + 1, 0);
    if (!strcmp(argv[0], "detect"))
        return cmd_import(argc - 1, argv + 1, 1);
    return cmd_export(argc - 1, argv + 1);
}
