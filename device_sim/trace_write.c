/*
 * The Chrome trace writer (trace.h): device slices spread over lanes so
 * that every thread's slices nest, then the link segments; everything in
 * a total order, timestamps in whole picoseconds printed as microseconds.
 *
 * Slices of one device may overlap without nesting (a rank sends and
 * receives at once; the phases of a pipelined algorithm overlap), which a
 * trace viewer cannot draw on one track. A slice therefore goes on the
 * first lane where it nests in its own parent (or where nothing is open);
 * lane 0 of NPU r is thread r, further lanes are extra threads named after
 * it.
 */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_sim/alloc.h"
#include "device_sim/trace_internal.h"

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
                lane_t *nl = hccn_sim_realloc(lanes, (size_t)(l + 1) * sizeof(*nl));
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
        const slice_t **t = hccn_sim_trace_grow(ln->top, &ln->cap, ln->n + 1,
                                                sizeof(*t));
        if (t == NULL) {
            rc = -1;
            break;
        }
        ln->top = t;
        t[ln->n++] = &s[i];
        s[i].lane = l;
    }
    for (int l = 0; l < nlanes; l++)
        hccn_sim_free(lanes[l].top);
    hccn_sim_free(lanes);
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
    if (tr->nslices > 0)        /* a trace of runs without operations */
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
    if (tr->nsegs > 0)
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
