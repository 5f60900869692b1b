/*
 * The v-collective schedules with uneven counts, run by the serial
 * interpreter (tests/common/sched_interp.h) with race checks and shuffled
 * step orders, against a reference computed here:
 *
 * - allgatherv and reduce_scatterv of ring and mesh for 1..9 ranks, counts
 *   with zeros, blocks in reverse order with gaps (allgatherv), in place
 *   and out of place;
 * - alltoallv of mesh, pairwise and linear: every rank's own view (built
 *   with only its counts, hierarchy/coll.h) must pair up with the others'
 *   (same transfers, same sizes on both sides); the schedule made of each
 *   rank's steps from its own view must then run and move every block.
 *
 * int32 data; reductions wrap, so any order gives the same sum.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hierarchy/coll.h"
#include "sched_interp.h"
#include "test_util.h"

#define MAXP 9

static int32_t val(int rank, uint64_t idx)
{
    unsigned long long s = (unsigned long long)rank * 1000003ULL + idx;
    return (int32_t)test_rand_next(&s);
}

/* Counts for shape sh: uneven with zeros (0, 1; salt varies them), all
 * zero (2), equal (3). */
static void make_counts(int p, int sh, int salt, uint64_t *cnt)
{
    for (int i = 0; i < p; i++) {
        unsigned long long s = (unsigned long long)(sh * 100 + salt * 17 + i);
        uint64_t h = test_rand_next(&s);
        cnt[i] = sh == 2 ? 0 : sh == 3 ? 6 : h % 3 == 0 ? 0 : h % 11;
    }
}

/* ------------------------------------------- allgatherv, rs-v --- */

static void run_common(const hccn_algo_t *al, hccn_coll_t coll, int p,
                       int sh, int inplace, unsigned long long seed)
{
    uint64_t cnt[MAXP], displs[MAXP], total = 0, before[MAXP];
    make_counts(p, sh, 0, cnt);
    for (int i = 0; i < p; i++) {
        before[i] = total;
        total += cnt[i];
    }
    uint64_t ext = 0;   /* allgatherv: reverse order, a gap after each */
    for (int i = p - 1; i >= 0; i--) {
        displs[i] = ext;
        ext += cnt[i] + (uint64_t)(i % 2);
    }
    int ag = coll == HCCN_COLL_ALLGATHERV;
    hccn_coll_args_t a = {.coll = coll, .nranks = p, .esize = 4,
                          .count = ag ? ext : total, .vcounts = cnt,
                          .vrdispls = ag ? displs : NULL,
                          .vsdispls = ag ? NULL : before};
    hccn_sched_t *s = al->build(&a);
    assert_non_null(s);
    char why[512];
    if (hccn_sched_validate(s, why, sizeof(why)) != 0)
        fail_msg("%s %s p=%d: %s", al->name, hccn_coll_name(coll), p, why);
    int32_t *mem[MAXP];
    sched_interp_bufs_t b[MAXP];
    for (int r = 0; r < p; r++) {
        uint64_t sn = ag ? cnt[r] : total, rn = ag ? ext : cnt[r];
        mem[r] = calloc(sn + rn + 1, 4);
        assert_non_null(mem[r]);
        int32_t *send = mem[r], *recv = mem[r] + sn;
        if (inplace && ag)
            send = recv + displs[r];
        if (inplace && !ag)
            recv = send + before[r];
        for (uint64_t e = 0; e < sn; e++)
            send[e] = val(r, e);
        b[r] = (sched_interp_bufs_t){send, sn * 4, recv, rn * 4};
    }
    sched_interp_opts_t o = {sched_interp_sum_u32, NULL, seed, 1};
    if (sched_interp_run(s, b, &o, why, sizeof(why)) != 0)
        fail_msg("%s %s p=%d shape %d %s: %s", al->name, hccn_coll_name(coll),
                 p, sh, inplace ? "in place" : "", why);
    for (int r = 0; r < p; r++) {
        const int32_t *recv = b[r].recv;
        for (int i = 0; ag && i < p; i++)
            for (uint64_t e = 0; e < cnt[i]; e++)
                if (recv[displs[i] + e] != val(i, e))
                    fail_msg("%s allgatherv p=%d rank %d block %d elem %llu",
                             al->name, p, r, i, (unsigned long long)e);
        for (uint64_t e = 0; !ag && e < cnt[r]; e++) {
            uint32_t want = 0;
            for (int q = 0; q < p; q++)
                want += (uint32_t)val(q, before[r] + e);
            if ((uint32_t)recv[e] != want)
                fail_msg("%s reduce_scatterv p=%d rank %d elem %llu",
                         al->name, p, r, (unsigned long long)e);
        }
    }
    for (int r = 0; r < p; r++)
        free(mem[r]);
    hccn_sched_free(s);
}

static void test_common(void **state)
{
    (void)state;
    const char *algos[] = {"ring", "mesh"};
    const hccn_coll_t colls[] = {HCCN_COLL_ALLGATHERV,
                                 HCCN_COLL_REDUCE_SCATTERV};
    for (int k = 0; k < 2; k++)
        for (int c = 0; c < 2; c++)
            for (int p = 1; p <= MAXP; p++)
                for (int sh = 0; sh < 4; sh++)
                    for (int inplace = 0; inplace < 2; inplace++)
                        run_common(hccn_hier_algo_find(algos[k]), colls[c], p,
                                   sh, inplace,
                                   (unsigned long long)(p + sh + inplace));
}

