/*
 * `nvidia-smi topo -m` matrix text: a header of device columns (GPU<i>,
 * NIC<i> or NIC names such as mlx5_0) and affinity columns, one row per
 * device with X, NV#, PIX, PXB, PHB, NODE, SYS (SOC in old drivers), then
 * the legends ("NIC Legend:" names the NICs). The matrix names no model or
 * speed: --gpu MODEL is required, NIC speed comes from the preset's server
 * class or --nic-gbps. One file is one host.
 */
#include <stdlib.h>
#include <string.h>

#include "imp.h"

#define MAX_DEVS 64
#define MAX_FIELDS 96

typedef struct {
    const char *file;
    char *err;
    int ncols, ngpus, nnics;
    char col[MAX_DEVS][32];     /* device column names */
    int is_gpu[MAX_DEVS], idx[MAX_DEVS];   /* GPU/NIC number of a column */
    int cell[MAX_DEVS][MAX_DEVS];          /* <0: -NV count, else distance */
    int have_row[MAX_DEVS];
    char nic_name[MAX_DEVS][32];
} smi_t;

/* Splits line (modified) at tabs into trimmed fields; ANSI escapes removed. */
static int split(char *line, char **f)
{
    char *w = line;
    for (char *r = line; *r; r++) {
        if (*r == '\x1b' && r[1] == '[') {
            while (*r && *r != 'm')
                r++;
            if (!*r)
                break;
            continue;
        }
        *w++ = *r;
    }
    *w = '\0';
    int n = 0;
    for (char *p = line; n < MAX_FIELDS;) {
        char *tab = strchr(p, '\t');
        if (tab)
            *tab = '\0';
        while (*p == ' ')
            p++;
        size_t l = strlen(p);
        while (l > 0 && (p[l - 1] == ' ' || p[l - 1] == '\r'))
            p[--l] = '\0';
        f[n++] = p;
        if (!tab)
            break;
        p = tab + 1;
    }
    return n;
}

static int header(smi_t *s, char **f, int n, int line)
{
    for (int i = 1; i < n && f[i][0]; i++) {
        if (strchr(f[i], ' ') || !strncmp(f[i], "CPU", 3) ||
            !strncmp(f[i], "NUMA", 4))
            break;
        if (s->ncols == MAX_DEVS || strlen(f[i]) >= sizeof(s->col[0]))
            return hccn_imp_fail(s->err, "%s:%d: header: too many or too "
                                 "long device columns", s->file, line);
        int gpu = !strncmp(f[i], "GPU", 3) && f[i][3] >= '0' && f[i][3] <= '9';
        strcpy(s->col[s->ncols], f[i]);
        s->is_gpu[s->ncols] = gpu;
        s->idx[s->ncols] = gpu ? s->ngpus++ : s->nnics++;
        if (!gpu)
            strcpy(s->nic_name[s->idx[s->ncols]], f[i]);
        s->ncols++;
    }
    if (s->ngpus == 0)
        return hccn_imp_fail(s->err, "%s:%d: header: no GPU<i> column (is "
                             "this `nvidia-smi topo -m` output?)", s->file,
                             line);
    return 0;
}

static int cell(smi_t *s, const char *v, int line, const char *row, int *out)
{
    static const char *const kinds[] = {"X", "PIX", "PXB", "PHB", "NODE",
                                        "SYS", "SOC", NULL};
    for (int k = 0; kinds[k]; k++)
        if (!strcmp(v, kinds[k])) {
            *out = k == 6 ? 5 : k;
            return 0;
        }
    char *end;
    long nv = !strncmp(v, "NV", 2) ? strtol(v + 2, &end, 10) : 0;
    if (nv >= 1 && nv <= 64 && *end == '\0') {
        *out = -(int)nv;
        return 0;
    }
    return hccn_imp_fail(s->err, "%s:%d: row %s: '%s' is not X, NV#, PIX, "
                         "PXB, PHB, NODE, SYS or SOC", s->file, line, row, v);
}

