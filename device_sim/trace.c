/*
 * Timelines of simulated runs (trace.h): device slices recorded by the rank
 * threads, link rate segments recorded by the engine, and the writer that
 * lays them out as Chrome trace events.
 *
 * Slices of one device may overlap without nesting (a rank sends and
 * receives at once; the phases of a pipelined algorithm overlap), which a
 * trace viewer cannot draw on one track. The writer therefore spreads a
 * device over lanes: a slice goes on the first lane where it nests in its
 * own parent (or where nothing is open); lane 0 of NPU r is thread r,
 * further lanes are extra threads named after it.
 */
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "device_sim/engine_internal.h"
#include "device_sim/trace.h"

#define PID_DEVICES 1
#define PID_LINKS 2
#define TID_LANE HCCN_SIM_TRACE_LANE
#define LINK_NAME_MAX (2 * HCCN_SIM_NAME_MAX + 2)

typedef struct {
    int dev, depth, idx, parent, lane;
    uint64_t group;             /* the device's operation number */
    uint64_t rec;               /* record order, the last tie-break */
    double begin, end;          /* seconds on the trace's timeline */
    int64_t b_ps, e_ps;         /* the same in whole picoseconds */
    char *name, *args;
} slice_t;

typedef struct {
    char name[LINK_NAME_MAX];   /* "SRC->DST" by device names */
    int level;
    int nsegs;
} ltrack_t;

typedef struct {
    int track;
    double t0, t1;              /* seconds on the trace's timeline */
    double rate, bw;            /* bytes/s: total, and the link's nominal */
} seg_t;

struct hccn_sim_trace {
    pthread_mutex_t lock;       /* slices, groups, names (record) */
    double offset;              /* timeline time of the current run's 0 */
    uint64_t nrec;
    long dropped;               /* groups lost to no memory */

    slice_t *slices;
    size_t nslices, capslices;
    uint64_t *next_op;          /* per device */
    char (*devname)[HCCN_SIM_NAME_MAX];
    int ndevs;

    ltrack_t *tracks;
    int ntracks, captracks;
    seg_t *segs;
    size_t nsegs, capsegs;

    /* The attached engine's links (engine lock). */
    int nlinks;
    int *track_of;              /* link -> track */
    double *bw;                 /* nominal bandwidth, bytes/s */
    double *rate, *since;       /* open segment: total rate and start */
    double *sum;                /* scratch: rate being summed */
    int *listed;                /* scratch: link is in `touched` */
    int *touched, *open;        /* link lists */
    int nopen;
};

static void *grow(void *p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return p;
    size_t c = *cap ? *cap : 64;
    while (c < need)
        c *= 2;
    void *q = realloc(p, c * size);
    if (q != NULL)
        *cap = c;
    return q;
}

hccn_sim_trace_t *hccn_sim_trace_create(void)
{
    hccn_sim_trace_t *tr = calloc(1, sizeof(*tr));
    if (tr != NULL)
        pthread_mutex_init(&tr->lock, NULL);
    return tr;
}

static void links_free(hccn_sim_trace_t *tr)
{
    free(tr->track_of);
    free(tr->bw);
    free(tr->rate);
    free(tr->since);
    free(tr->sum);
    free(tr->listed);
    free(tr->touched);
    free(tr->open);
    tr->track_of = tr->listed = tr->touched = tr->open = NULL;
    tr->bw = tr->rate = tr->since = tr->sum = NULL;
    tr->nlinks = tr->nopen = 0;
}

void hccn_sim_trace_destroy(hccn_sim_trace_t *tr)
{
    if (tr == NULL)
        return;
    for (size_t i = 0; i < tr->nslices; i++) {
        free(tr->slices[i].name);
        free(tr->slices[i].args);
    }
    free(tr->slices);
    free(tr->next_op);
    free(tr->devname);
    free(tr->tracks);
    free(tr->segs);
    links_free(tr);
    pthread_mutex_destroy(&tr->lock);
    free(tr);
}

/* --------------------------------------------------------- link segments */

static void seg_close(hccn_sim_trace_t *tr, int l, double now)
{
    if (!(now > tr->since[l]))
        return;
    size_t cap = tr->capsegs;
    seg_t *s = grow(tr->segs, &cap, tr->nsegs + 1, sizeof(*s));
    if (s == NULL) {
        tr->dropped++;
        return;
    }
    tr->segs = s;
    tr->capsegs = cap;
    s[tr->nsegs++] = (seg_t){tr->track_of[l], tr->offset + tr->since[l],
                             tr->offset + now, tr->rate[l], tr->bw[l]};
    tr->tracks[tr->track_of[l]].nsegs++;
}