/* -------------------------------------------------------- alltoallv --- */

/* The schedule whose rank r is rank r of views[r] (steps shared, not
 * copied: free with free_merged). Transfer tables come from views[0]. */
static hccn_sched_t merged(hccn_sched_t **views, int p)
{
    hccn_sched_t m = *views[0];
    m.ranks = calloc((size_t)p, sizeof(*m.ranks));
    assert_non_null(m.ranks);
    for (int r = 0; r < p; r++)
        m.ranks[r] = views[r]->ranks[r];
    for (int r = 0; r < p; r++)
        if (views[r]->scratch_bytes > m.scratch_bytes)
            m.scratch_bytes = views[r]->scratch_bytes;
    return m;
}

static void run_a2av(const hccn_algo_t *al, int p, int sh,
                     unsigned long long seed)
{
    /* M[i][j]: elements i sends to j; displacements reverse with gaps. */
    uint64_t M[MAXP][MAXP], sc[MAXP][MAXP], rc[MAXP][MAXP];
    uint64_t sd[MAXP][MAXP], rd[MAXP][MAXP], sext[MAXP], rext[MAXP];
    for (int i = 0; i < p; i++)
        make_counts(p, sh, i, M[i]);
    for (int r = 0; r < p; r++) {
        sext[r] = rext[r] = 0;
        for (int j = p - 1; j >= 0; j--) {
            sc[r][j] = M[r][j];
            rc[r][j] = M[j][r];
            sd[r][j] = sext[r];
            rd[r][j] = rext[r];
            sext[r] += sc[r][j] + 1;
            rext[r] += rc[r][j] + (uint64_t)(j % 2);
        }
    }
    hccn_sched_t *views[MAXP];
    for (int r = 0; r < p; r++) {
        hccn_coll_args_t a = {.coll = HCCN_COLL_ALLTOALLV, .nranks = p,
                              .esize = 4, .count = sext[r] > rext[r] ? sext[r]
                                                                     : rext[r],
                              .vcounts = sc[r], .vrcounts = rc[r],
                              .vsdispls = sd[r], .vrdispls = rd[r], .me = r};
        views[r] = al->build(&a);
        assert_non_null(views[r]);
        assert_int_equal(views[r]->nxfers, views[0]->nxfers);
    }
    /* The views agree on who talks to whom in every transfer. */
    for (uint32_t x = 0; x < views[0]->nxfers; x++)
        for (int r = 1; r < p; r++) {
            assert_int_equal(views[r]->xfer_send[x].rank,
                             views[0]->xfer_send[x].rank);
            assert_int_equal(views[r]->xfer_recv[x].rank,
                             views[0]->xfer_recv[x].rank);
            assert_int_equal(views[r]->xfer_send[x].step,
                             views[0]->xfer_send[x].step);
            assert_int_equal(views[r]->xfer_recv[x].step,
                             views[0]->xfer_recv[x].step);
        }
    hccn_sched_t m = merged(views, p);
    char why[512];
    if (hccn_sched_validate(&m, why, sizeof(why)) != 0)
        fail_msg("%s alltoallv p=%d: merged views: %s", al->name, p, why);
    int32_t *send[MAXP], *recv[MAXP];
    sched_interp_bufs_t b[MAXP];
    for (int r = 0; r < p; r++) {
        send[r] = calloc(sext[r] + 1, 4);
        recv[r] = calloc(rext[r] + 1, 4);
        assert_true(send[r] && recv[r]);
        for (int j = 0; j < p; j++)
            for (uint64_t e = 0; e < sc[r][j]; e++)
                send[r][sd[r][j] + e] = val(r, (uint64_t)j * 100 + e);
        b[r] = (sched_interp_bufs_t){send[r], sext[r] * 4, recv[r],
                                     rext[r] * 4};
    }
    sched_interp_opts_t o = {sched_interp_sum_u32, NULL, seed, 1};
    if (sched_interp_run(&m, b, &o, why, sizeof(why)) != 0)
        fail_msg("%s alltoallv p=%d shape %d: %s", al->name, p, sh, why);
    for (int r = 0; r < p; r++)
        for (int i = 0; i < p; i++)
            for (uint64_t e = 0; e < rc[r][i]; e++)
                if (recv[r][rd[r][i] + e] != val(i, (uint64_t)r * 100 + e))
                    fail_msg("%s alltoallv p=%d rank %d from %d elem %llu",
                             al->name, p, r, i, (unsigned long long)e);
    for (int r = 0; r < p; r++) {
        free(send[r]);
        free(recv[r]);
        hccn_sched_free(views[r]);
    }
    free(m.ranks);
}

static void test_alltoallv_views(void **state)
{
    (void)state;
    const char *algos[] = {"mesh", "pairwise", "linear"};
    for (int k = 0; k < 3; k++)
        for (int p = 1; p <= MAXP; p++)
            for (int sh = 0; sh < 4; sh++)
                run_a2av(hccn_hier_algo_find(algos[k]), p, sh,
                         (unsigned long long)(p * 4 + sh));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_common),
        cmocka_unit_test(test_alltoallv_views),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