static int row(smi_t *s, char **f, int n, int line)
{
    int r = 0;
    while (r < s->ncols && strcmp(s->col[r], f[0]))
        r++;
    if (r == s->ncols)
        return hccn_imp_fail(s->err, "%s:%d: row '%s': not a column of the "
                             "header", s->file, line, f[0]);
    if (s->have_row[r]++)
        return hccn_imp_fail(s->err, "%s:%d: row %s: repeated", s->file,
                             line, f[0]);
    if (n < s->ncols + 1)
        return hccn_imp_fail(s->err, "%s:%d: row %s: %d cells, the header "
                             "has %d devices", s->file, line, f[0], n - 1,
                             s->ncols);
    for (int c = 0; c < s->ncols; c++) {
        if (cell(s, f[c + 1], line, f[0], &s->cell[r][c]))
            return -1;
        if ((c == r) != (s->cell[r][c] == 0))
            return hccn_imp_fail(s->err, "%s:%d: row %s: 'X' must be on the "
                                 "diagonal only (column %s)", s->file, line,
                                 f[0], s->col[c]);
        if (s->cell[r][c] < 0 && !(s->is_gpu[r] && s->is_gpu[c]))
            return hccn_imp_fail(s->err, "%s:%d: row %s: NVLink to %s, which "
                                 "is not a GPU", s->file, line, f[0],
                                 s->col[c]);
    }
    return 0;
}

/* "  NIC0: mlx5_0" lines of the NIC legend. */
static int legend(smi_t *s, char *line, int lno)
{
    char *colon = strchr(line, ':');
    char *name = line;
    while (*name == ' ')
        name++;
    if (colon == NULL || strncmp(name, "NIC", 3))
        return 0;
    *colon = '\0';
    char *val = colon + 1;
    while (*val == ' ')
        val++;
    for (int c = 0; c < s->ncols; c++)
        if (!s->is_gpu[c] && !strcmp(s->col[c], name)) {
            if (strlen(val) >= sizeof(s->nic_name[0]) || !*val)
                return hccn_imp_fail(s->err, "%s:%d: NIC legend: bad name",
                                     s->file, lno);
            strcpy(s->nic_name[s->idx[c]], val);
        }
    return 0;
}

static int parse(smi_t *s, char *text)
{
    char *f[MAX_FIELDS], *save = NULL;
    int lno = 0, state = 0;      /* 0 header, 1 rows, 2 legends */
    for (char *p = text; p; p = save) {
        char *nl = strchr(p, '\n');
        save = nl ? nl + 1 : NULL;
        if (nl)
            *nl = '\0';
        lno++;
        char *t = p;
        while (*t == ' ' || *t == '\t' || *t == '\r')
            t++;
        if (*t == '\0')
            continue;
        if (!strncmp(t, "Legend:", 7) || !strncmp(t, "NIC Legend:", 11)) {
            state = 2;
            continue;
        }
        if (state == 2) {
            if (legend(s, p, lno))
                return -1;
            continue;
        }
        int n = split(p, f);
        if (state == 0 && (state = 1) && header(s, f, n, lno))
            return -1;
        if (state == 1 && n > 0 && f[0][0] && row(s, f, n, lno))
            return -1;
    }
    for (int c = 0; c < s->ncols; c++)
        if (!s->have_row[c])
            return hccn_imp_fail(s->err, "%s: no row for %s", s->file,
                                 s->col[c]);
    return 0;
}

static int col_of(const smi_t *s, int gpu, int i)
{
    for (int c = 0; c < s->ncols; c++)
        if (s->is_gpu[c] == gpu && s->idx[c] == i)
            return c;
    return -1;
}

static void pcie_groups(smi_t *s, hccn_imp_topo_t *t, hccn_imp_node_t *n,
                        const hccn_imp_preset_t *p)
{
    int g = s->ngpus;
    for (int a = 0; a < g; a++)
        n->group_of[a] = -1;
    for (int a = 0; a < g; a++) {
        if (n->group_of[a] >= 0)
            continue;
        n->group_of[a] = n->ngroups;
        for (int b = a + 1; b < g; b++) {
            int d = s->cell[col_of(s, 1, a)][col_of(s, 1, b)];
            if (n->group_of[b] < 0 && (d == 1 || d == 2))
                n->group_of[b] = n->ngroups;
        }
        n->ngroups++;
    }
    n->fabric = HCCN_IMP_FAB_PCIE;
    n->fab_bw = n->host_bw = p->pcie_GBps;
    n->fab_lat = n->host_lat = HCCN_IMP_PCIE_LAT_US;
    n->p2p = 1;
    hccn_imp_source(t, "fabric", "%s: no NVLink; GPUs joined by PIX or PXB "
                    "share a PCIe switch (%d groups); GPU link and uplink %g "
                    "GB/s (preset %s); latency %g us assumed", s->file,
                    n->ngroups, p->pcie_GBps, p->name, HCCN_IMP_PCIE_LAT_US);
    hccn_imp_note(t, "%s: PCIe link widths are not in the matrix: the GPU's "
                  "own x16 rate (preset %s) for GPU links and uplinks; p2p "
                  "assumed on", s->file, p->name);
}

