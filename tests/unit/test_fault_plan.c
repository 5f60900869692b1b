/* The fault plan's index (device_sim/fault_plan.c) against a scan of the
 * whole plan: the slowdown of every device at many times, ties in time
 * (the later in the plan wins) and repeated NPUs included, and the time
 * each NPU fails. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "device_sim/fault_plan.h"
#include "test_util.h"

#define NDEV 13

/* The reference: the factor of dev's latest npu_slow begun by t. */
static double ref_slowdown(const hccn_sim_fault_t *f, int n, int dev, double t)
{
    double x = 1.0, since = -1.0;
    for (int i = 0; i < n; i++)
        if (f[i].kind == HCCN_SIM_FAULT_NPU_SLOW && f[i].npu == dev &&
            f[i].at <= t && f[i].at >= since) {
            x = f[i].factor;
            since = f[i].at;
        }
    return x;
}

static double ref_fail_at(const hccn_sim_fault_t *f, int n, int dev)
{
    double at = INFINITY;
    for (int i = 0; i < n; i++)
        if (f[i].kind == HCCN_SIM_FAULT_NPU_FAIL && f[i].npu == dev &&
            f[i].at < at)
            at = f[i].at;
    return at;
}

static void check_plan(const hccn_sim_fault_t *f, int n)
{
    hccn_sim_fplan_t fp;
    assert_int_equal(hccn_sim_fplan_build(&fp, f, n, NDEV), 0);
    for (int d = -1; d <= NDEV; d++) {
        /* Out of range devices are never slowed and never fail. */
        int in = d >= 0 && d < NDEV;
        assert_true(hccn_sim_fplan_fail_at(&fp, d) ==
                    (in ? ref_fail_at(f, n, d) : INFINITY));
        for (int k = 0; k <= 24; k++) {
            double t = k * 0.5;      /* on and between the plan's times */
            assert_true(hccn_sim_fplan_slowdown(&fp, d, t) ==
                        (in ? ref_slowdown(f, n, d, t) : 1.0));
        }
    }
    hccn_sim_fplan_free(&fp);
}

static void test_random_plans(void **state)
{
    (void)state;
    unsigned long long seed = 7;
    check_plan(NULL, 0);
    for (int round = 0; round < 200; round++) {
        int n = (int)(test_rand_next(&seed) % 64);
        hccn_sim_fault_t f[64];
        for (int i = 0; i < n; i++) {
            unsigned long long r = test_rand_next(&seed);
            f[i] = (hccn_sim_fault_t){
                .kind = (hccn_sim_fault_kind_t)(r % 4),
                .npu = (int)((r >> 8) % NDEV), .link = -1,
                .at = (double)((r >> 16) % 12),   /* whole seconds: ties */
                .factor = 1.0 + (double)((r >> 24) % 9)};
        }
        check_plan(f, n);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_plans),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