/* Link l carries `rate` from now on. */
static void seg_update(hccn_sim_trace_t *tr, int l, double rate, double now)
{
    if (rate == tr->rate[l])
        return;
    if (tr->rate[l] > 0.0)
        seg_close(tr, l, now);
    tr->rate[l] = rate;
    tr->since[l] = now;
}

static void touch(hccn_sim_trace_t *tr, int l, int *n)
{
    if (!tr->listed[l]) {
        tr->listed[l] = 1;
        tr->touched[(*n)++] = l;
    }
}

void hccn_sim_trace_rates(hccn_sim_engine_t *eng)
{
    hccn_sim_trace_t *tr = eng->trace;
    int n = 0;
    for (int i = 0; i < tr->nopen; i++)
        touch(tr, tr->open[i], &n);
    for (int i = 0; i < eng->nflows; i++) {
        const flow_t *f = eng->flows[i];
        if (!(f->rate > 0.0) || isinf(f->rate))
            continue;
        for (int k = 0; k < f->nlinks; k++) {
            touch(tr, f->links[k], &n);
            tr->sum[f->links[k]] += f->rate;
        }
    }
    tr->nopen = 0;
    for (int i = 0; i < n; i++) {
        int l = tr->touched[i];
        seg_update(tr, l, tr->sum[l], eng->now);
        if (tr->rate[l] > 0.0)
            tr->open[tr->nopen++] = l;
        tr->sum[l] = 0.0;
        tr->listed[l] = 0;
    }
}

/* Closes the open segments at eng->now and moves the timeline on by the
 * length of the run (its latest clock). */
static void run_end(hccn_sim_engine_t *eng, hccn_sim_trace_t *tr)
{
    for (int i = 0; i < tr->nopen; i++) {
        int l = tr->open[i];
        seg_close(tr, l, eng->now);
        tr->rate[l] = 0.0;
    }
    tr->nopen = 0;
    double span = eng->now;
    for (int d = 0; d < eng->ndev; d++)
        if (eng->devs[d].clock > span)
            span = eng->devs[d].clock;
    pthread_mutex_lock(&tr->lock);
    tr->offset += span;
    pthread_mutex_unlock(&tr->lock);
}

void hccn_sim_trace_run_end(hccn_sim_engine_t *eng)
{
    run_end(eng, eng->trace);
}

/* ------------------------------------------------------------- attaching */

/* The track of the link named name, added if new; -1 on no memory. */
static int track_get(hccn_sim_trace_t *tr, const char *name, int level)
{
    for (int i = 0; i < tr->ntracks; i++)
        if (strcmp(tr->tracks[i].name, name) == 0)
            return i;
    size_t cap = (size_t)tr->captracks;
    ltrack_t *t = grow(tr->tracks, &cap, (size_t)tr->ntracks + 1,
                       sizeof(*t));
    if (t == NULL)
        return -1;
    tr->tracks = t;
    tr->captracks = (int)cap;
    ltrack_t *k = &t[tr->ntracks];
    memset(k, 0, sizeof(*k));
    snprintf(k->name, sizeof(k->name), "%s", name);
    k->level = level;
    return tr->ntracks++;
}

/* Learns the names of topo's NPUs (the latest attach wins). */
static int names_learn(hccn_sim_trace_t *tr, const hccn_sim_topo_t *topo)
{
    int n = topo->nnpus;
    pthread_mutex_lock(&tr->lock);
    if (n > tr->ndevs) {
        void *names = realloc(tr->devname, (size_t)n * sizeof(*tr->devname));
        uint64_t *ops = realloc(tr->next_op, (size_t)n * sizeof(*ops));
        if (names != NULL)
            tr->devname = names;
        if (ops != NULL)
            tr->next_op = ops;
        if (names == NULL || ops == NULL) {
            pthread_mutex_unlock(&tr->lock);
            return -1;
        }
        memset(ops + tr->ndevs, 0, (size_t)(n - tr->ndevs) * sizeof(*ops));
        tr->ndevs = n;
    }
    for (int r = 0; r < n; r++)
        snprintf(tr->devname[r], HCCN_SIM_NAME_MAX, "%s",
                 topo->devs[topo->npus[r].dev].name);
    pthread_mutex_unlock(&tr->lock);
    return 0;
}