static int fabric(smi_t *s, hccn_imp_topo_t *t, hccn_imp_node_t *n,
                  const hccn_imp_preset_t *p)
{
    int g = s->ngpus, links[MAX_DEVS * MAX_DEVS], first = -1, even = 1;
    int any = 0;
    for (int a = 0; a < g; a++)
        for (int b = 0; b < g; b++) {
            int v = s->cell[col_of(s, 1, a)][col_of(s, 1, b)];
            links[a * g + b] = v < 0 ? -v : 0;
            any |= links[a * g + b];
            if (a != b) {
                first = first < 0 ? links[a * g + b] : first;
                even &= links[a * g + b] == first;
            }
        }
    if (g == 1)
        return 0;
    if (any && even && first * (g - 1) > p->links) {
        hccn_imp_note(t, "%s: every GPU pair shows NV%d, more links than a "
                      "%s has (%d) for %d peers: an NVSwitch fabric", s->file,
                      first, p->name, p->links, g - 1);
        return hccn_imp_nvlink_fabric(t, n, links, first, p, s->file, s->err);
    }
    if (any)
        return hccn_imp_nvlink_fabric(t, n, links, 0, p, s->file, s->err);
    if ((n->group_of = malloc((size_t)g * sizeof(int))) == NULL)
        return hccn_imp_fail(s->err, "out of memory");
    pcie_groups(s, t, n, p);
    return 0;
}

static int nics(smi_t *s, hccn_imp_topo_t *t, hccn_imp_node_t *n,
                const hccn_imp_preset_t *p, const hccn_imp_opts_t *o)
{
    double dist[MAX_DEVS * MAX_DEVS], bw[MAX_DEVS];
    char *names[MAX_DEVS];
    double gbps = o->nic_gbps > 0 ? o->nic_gbps : p->nic_Gbps;
    for (int k = 0; k < s->nnics; k++) {
        names[k] = s->nic_name[k];
        bw[k] = hccn_imp_round(gbps / 8);
        for (int a = 0; a < s->ngpus; a++)
            dist[a * s->nnics + k] = s->cell[col_of(s, 1, a)][col_of(s, 0, k)];
    }
    if (s->nnics > 0)
        hccn_imp_source(t, "nics", "%s: %d NIC columns; each GPU served by "
                        "the NICs nearest it (PIX < PXB < PHB < NODE < SYS); "
                        "speed %g Gb/s (%s) = %g GB/s; latency %g us assumed",
                        s->file, s->nnics, gbps, o->nic_gbps > 0
                        ? "--nic-gbps" : p->name, gbps / 8,
                        HCCN_IMP_NIC_LAT_US);
    return hccn_imp_assign_nics(t, n, dist, s->ngpus, s->nnics, bw, names,
                                s->file, s->err);
}

int hccn_imp_nvsmi_text(const char *text, size_t len, const char *file,
                        const hccn_imp_opts_t *o, hccn_imp_topo_t *t,
                        char *err)
{
    const hccn_imp_preset_t *p = o->model ? hccn_imp_preset(o->model) : NULL;
    if (p == NULL || p->sm == 0)
        return hccn_imp_fail(err, "%s: nvidia-smi's matrix names no GPU model: "
                             "give --gpu MODEL (%s)", file,
                             "p100, v100, a100, rtx-a6000, rtx4090, h100, "
                             "h200, h20, b200");
    if (memchr(text, '\0', len))
        return hccn_imp_fail(err, "%s: NUL byte in a text file", file);
    smi_t *s = calloc(1, sizeof(*s));
    char *copy = strndup(text, len);
    int rc = -1;
    if (s == NULL || copy == NULL) {
        hccn_imp_fail(err, "%s: out of memory", file);
        goto out;
    }
    s->file = file;
    s->err = err;
    if (parse(s, copy))
        goto out;
    char name[32];
    snprintf(name, sizeof(name), "host%d", t->ntypes);
    hccn_imp_node_t *n = hccn_imp_add_type(t, name, s->ngpus);
    if (n == NULL) {
        hccn_imp_fail(err, "%s: out of memory", file);
        goto out;
    }
    hccn_imp_set_npu(t, n, p);
    rc = fabric(s, t, n, p) || nics(s, t, n, p, o) ? -1 : 0;
out:
    free(s);
    free(copy);
    return rc;
}

int hccn_imp_nvsmi(const char *const *files, int nfiles,
                   const hccn_imp_opts_t *o, hccn_imp_topo_t *t, char *err)
{
    return hccn_imp_hosts(files, nfiles, hccn_imp_nvsmi_text,
                          "nvidia-smi topo -m output", o, t, err);
}
