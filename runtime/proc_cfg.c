/*
 * Which process of a multi-process cluster this is (proc.h): from the
 * cluster options, else the environment (HCCN_PROC_RANK, HCCN_PROC_WORLD,
 * HCCN_RENDEZVOUS), else Open MPI's (OMPI_COMM_WORLD_RANK/SIZE), in which
 * case the rendezvous directory, when none is given, is made by process 0
 * and broadcast with MPI_Bcast (only in a library built with MPI).
 */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/proc.h"
#include "runtime/rt.h"

#ifdef HCCN_HAVE_MPI
#include <mpi.h>
#endif

#define OPT_HAS(opts, field)                                                  \
    ((opts) != NULL &&                                                        \
     (opts)->struct_size >= offsetof(hccn_cluster_opts_t, field) +            \
                                sizeof((opts)->field))

/* An integer environment variable: 1 and *v, 0 when unset, -1 when bad
 * (recorded: HCCN_ERR_INVALID naming the variable and its value). */
static int env_int(const char *name, int *v)
{
    const char *s = getenv(name);
    if (s == NULL || *s == '\0')
        return 0;
    char *end;
    errno = 0;
    long x = strtol(s, &end, 10);
    if (errno != 0 || *end != '\0' || x < 0 || x > INT_MAX) {
        hccn_rt_error(HCCN_ERR_INVALID, "hccn_cluster_create: %s=%s is not "
                      "a count (a whole number >= 0)", name, s);
        return -1;
    }
    *v = (int)x;
    return 1;
}

/* The process rank and count from the environment; *mpi is set when they
 * come from Open MPI's. */
static hccn_status_t env_layout(rt_proc_cfg_t *cfg, int *mpi)
{
    int kw = env_int("HCCN_PROC_WORLD", &cfg->world);
    if (kw < 0)
        return HCCN_ERR_INVALID;   /* env_int recorded which and why */
    int kr = env_int("HCCN_PROC_RANK", &cfg->rank);
    if (kr < 0)
        return HCCN_ERR_INVALID;
    /* Half a layout is a mistake in the launcher, not one process: said
     * so rather than run alone. */
    if (kw == 0 && kr > 0)
        return hccn_rt_error(HCCN_ERR_INVALID, "hccn_cluster_create: "
                             "HCCN_PROC_RANK=%d without HCCN_PROC_WORLD",
                             cfg->rank);
    if (kw > 0) {
        if (kr == 0 && cfg->world > 1)
            return hccn_rt_error(HCCN_ERR_INVALID, "hccn_cluster_create: "
                                 "HCCN_PROC_WORLD=%d without HCCN_PROC_RANK",
                                 cfg->world);
        if (kr > 0 && cfg->rank >= (cfg->world > 0 ? cfg->world : 1))
            return hccn_rt_error(HCCN_ERR_INVALID, "hccn_cluster_create: "
                                 "process rank %d is out of range [0, %d) "
                                 "(HCCN_PROC_RANK, HCCN_PROC_WORLD)",
                                 cfg->rank, cfg->world > 0 ? cfg->world : 1);
        return HCCN_OK;
    }
    cfg->rank = 0;
    int ks = env_int("OMPI_COMM_WORLD_SIZE", &cfg->world);
    int km = env_int("OMPI_COMM_WORLD_RANK", &cfg->rank);
    if (ks < 0 || km < 0)
        return HCCN_ERR_INVALID;   /* env_int recorded which and why */
    *mpi = ks > 0;
    return HCCN_OK;
}

/* HCCN_TRANSPORT: unset, "unix" or "tcp"; tcp needs a tcp: rendezvous,
 * or mpirun (which agrees on one). */
static hccn_status_t transport(const char *dir)
{
    const char *t = getenv("HCCN_TRANSPORT");
    if (t == NULL || *t == '\0' || strcmp(t, "unix") == 0)
        return HCCN_OK;
    if (strcmp(t, "tcp") != 0)
        return hccn_rt_error(HCCN_ERR_INVALID, "hccn_cluster_create: "
                             "HCCN_TRANSPORT=%s is neither tcp nor unix", t);
    if (dir != NULL && *dir != '\0' && strncmp(dir, "tcp:", 4) != 0)
        return hccn_rt_error(HCCN_ERR_INVALID, "hccn_cluster_create: "
                             "HCCN_TRANSPORT=tcp, but the rendezvous %s is a "
                             "directory: give tcp:HOST:PORT", dir);
    return HCCN_OK;
}

hccn_status_t hccn_rt_proc_config(const hccn_cluster_opts_t *opts,
                                  rt_proc_cfg_t *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->world = 1;
    cfg->listen_fd = -1;
    int mpi = 0;
    hccn_status_t rc;
    const char *dir = NULL;
    if (OPT_HAS(opts, proc_world) && opts->proc_world > 0) {
        cfg->world = opts->proc_world;
        cfg->rank = OPT_HAS(opts, proc_rank) ? opts->proc_rank : 0;
    } else if ((rc = env_layout(cfg, &mpi)) != HCCN_OK) {
        return rc;
    }
    if (cfg->world <= 1) {
        cfg->world = 1;
        cfg->rank = 0;
        return HCCN_OK;
    }
    if (cfg->rank < 0 || cfg->rank >= cfg->world)
        return hccn_rt_error(HCCN_ERR_INVALID, "hccn_cluster_create: process "
                             "rank %d is out of range [0, %d)", cfg->rank,
                             cfg->world);
    const char *what = "option rendezvous";
    if (OPT_HAS(opts, rendezvous) && opts->rendezvous != NULL)
        dir = opts->rendezvous;
    else
        dir = getenv("HCCN_RENDEZVOUS"), what = "HCCN_RENDEZVOUS";
    if ((rc = transport(dir)) != HCCN_OK)
        return rc;
    if (dir != NULL && *dir != '\0') {
        if (strlen(dir) >= sizeof(cfg->dir))
            return hccn_rt_error(HCCN_ERR_INVALID, "hccn_cluster_create: the "
                                 "rendezvous directory's path is longer "
                                 "than %zu bytes: %s", sizeof(cfg->dir) - 1,
                                 dir);
        snprintf(cfg->dir, sizeof(cfg->dir), "%s", dir);
        return hccn_rt_net_config(cfg, what);
    }
    if (mpi)
        return hccn_rt_proc_mpi_dir(cfg);
    return hccn_rt_error(HCCN_ERR_INVALID, "hccn_cluster_create: process %d "
                         "of %d has no rendezvous directory: set "
                         "HCCN_RENDEZVOUS (hccn-launch does) or the "
                         "option rendezvous", cfg->rank, cfg->world);
}

