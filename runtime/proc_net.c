/*
 * The one place that makes the sockets of a multi-process cluster
 * (proc.h): the host's control socket and every process's data server,
 * and the lines to them. Two families, one protocol:
 *
 * - Unix-domain sockets in the rendezvous directory (one host):
 *   DIR/hccn.G.sock (the host's) and DIR/hccn.G.d.Q.sock (process Q's
 *   data server), G the cluster's generation (proc_join.c).
 * - TCP (several hosts), when the rendezvous is "tcp:HOST:PORT": the host
 *   listens there; every data server listens on an ephemeral port of the
 *   address the others reach its process by (HCCN_ADDR, else the local
 *   address of its control line to the host), and the host hands the
 *   table of those addresses to every process at join. Every TCP line
 *   has TCP_NODELAY (the protocol is request and reply).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

#include "runtime/proc.h"
#include "runtime/rt.h"

int hccn_rt_net_resolve(const char *host, int port, rt_net_addr_t *a)
{
    struct addrinfo hint = {0}, *res = NULL;
    char ps[16];
    hint.ai_family = AF_UNSPEC;
    hint.ai_socktype = SOCK_STREAM;
    snprintf(ps, sizeof(ps), "%d", port);
    memset(a, 0, sizeof(*a));
    if (getaddrinfo(host, ps, &hint, &res) != 0 || res == NULL)
        return -1;
    memcpy(&a->sa, res->ai_addr, res->ai_addrlen);
    a->len = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

void hccn_rt_net_name(const rt_net_addr_t *a, char *buf, size_t len)
{
    char h[NI_MAXHOST] = "?", s[NI_MAXSERV] = "?";
    getnameinfo((const struct sockaddr *)&a->sa, a->len, h, sizeof(h), s,
                sizeof(s), NI_NUMERICHOST | NI_NUMERICSERV);
    snprintf(buf, len, a->sa.ss_family == AF_INET6 ? "[%s]:%s" : "%s:%s", h, s);
}

static void set_port(rt_net_addr_t *a, int port)
{
    if (a->sa.ss_family == AF_INET6)
        ((struct sockaddr_in6 *)&a->sa)->sin6_port = htons((uint16_t)port);
    else
        ((struct sockaddr_in *)&a->sa)->sin_port = htons((uint16_t)port);
}

/* 1 if a is the wildcard address (0.0.0.0 or ::), which names no host. */
static int wildcard(const rt_net_addr_t *a)
{
    if (a->sa.ss_family == AF_INET6)
        return IN6_IS_ADDR_UNSPECIFIED(
            &((const struct sockaddr_in6 *)&a->sa)->sin6_addr);
    return ((const struct sockaddr_in *)&a->sa)->sin_addr.s_addr ==
           htonl(INADDR_ANY);
}

/* "tcp:HOST:PORT" (HOST may be [v6]) into *a; an error names what. */
static hccn_status_t parse_tcp(const char *what, const char *s,
                               rt_net_addr_t *a)
{
    char host[RT_PROC_DIR_MAX];
    const char *h = s + 4, *colon = strrchr(h, ':');
    if (colon == NULL || colon == h || colon[1] == '\0')
        return hccn_rt_error(HCCN_ERR_INVALID, "hccn_cluster_create: %s=%s "
                             "needs tcp:HOST:PORT (no port given)", what, s);
    char *end;
    errno = 0;
    long port = strtol(colon + 1, &end, 10);
    if (errno != 0 || *end != '\0' || port < 1 || port > 65535)
        return hccn_rt_error(HCCN_ERR_INVALID, "hccn_cluster_create: %s=%s: "
                             "port '%s' is not a number in [1, 65535]", what,
                             s, colon + 1);
    size_t n = (size_t)(colon - h);
    if (n >= 2 && h[0] == '[' && h[n - 1] == ']') {
        h++;
        n -= 2;
    }
    snprintf(host, sizeof(host), "%.*s", (int)n, h);
    if (hccn_rt_net_resolve(host, (int)port, a) != 0)
        return hccn_rt_error(HCCN_ERR_INVALID, "hccn_cluster_create: %s=%s: "
                             "host '%s' cannot be resolved", what, s, host);
    if (wildcard(a))
        return hccn_rt_error(HCCN_ERR_INVALID, "hccn_cluster_create: %s=%s: "
                             "'%s' names no host: give the host process's "
                             "address, one the others reach", what, s, host);
    return HCCN_OK;
}

