/* Communicator placements for the hierarchy tests (see test_views.h). */
#include "test_views.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

void test_make_view(test_view_t *w, const int *sizes, int nnodes, int dealt)
{
    int p = 0, used[TEST_VIEW_MAXP] = {0};
    for (int n = 0; n < nnodes; n++)
        p += sizes[n];
    for (int r = 0, n = 0; r < p; r++) {
        if (dealt)
            while (used[n % nnodes] == sizes[n % nnodes])
                n++;
        else
            while (used[n] == sizes[n])
                n++;
        int nd = dealt ? n++ % nnodes : n;
        w->node[r] = nd;
        w->local[r] = used[nd]++;
    }
    w->v = (hccn_hier_view_t){p, w->node, w->local, nnodes, NULL, 0, 0, 0};
    int len = snprintf(w->name, sizeof(w->name), "%s", dealt ? "dealt " : "");
    for (int n = 0; n < nnodes && len < (int)sizeof(w->name) - 4; n++)
        len += snprintf(w->name + len, sizeof(w->name) - (size_t)len, "%s%d",
                        n ? "+" : "", sizes[n]);
}

void test_even_view(test_view_t *w, int N, int L)
{
    int sizes[TEST_VIEW_MAXP];
    for (int n = 0; n < N; n++)
        sizes[n] = L;
    test_make_view(w, sizes, N, 0);
}

void test_place(test_place_t *t, const hccn_sim_topo_t *topo, int p)
{
    assert_true(p >= 1 && p <= TEST_VIEW_MAXP);
    for (int r = 0; r < p; r++)
        t->world[r] = r;
    t->pl = (hccn_cost_place_t){topo, t->world};
    assert_int_equal(hccn_hier_cost_view(&t->pl, p, t->node, t->local,
                                         &t->v), 0);
}