#ifdef HCCN_HAVE_MPI

static void mpi_end(void)
{
    int done = 0;
    MPI_Finalized(&done);
    if (!done)
        MPI_Finalize();
}

/* MPI, initialised here (then finalised at exit) unless the program did;
 * hccn calls MPI only from the thread that creates the cluster. */
static hccn_status_t mpi_ready(void)
{
    int init = 0, provided = MPI_THREAD_SINGLE, main_thread = 0;
    MPI_Initialized(&init);
    if (!init) {
        if (MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided) !=
            MPI_SUCCESS)
            return hccn_rt_error(HCCN_ERR_IO, "hccn_cluster_create: "
                                 "MPI_Init_thread failed");
        atexit(mpi_end);
    } else {
        MPI_Query_thread(&provided);
    }
    MPI_Is_thread_main(&main_thread);
    if (provided >= MPI_THREAD_SERIALIZED ||
        (provided == MPI_THREAD_FUNNELED && main_thread))
        return HCCN_OK;
    return hccn_rt_error(HCCN_ERR_UNSUPPORTED, "hccn_cluster_create: Open "
                         "MPI granted thread level %d; hccn needs "
                         "MPI_THREAD_SERIALIZED (%d), or MPI_THREAD_FUNNELED "
                         "when the cluster is made on the main thread",
                         provided, MPI_THREAD_SERIALIZED);
}

/* Whether the lines are TCP, as process 0 decides: 1 when HCCN_TRANSPORT
 * asks for it, 2 when the processes are not all on one host (compared by
 * MPI_Get_processor_name), else 0. Collective. */
static int mpi_tcp(int me)
{
    char name[MPI_MAX_PROCESSOR_NAME] = "", first[MPI_MAX_PROCESSOR_NAME];
    int len = 0, differs, any = 0, tcp;
    MPI_Get_processor_name(name, &len);
    memcpy(first, name, sizeof(first));
    MPI_Bcast(first, (int)sizeof(first), MPI_CHAR, 0, MPI_COMM_WORLD);
    differs = strncmp(first, name, sizeof(first)) != 0;
    MPI_Allreduce(&differs, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    const char *t = getenv("HCCN_TRANSPORT");
    tcp = any ? 2 : (t != NULL && strcmp(t, "tcp") == 0);
    if (me == 0 && any && t != NULL && strcmp(t, "unix") == 0)
        tcp = 0;   /* asked for: the joins then fail, naming the rendezvous */
    MPI_Bcast(&tcp, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return tcp;
}

hccn_status_t hccn_rt_proc_mpi_dir(rt_proc_cfg_t *cfg)
{
    hccn_status_t rc = mpi_ready();
    if (rc != HCCN_OK)
        return rc;
    int me = 0, n = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    char dir[RT_PROC_DIR_MAX] = "";
    int tcp = mpi_tcp(me);
    if (me == 0 && tcp) {
        cfg->listen_fd = hccn_rt_proc_mpi_listen(dir, sizeof(dir), tcp > 1);
    } else if (me == 0) {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof(dir), "%s/hccn-mpi-XXXXXX",
                 tmp != NULL && *tmp != '\0' ? tmp : "/tmp");
        if (mkdtemp(dir) == NULL)
            dir[0] = '\0';   /* broadcast as a failure */
    }
    MPI_Bcast(dir, (int)sizeof(dir), MPI_CHAR, 0, MPI_COMM_WORLD);
    if (dir[0] == '\0')
        return hccn_rt_error(HCCN_ERR_IO, "hccn_cluster_create: process 0 "
                             "could not %s", tcp ? "listen on a TCP port "
                             "(HCCN_TRANSPORT=tcp, HCCN_ADDR)" : "make a "
                             "rendezvous directory under TMPDIR or /tmp");
    cfg->rank = me;
    cfg->world = n;
    cfg->made_dir = me == 0 && !tcp;
    snprintf(cfg->dir, sizeof(cfg->dir), "%s", dir);
    return hccn_rt_net_config(cfg, "the rendezvous process 0 broadcast");
}

#else

hccn_status_t hccn_rt_proc_mpi_dir(rt_proc_cfg_t *cfg)
{
    return hccn_rt_error(HCCN_ERR_UNSUPPORTED, "hccn_cluster_create: process "
                         "%d of %d was started by Open MPI, but this libhccn "
                         "was built without MPI (HCCN_MPI=OFF or Open MPI "
                         "not found): set HCCN_RENDEZVOUS to a directory "
                         "every process can reach", cfg->rank, cfg->world);
}

#endif
