/*
 * The chunk pool of lean engines (device_sim/pool.c): pieces are aligned,
 * never overlap, survive other pieces being freed and taken, pieces larger
 * than a chunk work, and once every piece of a wave is freed the next wave
 * of the same sizes maps no new memory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "device_sim/pool.h"

#define NP 600

static size_t piece_size(int i)
{
    uint32_t x = (uint32_t)i * 2654435761u;
    return 1 + (x >> 8) % 200000;       /* 1 B .. 200 kB */
}

static void fill(unsigned char *p, size_t n, int i)
{
    memset(p, (unsigned char)(i * 7 + 1), n);
}

static void check(const unsigned char *p, size_t n, int i)
{
    unsigned char want = (unsigned char)(i * 7 + 1);
    for (size_t k = 0; k < n; k++)
        if (p[k] != want)
            fail_msg("piece %d (%zu bytes): byte %zu is %u, want %u", i, n,
                     k, p[k], want);
}

static void wave(hccn_sim_pool_t *pool, unsigned char **p)
{
    for (int i = 0; i < NP; i++) {
        p[i] = hccn_sim_pool_alloc(pool, piece_size(i));
        assert_non_null(p[i]);
        assert_int_equal((uintptr_t)p[i] % 64, 0);
        fill(p[i], piece_size(i), i);
    }
}

static void test_pieces(void **state)
{
    (void)state;
    static unsigned char *p[NP];
    hccn_sim_pool_t *pool = hccn_sim_pool_create();
    assert_non_null(pool);
    wave(pool, p);
    size_t total = 0;
    for (int i = 0; i < NP; i++) {
        check(p[i], piece_size(i), i);   /* no later piece wrote over it */
        total += piece_size(i);
    }
    size_t mapped = hccn_sim_pool_mapped(pool);
    assert_true(mapped >= total);

    /* Free the odd pieces, take them again, the even ones are intact. */
    for (int i = 1; i < NP; i += 2)
        hccn_sim_pool_free(pool, p[i]);
    for (int i = 1; i < NP; i += 2) {
        p[i] = hccn_sim_pool_alloc(pool, piece_size(i));
        assert_non_null(p[i]);
        fill(p[i], piece_size(i), i);
    }
    for (int i = 0; i < NP; i++)
        check(p[i], piece_size(i), i);

    /* A piece larger than a chunk. */
    size_t big = (size_t)80 << 20;
    unsigned char *q = hccn_sim_pool_alloc(pool, big);
    assert_non_null(q);
    q[0] = 1;
    q[big - 1] = 2;
    assert_true(hccn_sim_pool_mapped(pool) >= mapped + big);
    hccn_sim_pool_free(pool, q);

    /* Everything back: the same wave again maps nothing new. */
    for (int i = 0; i < NP; i++)
        hccn_sim_pool_free(pool, p[i]);
    size_t before = hccn_sim_pool_mapped(pool);
    wave(pool, p);
    for (int i = 0; i < NP; i++)
        check(p[i], piece_size(i), i);
    assert_true(hccn_sim_pool_mapped(pool) == before);
    hccn_sim_pool_free(pool, NULL);
    hccn_sim_pool_destroy(pool);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pieces),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
