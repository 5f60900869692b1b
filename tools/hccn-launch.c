/*
 * hccn-launch: runs one program as P processes that make one simulated
 * cluster on this host (docs/processes.md).
 *
 *   hccn-launch -n P [-g GRACE_S] PROGRAM [ARGS...]
 *
 * Makes a rendezvous directory, starts P copies of PROGRAM with
 * HCCN_PROC_RANK=i, HCCN_PROC_WORLD=P and HCCN_RENDEZVOUS=DIR, and waits.
 * When one fails (a non-zero exit or a signal), the others get GRACE_S
 * seconds (default 30) to report and end, then are killed. The exit code
 * is the first failure's (128 + N for signal N), else 0. SIGINT and
 * SIGTERM are passed on to every process.
 *
 * Over TCP on loopback (docs/processes.md): HCCN_RENDEZVOUS=tcp:HOST:PORT
 * is passed on as it is; HCCN_TRANSPORT=tcp without it picks a free port
 * of 127.0.0.1 and passes tcp:127.0.0.1:PORT.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    int n;
    double grace_s;
    char **argv;                  /* PROGRAM ARGS..., NULL-terminated */
} opts_t;

static pid_t *pids;
static int npids;
static volatile sig_atomic_t got_signal;

static void usage(void)
{
    fprintf(stderr, "usage: hccn-launch -n P [-g GRACE_S] PROGRAM [ARGS...]\n"
                    "  runs P processes of PROGRAM as one simulated cluster "
                    "(docs/processes.md)\n");
}

static int parse(int argc, char **argv, opts_t *o)
{
    o->n = 0;
    o->grace_s = 30.0;
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        char *end = NULL;
        if (strcmp(argv[i], "-n") == 0 && i + 1 < argc) {
            long v = strtol(argv[++i], &end, 10);
            if (*end != '\0' || v < 1 || v > 65536) {
                fprintf(stderr, "hccn-launch: -n %s: a process count from 1 "
                                "to 65536 expected\n", argv[i]);
                return -1;
            }
            o->n = (int)v;
        } else if (strcmp(argv[i], "-g") == 0 && i + 1 < argc) {
            o->grace_s = strtod(argv[++i], &end);
            if (*end != '\0' || o->grace_s < 0) {
                fprintf(stderr, "hccn-launch: -g %s: seconds expected\n",
                        argv[i]);
                return -1;
            }
        } else if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        } else {
            usage();
            return -1;
        }
    }
    if (o->n < 1 || i >= argc) {
        usage();
        return -1;
    }
    o->argv = argv + i;
    return 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void on_signal(int sig)
{
    got_signal = sig;
    for (int i = 0; i < npids; i++)
        if (pids[i] > 0)
            kill(pids[i], sig);
}

static pid_t start(const opts_t *o, int rank, const char *dir)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    char buf[32];
    snprintf(buf, sizeof(buf), "%d", rank);
    setenv("HCCN_PROC_RANK", buf, 1);
    snprintf(buf, sizeof(buf), "%d", o->n);
    setenv("HCCN_PROC_WORLD", buf, 1);
    setenv("HCCN_RENDEZVOUS", dir, 1);   /* unchanged when it is tcp: */
    execvp(o->argv[0], o->argv);
    fprintf(stderr, "hccn-launch: cannot run %s: %s\n", o->argv[0],
            strerror(errno));
    _exit(127);
}

/* The exit code a wait status stands for, said once when it is a failure. */
static int code_of(int rank, pid_t pid, int status)
{
    if (WIFSIGNALED(status)) {
        fprintf(stderr, "hccn-launch: process %d (pid %d) was killed by "
                        "signal %d (%s)\n", rank, (int)pid, WTERMSIG(status),
                strsignal(WTERMSIG(status)));
        return 128 + WTERMSIG(status);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

/* Waits for every process; after the first failure, the rest get the
 * grace period and are then killed. */
static int wait_all(const opts_t *o)
{
    int left = o->n, first = 0;
    double deadline = -1.0;
    while (left > 0) {
        int status;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid > 0) {
            int rank = 0;
            while (rank < npids && pids[rank] != pid)
                rank++;
            if (rank == npids)
                continue;
            pids[rank] = 0;
            left--;
            int code = code_of(rank, pid, status);
            if (code != 0 && first == 0) {
                first = code;
                deadline = now_s() + o->grace_s;
            }
            continue;
        }
        if (pid < 0 && errno != EINTR)
            break;
        if (deadline >= 0 && now_s() > deadline) {
            fprintf(stderr, "hccn-launch: killing the %d process(es) still "
                            "running %.0f s after the first failure\n", left,
                    o->grace_s);
            for (int i = 0; i < npids; i++)
                if (pids[i] > 0)
                    kill(pids[i], SIGKILL);
            deadline = -1.0;
        }
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return first;
}

/* Removes the rendezvous directory and what a failed run left in it. */
static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char path[600];
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        unlink(path);
    }
    if (d != NULL)
        closedir(d);
    rmdir(dir);
}
/* The rendezvous to hand on: dir, or a tcp: one (see the top); NULL and
 * a message when no port is free. */
static const char *rendezvous(const char *dir, char *buf, size_t len)
{
    const char *r = getenv("HCCN_RENDEZVOUS"), *t = getenv("HCCN_TRANSPORT");
    if (r != NULL && strncmp(r, "tcp:", 4) == 0)
        return r;
    if (t == NULL || strcmp(t, "tcp") != 0)
        return dir;
    struct sockaddr_in a = {.sin_family = AF_INET};
    socklen_t n = sizeof(a);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &n) != 0) {
        fprintf(stderr, "hccn-launch: HCCN_TRANSPORT=tcp: no free port on "
                        "127.0.0.1: %s\n", strerror(errno));
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    close(fd);   /* the host process listens on it next */
    snprintf(buf, len, "tcp:127.0.0.1:%u", (unsigned)ntohs(a.sin_port));
    return buf;
}

int main(int argc, char **argv)
{
    opts_t o;
    if (parse(argc, argv, &o) != 0)
        return 2;
    const char *tmp = getenv("TMPDIR");
    char dir[256];
    snprintf(dir, sizeof(dir), "%s/hccn-launch-XXXXXX",
             tmp != NULL && *tmp != '\0' ? tmp : "/tmp");
    if (mkdtemp(dir) == NULL) {
        fprintf(stderr, "hccn-launch: cannot make a rendezvous directory "
                        "%s: %s\n", dir, strerror(errno));
        return 1;
    }
    char tcp[64];
    const char *rdv = rendezvous(dir, tcp, sizeof(tcp));
    pids = rdv != NULL ? calloc((size_t)o.n, sizeof(*pids)) : NULL;
    if (pids == NULL) {
        remove_dir(dir);
        return 1;
    }
    npids = o.n;
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    for (int i = 0; i < o.n; i++) {
        pids[i] = start(&o, i, rdv);
        if (pids[i] < 0) {
            fprintf(stderr, "hccn-launch: cannot start process %d: %s\n", i,
                    strerror(errno));
            on_signal(SIGKILL);
            break;
        }
    }
    int code = wait_all(&o);
    remove_dir(dir);
    free(pids);
    if (got_signal && code == 0)
        code = 128 + got_signal;
    return code;
}