hccn_status_t hccn_rt_net_config(rt_proc_cfg_t *cfg, const char *what)
{
    const char *me = getenv("HCCN_ADDR");
    if (strncmp(cfg->dir, "tcp:", 4) != 0)
        return HCCN_OK;
    cfg->tcp = 1;
    hccn_status_t rc = parse_tcp(what, cfg->dir, &cfg->host);
    if (rc != HCCN_OK || me == NULL || *me == '\0')
        return rc;
    if (hccn_rt_net_resolve(me, 0, &cfg->self) != 0)
        return hccn_rt_error(HCCN_ERR_INVALID, "hccn_cluster_create: "
                             "HCCN_ADDR=%s cannot be resolved to an address",
                             me);
    return HCCN_OK;
}

static void nodelay(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int hccn_rt_net_listen_on(rt_net_addr_t *a)
{
    int fd = socket(a->sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    if (fd < 0)
        return -1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    a->len = a->len ? a->len : (socklen_t)sizeof(a->sa);
    if (bind(fd, (struct sockaddr *)&a->sa, a->len) != 0 ||
        listen(fd, 4096) != 0 ||
        getsockname(fd, (struct sockaddr *)&a->sa, &a->len) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

/* A Unix socket's address DIR/hccn.G.sock (q < 0) or DIR/hccn.G.d.q.sock. */
static int unix_addr(const rt_proc_t *p, int q, struct sockaddr_un *a)
{
    memset(a, 0, sizeof(*a));
    a->sun_family = AF_UNIX;
    int k = q < 0 ? snprintf(a->sun_path, sizeof(a->sun_path),
                             "%s/hccn.%d.sock", p->dir, p->gen)
                  : snprintf(a->sun_path, sizeof(a->sun_path),
                             "%s/hccn.%d.d.%d.sock", p->dir, p->gen, q);
    if (k > 0 && (size_t)k < sizeof(a->sun_path))
        return 0;
    errno = ENAMETOOLONG;
    return -1;
}

static int unix_listen(const rt_proc_t *p, int q)
{
    struct sockaddr_un a;
    if (unix_addr(p, q, &a) != 0)
        return -1;
    unlink(a.sun_path);   /* a stale one of an earlier run */
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && (bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
                    listen(fd, 4096) != 0)) {
        int e = errno;
        close(fd);
        errno = e;
        fd = -1;
    }
    return fd;
}

static int connect_to(const struct sockaddr *a, socklen_t len, int tcp)
{
    int fd = socket(a->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, a, len) != 0) {
        close(fd);
        return -1;
    }
    if (fd >= 0 && tcp)
        nodelay(fd);
    return fd;
}

int hccn_rt_net_listen_ctrl(rt_proc_t *p)
{
    if (!p->tcp)
        return unix_listen(p, -1);
    return hccn_rt_net_listen_on(&p->host);
}

int hccn_rt_net_listen_data(rt_proc_t *p, int ctrl_fd)
{
    if (!p->tcp)
        return unix_listen(p, p->rank);
    rt_net_addr_t *a = &p->data_addr[p->rank];
    if (p->self.len > 0) {
        *a = p->self;
    } else if (p->rank == 0) {
        *a = p->host;
    } else {
        a->len = sizeof(a->sa);
        if (getsockname(ctrl_fd, (struct sockaddr *)&a->sa, &a->len) != 0)
            return -1;
    }
    set_port(a, 0);
    return hccn_rt_net_listen_on(a);
}

int hccn_rt_net_connect_ctrl(const rt_proc_t *p)
{
    struct sockaddr_un a;
    if (p->tcp)
        return connect_to((const struct sockaddr *)&p->host.sa, p->host.len, 1);
    if (unix_addr(p, -1, &a) != 0)
        return -1;
    return connect_to((const struct sockaddr *)&a, sizeof(a), 0);
}

int hccn_rt_net_connect_data(const rt_proc_t *p, int q)
{
    struct sockaddr_un a;
    if (p->tcp) {
        const rt_net_addr_t *d = &p->data_addr[q];
        return d->len > 0 ? connect_to((const struct sockaddr *)&d->sa, d->len, 1)
                          : -1;
    }
    if (unix_addr(p, q, &a) != 0)
        return -1;
    return connect_to((const struct sockaddr *)&a, sizeof(a), 0);
}

void hccn_rt_net_put_addr(rt_wire_t *m, const rt_net_addr_t *a)
{
    hccn_rt_wire_bytes(m, a != NULL ? (const void *)&a->sa : NULL,
                       a != NULL ? a->len : 0);
}

void hccn_rt_net_get_addr(rt_wire_t *m, rt_net_addr_t *a)
{
    size_t n = 0;
    const void *b = hccn_rt_wire_get_bytes(m, &n);
    memset(a, 0, sizeof(*a));
    if (b != NULL && n <= sizeof(a->sa)) {
        memcpy(&a->sa, b, n);
        a->len = (socklen_t)n;
    }
}

int hccn_rt_net_accept(int lfd)
{
    struct sockaddr_storage a;
    socklen_t len = sizeof(a);
    int fd = accept4(lfd, (struct sockaddr *)&a, &len, SOCK_CLOEXEC);
    if (fd >= 0 && a.ss_family != AF_UNIX)
        nodelay(fd);
    return fd;
}

void hccn_rt_net_unlink_ctrl(const rt_proc_t *p)
{
    struct sockaddr_un a;
    if (!p->tcp && unix_addr(p, -1, &a) == 0)
        unlink(a.sun_path);
}

void hccn_rt_net_unlink_data(const rt_proc_t *p)
{
    struct sockaddr_un a;
    if (!p->tcp && unix_addr(p, p->rank, &a) == 0)
        unlink(a.sun_path);
}

/* The first IPv4 address of an interface that is up and not loopback. */
static int outward_addr(rt_net_addr_t *a)
{
    struct ifaddrs *l = NULL;
    int rc = -1;
    if (getifaddrs(&l) != 0)
        return -1;
    for (struct ifaddrs *i = l; i != NULL && rc != 0; i = i->ifa_next)
        if (i->ifa_addr != NULL && i->ifa_addr->sa_family == AF_INET &&
            (i->ifa_flags & IFF_UP) && !(i->ifa_flags & IFF_LOOPBACK)) {
            memset(a, 0, sizeof(*a));
            memcpy(&a->sa, i->ifa_addr, sizeof(struct sockaddr_in));
            a->len = sizeof(struct sockaddr_in);
            rc = 0;
        }
    freeifaddrs(l);
    return rc;
}

int hccn_rt_proc_mpi_listen(char *buf, size_t len, int hosts)
{
    const char *me = getenv("HCCN_ADDR");
    rt_net_addr_t a;
    char name[NI_MAXHOST + 16];
    int ok = me != NULL && *me != '\0' ? hccn_rt_net_resolve(me, 0, &a)
             : hosts                   ? outward_addr(&a)
                                       : hccn_rt_net_resolve("127.0.0.1", 0, &a);
    int fd = ok == 0 ? hccn_rt_net_listen_on(&a) : -1;
    buf[0] = '\0';
    if (fd >= 0) {
        hccn_rt_net_name(&a, name, sizeof(name));
        snprintf(buf, len, "tcp:%s", name);
    }
    return fd;
}