static int links_attach(hccn_sim_trace_t *tr, const hccn_sim_topo_t *topo)
{
    size_t m = (size_t)(topo->nlinks > 0 ? topo->nlinks : 1);
    tr->track_of = calloc(m, sizeof(int));
    tr->bw = calloc(m, sizeof(double));
    tr->rate = calloc(m, sizeof(double));
    tr->since = calloc(m, sizeof(double));
    tr->sum = calloc(m, sizeof(double));
    tr->listed = calloc(m, sizeof(int));
    tr->touched = calloc(m, sizeof(int));
    tr->open = calloc(m, sizeof(int));
    if (!tr->track_of || !tr->bw || !tr->rate || !tr->since || !tr->sum ||
        !tr->listed || !tr->touched || !tr->open)
        return -1;
    tr->nlinks = topo->nlinks;
    for (int l = 0; l < topo->nlinks; l++) {
        const hccn_sim_link_t *k = &topo->links[l];
        tr->bw[l] = k->bw;
        char name[LINK_NAME_MAX];
        snprintf(name, sizeof(name), "%s->%s", topo->devs[k->src].name,
                 topo->devs[k->dst].name);
        if ((tr->track_of[l] = track_get(tr, name, k->level)) < 0)
            return -1;
    }
    return 0;
}

int hccn_sim_engine_set_trace(hccn_sim_engine_t *eng, hccn_sim_trace_t *tr)
{
    int rc = 0;
    pthread_mutex_lock(&eng->lock);
    if (eng->trace != NULL) {
        run_end(eng, eng->trace);
        links_free(eng->trace);
        eng->trace = NULL;
    }
    if (tr != NULL) {
        rc = names_learn(tr, eng->topo);
        if (rc == 0)
            rc = links_attach(tr, eng->topo);
        if (rc == 0)
            eng->trace = tr;
        else
            links_free(tr);
    }
    pthread_mutex_unlock(&eng->lock);
    return rc;
}

hccn_sim_trace_t *hccn_sim_engine_trace(const hccn_sim_engine_t *eng)
{
    return eng->trace;
}

/* ------------------------------------------------------------- recording */

static char *dup_or_null(const char *s)
{
    return s != NULL ? strdup(s) : NULL;
}

int hccn_sim_trace_record(hccn_sim_trace_t *tr, int dev,
                          const hccn_sim_trace_slice_t *slices, int n)
{
    pthread_mutex_lock(&tr->lock);
    size_t cap = tr->capslices;
    slice_t *s = grow(tr->slices, &cap, tr->nslices + (size_t)n, sizeof(*s));
    int ok = s != NULL && dev >= 0 && dev < tr->ndevs;
    if (s != NULL) {
        tr->slices = s;
        tr->capslices = cap;
    }
    for (int i = 0; ok && i < n; i++) {
        const hccn_sim_trace_slice_t *in = &slices[i];
        slice_t *o = &s[tr->nslices + (size_t)i];
        *o = (slice_t){.dev = dev, .depth = in->depth, .idx = i,
                       .parent = in->parent, .group = tr->next_op[dev],
                       .rec = tr->nrec++,
                       .begin = tr->offset + in->begin,
                       .end = tr->offset + in->end,
                       .name = dup_or_null(in->name),
                       .args = dup_or_null(in->args)};
        if (o->name == NULL || (in->args != NULL && o->args == NULL)) {
            for (int j = 0; j <= i; j++) {
                free(s[tr->nslices + (size_t)j].name);
                free(s[tr->nslices + (size_t)j].args);
            }
            ok = 0;
        }
    }
    if (ok) {
        tr->nslices += (size_t)n;
        tr->next_op[dev]++;
    } else {
        tr->dropped++;
    }
    pthread_mutex_unlock(&tr->lock);
    return ok ? 0 : -1;
}

/* --------------------------------------------------------------- writing */

static int64_t to_ps(double t)
{
    return (int64_t)llround(t * 1e12);
}

