/*
 * The wire of multi-process clusters (proc.h): frames of 64-bit words and
 * length-prefixed byte strings over a stream socket. A frame is its length
 * (8 bytes) and its body. Both ends run on one host, so words travel in
 * the host's byte order; doubles travel as their bits, exactly.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "device_sim/alloc.h"
#include "runtime/proc.h"

#define FRAME_MAX ((size_t)1 << 30)

void hccn_rt_wire_reset(rt_wire_t *m)
{
    m->len = m->pos = 0;
    m->bad = 0;
}

void hccn_rt_wire_free(rt_wire_t *m)
{
    hccn_sim_free(m->buf);
    memset(m, 0, sizeof(*m));
}

/* Room for n more bytes; on no memory the frame is marked bad. */
static int reserve(rt_wire_t *m, size_t n)
{
    if (m->len + n <= m->cap)
        return 0;
    size_t cap = m->cap ? m->cap : 256;
    while (cap < m->len + n)
        cap *= 2;
    uint8_t *b = hccn_sim_realloc(m->buf, cap);
    if (b == NULL) {
        m->bad = 1;
        return -1;
    }
    m->buf = b;
    m->cap = cap;
    return 0;
}

static void put(rt_wire_t *m, const void *p, size_t n)
{
    if (n == 0 || reserve(m, n) != 0)
        return;
    memcpy(m->buf + m->len, p, n);
    m->len += n;
}

void hccn_rt_wire_u64(rt_wire_t *m, uint64_t v)
{
    put(m, &v, sizeof(v));
}

void hccn_rt_wire_f64(rt_wire_t *m, double v)
{
    put(m, &v, sizeof(v));
}

void hccn_rt_wire_bytes(rt_wire_t *m, const void *p, size_t n)
{
    hccn_rt_wire_u64(m, n);
    put(m, p, n);
}

void hccn_rt_wire_str(rt_wire_t *m, const char *s)
{
    /* UINT64_MAX stands for NULL; a string carries its terminator. */
    if (s == NULL) {
        hccn_rt_wire_u64(m, UINT64_MAX);
        return;
    }
    hccn_rt_wire_bytes(m, s, strlen(s) + 1);
}

void hccn_rt_wire_append(rt_wire_t *m, const rt_wire_t *tail)
{
    put(m, tail->buf, tail->len);
}

void hccn_rt_wire_ptr(rt_wire_t *m, const rt_proc_t *p, const void *ptr)
{
    uintptr_t a = (uintptr_t)ptr, b = (uintptr_t)p->region;
    int in = ptr != NULL && a >= b && a - b <= p->region_len;
    hccn_rt_wire_u64(m, ptr == NULL ? 0 : in ? 1 : 2);
    hccn_rt_wire_u64(m, in ? a - b : a);
}

void *hccn_rt_wire_get_ptr(rt_wire_t *m, const rt_proc_t *p)
{
    static const char stray;   /* stands for a raw pointer that happens to
                                  fall in this process's arenas */
    uint64_t kind = hccn_rt_wire_get_u64(m), v = hccn_rt_wire_get_u64(m);
    uintptr_t b = (uintptr_t)p->region;
    if (kind == 1 && v <= p->region_len)
        return p->region + v;
    if (kind != 2)
        return NULL;
    if (v >= b && v - b <= p->region_len)
        return (void *)&stray;
    return (void *)(uintptr_t)v;
}

static int take(rt_wire_t *m, void *p, size_t n)
{
    if (m->bad || m->len - m->pos < n) {
        m->bad = 1;
        memset(p, 0, n);
        return -1;
    }
    memcpy(p, m->buf + m->pos, n);
    m->pos += n;
    return 0;
}

uint64_t hccn_rt_wire_get_u64(rt_wire_t *m)
{
    uint64_t v;
    take(m, &v, sizeof(v));
    return v;
}

double hccn_rt_wire_get_f64(rt_wire_t *m)
{
    double v;
    take(m, &v, sizeof(v));
    return v;
}

const void *hccn_rt_wire_get_bytes(rt_wire_t *m, size_t *n)
{
    uint64_t len = hccn_rt_wire_get_u64(m);
    *n = 0;
    if (m->bad || len > m->len - m->pos) {
        m->bad = 1;
        return NULL;
    }
    const void *p = m->buf + m->pos;
    m->pos += len;
    *n = (size_t)len;
    return p;
}

const char *hccn_rt_wire_get_str(rt_wire_t *m)
{
    if (m->bad || m->len - m->pos < 8)
        return NULL;
    uint64_t len;
    memcpy(&len, m->buf + m->pos, sizeof(len));
    if (len == UINT64_MAX) {
        m->pos += 8;
        return NULL;
    }
    size_t n;
    const char *s = hccn_rt_wire_get_bytes(m, &n);
    if (s == NULL || n == 0 || s[n - 1] != '\0') {
        m->bad = 1;
        return NULL;
    }
    return s;
}

int hccn_rt_wire_io(int fd, void *buf, size_t n, int out)
{
    char *c = buf;
    while (n > 0) {
        ssize_t k = out ? send(fd, c, n, MSG_NOSIGNAL) : recv(fd, c, n, 0);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        c += k;
        n -= (size_t)k;
    }
    return 0;
}

int hccn_rt_wire_send(int fd, const rt_wire_t *m)
{
    if (m->bad || fd < 0)
        return -1;
    uint64_t len = m->len;
    if (hccn_rt_wire_io(fd, &len, sizeof(len), 1) != 0)
        return -1;
    return hccn_rt_wire_io(fd, m->buf, m->len, 1);
}

int hccn_rt_wire_recv(int fd, rt_wire_t *m)
{
    hccn_rt_wire_reset(m);
    uint64_t len;
    if (fd < 0 || hccn_rt_wire_io(fd, &len, sizeof(len), 0) != 0 || len > FRAME_MAX ||
        reserve(m, (size_t)len) != 0)
        return -1;
    if (hccn_rt_wire_io(fd, m->buf, (size_t)len, 0) != 0)
        return -1;
    m->len = (size_t)len;
    return 0;
}