static int slice_cmp(const void *pa, const void *pb)
{
    const slice_t *a = pa, *b = pb;
    if (a->dev != b->dev)
        return a->dev < b->dev ? -1 : 1;
    if (a->b_ps != b->b_ps)
        return a->b_ps < b->b_ps ? -1 : 1;
    if (a->e_ps != b->e_ps)
        return a->e_ps > b->e_ps ? -1 : 1;   /* the longer one encloses */
    if (a->depth != b->depth)
        return a->depth < b->depth ? -1 : 1;
    if (a->group != b->group)
        return a->group < b->group ? -1 : 1;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

typedef struct {
    const slice_t **top;
    size_t n, cap;
} lane_t;

/* 1 if s may go on a lane whose innermost open slice is top (NULL: none). */
static int nests(const slice_t *top, const slice_t *s)
{
    return top == NULL || (top->group == s->group && top->idx == s->parent &&
                           top->e_ps >= s->e_ps);
}

/* Gives the slices of one device, sorted, their lanes. Returns the number
 * of lanes, or -1 on no memory. */
static int lanes_assign(slice_t *s, size_t n)
{
    lane_t *lanes = NULL;
    int nlanes = 0, rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        int l = 0;
        for (;; l++) {
            if (l == nlanes) {
                lane_t *nl = realloc(lanes, (size_t)(l + 1) * sizeof(*nl));
                if (nl == NULL) {
                    rc = -1;
                    break;
                }
                lanes = nl;
                memset(&lanes[nlanes++], 0, sizeof(*lanes));
            }
            lane_t *ln = &lanes[l];
            while (ln->n > 0 && ln->top[ln->n - 1]->e_ps <= s[i].b_ps &&
                   !(ln->top[ln->n - 1]->e_ps == s[i].b_ps &&
                     nests(ln->top[ln->n - 1], &s[i])))
                ln->n--;
            if (nests(ln->n ? ln->top[ln->n - 1] : NULL, &s[i]))
                break;
        }
        if (rc != 0)
            break;
        lane_t *ln = &lanes[l];
        const slice_t **t = grow(ln->top, &ln->cap, ln->n + 1, sizeof(*t));
        if (t == NULL) {
            rc = -1;
            break;
        }
        ln->top = t;
        t[ln->n++] = &s[i];
        s[i].lane = l;
    }
    for (int l = 0; l < nlanes; l++)
        free(lanes[l].top);
    free(lanes);
    return rc == 0 ? nlanes : -1;
}

/* Writes s as a JSON string (quotes included). */
static void put_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

/* Picoseconds as microseconds with six decimals (exact). */
static void put_us(FILE *f, int64_t ps)
{
    if (ps < 0) {
        fputc('-', f);
        ps = -ps;
    }
    fprintf(f, "%" PRId64 ".%06" PRId64, ps / 1000000, ps % 1000000);
}

static void put_meta(FILE *f, const char *what, int pid, int tid,
                     const char *key, const char *name, int sort)
{
    fprintf(f, ",\n{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%d,\"tid\":%d,"
               "\"args\":{\"%s\":", what, pid, tid, key);
    if (name != NULL)
        put_str(f, name);
    else
        fprintf(f, "%d", sort);
    fputs("}}", f);
}

static int lane_tid(const slice_t *s)
{
    return s->lane * TID_LANE + s->dev;
}

static void lane_names(FILE *f, const hccn_sim_trace_t *tr, int dev,
                       int nlanes)
{
    for (int l = 0; l < nlanes; l++) {
        char name[HCCN_SIM_NAME_MAX + 48];
        const char *dn = dev < tr->ndevs ? tr->devname[dev] : "?";
        if (l == 0)
            snprintf(name, sizeof(name), "npu %d (%s)", dev, dn);
        else
            snprintf(name, sizeof(name), "npu %d (%s) overlap %d", dev, dn,
                     l);
        put_meta(f, "thread_name", PID_DEVICES, l * TID_LANE + dev, "name",
                 name, 0);
        put_meta(f, "thread_sort_index", PID_DEVICES, l * TID_LANE + dev,
                 "sort_index", NULL, dev * 1000 + l);
    }
}

static const char *const depth_cat[] = {"op", "phase", "step"};

static void put_slice(FILE *f, const slice_t *s)
{
    fputs(",\n{\"ph\":\"X\",\"cat\":", f);
    put_str(f, s->depth >= 0 && s->depth <= 2 ? depth_cat[s->depth] : "op");
    fputs(",\"name\":", f);
    put_str(f, s->name);
    fprintf(f, ",\"pid\":%d,\"tid\":%d,\"ts\":", PID_DEVICES, lane_tid(s));
    put_us(f, s->b_ps);
    fputs(",\"dur\":", f);
    put_us(f, s->e_ps - s->b_ps);
    fprintf(f, ",\"args\":{\"op\":%" PRIu64 "%s%s}}", s->group,
            s->args != NULL && s->args[0] ? "," : "",
            s->args != NULL ? s->args : "");
}

static int write_devices(hccn_sim_trace_t *tr, FILE *f)
{
    for (size_t i = 0; i < tr->nslices; i++) {
        tr->slices[i].b_ps = to_ps(tr->slices[i].begin);
        tr->slices[i].e_ps = to_ps(tr->slices[i].end);
        if (tr->slices[i].e_ps < tr->slices[i].b_ps)
            tr->slices[i].e_ps = tr->slices[i].b_ps;
    }
    qsort(tr->slices, tr->nslices, sizeof(*tr->slices), slice_cmp);
    for (size_t i = 0; i < tr->nslices;) {
        size_t j = i;
        while (j < tr->nslices && tr->slices[j].dev == tr->slices[i].dev)
            j++;
        int nlanes = lanes_assign(&tr->slices[i], j - i);
        if (nlanes < 0)
            return -1;
        lane_names(f, tr, tr->slices[i].dev, nlanes);
        for (size_t k = i; k < j; k++)
            put_slice(f, &tr->slices[k]);
        i = j;
    }
    return 0;
}

static const char *const level_names[] = {"intra", "nic", "net"};

static int seg_cmp(const void *pa, const void *pb)
{
    const seg_t *a = pa, *b = pb;
    if (a->track != b->track)
        return a->track < b->track ? -1 : 1;
    return a->t0 < b->t0 ? -1 : a->t0 > b->t0;
}

static void write_links(hccn_sim_trace_t *tr, FILE *f)
{
    qsort(tr->segs, tr->nsegs, sizeof(*tr->segs), seg_cmp);
    for (int t = 0; t < tr->ntracks; t++) {
        if (tr->tracks[t].nsegs == 0)
            continue;
        put_meta(f, "thread_name", PID_LINKS, t + 1, "name",
                 tr->tracks[t].name, 0);
        put_meta(f, "thread_sort_index", PID_LINKS, t + 1, "sort_index",
                 NULL, t);
    }
    for (size_t i = 0; i < tr->nsegs; i++) {
        const seg_t *s = &tr->segs[i];
        const ltrack_t *k = &tr->tracks[s->track];
        int64_t b = to_ps(s->t0), e = to_ps(s->t1);
        fprintf(f, ",\n{\"ph\":\"X\",\"cat\":\"link\",\"name\":\"busy\","
                   "\"pid\":%d,\"tid\":%d,\"ts\":", PID_LINKS, s->track + 1);
        put_us(f, b);
        fputs(",\"dur\":", f);
        put_us(f, e - b);
        fprintf(f, ",\"args\":{\"bytes\":%.17g,\"rate_GBps\":%.17g,"
                   "\"util\":%.17g,\"level\":\"%s\"}}",
                s->rate * (s->t1 - s->t0), s->rate / 1e9,
                s->bw > 0.0 ? s->rate / s->bw : 0.0,
                k->level >= 0 && k->level <= 2 ? level_names[k->level] : "?");
    }
}

int hccn_sim_trace_write(hccn_sim_trace_t *tr, FILE *f)
{
    pthread_mutex_lock(&tr->lock);
    fputs("{\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"time\":"
          "\"simulated\",\"dropped\":", f);
    fprintf(f, "%ld},\n\"traceEvents\":[\n", tr->dropped);
    fprintf(f, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,"
               "\"tid\":0,\"args\":{\"name\":\"devices\"}}", PID_DEVICES);
    put_meta(f, "process_sort_index", PID_DEVICES, 0, "sort_index", NULL, 0);
    put_meta(f, "process_name", PID_LINKS, 0, "name", "links", 0);
    put_meta(f, "process_sort_index", PID_LINKS, 0, "sort_index", NULL, 1);
    int rc = write_devices(tr, f);
    write_links(tr, f);
    fputs("\n]}\n", f);
    pthread_mutex_unlock(&tr->lock);
    return rc == 0 && !ferror(f) ? 0 : -1;
}
