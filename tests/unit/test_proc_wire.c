/* The wire of multi-process clusters (runtime/proc_wire.c): values come
 * back exactly (doubles by their bits), strings keep NULL apart from "",
 * pointers into the shared arenas travel as offsets and others as values,
 * a short frame is refused, a frame crosses a socket whole and a closed
 * peer is -1. And the shared-arena init (device_sim/arena.c) allocates
 * inside the given mapping and leaves it mapped. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "device_sim/arena.h"
#include "runtime/proc.h"
#include "runtime/rt.h"

static uint64_t bits(double d)
{
    uint64_t b;
    memcpy(&b, &d, sizeof(b));
    return b;
}

static void test_values(void **state)
{
    (void)state;
    rt_wire_t m = {0};
    const double ds[] = {0.1, -0.0, 1e-300, INFINITY, 0x1.fffffffffffffp+1023};
    hccn_rt_wire_u64(&m, UINT64_MAX - 1);
    for (int i = 0; i < 5; i++)
        hccn_rt_wire_f64(&m, ds[i]);
    hccn_rt_wire_str(&m, NULL);
    hccn_rt_wire_str(&m, "");
    hccn_rt_wire_str(&m, "allreduce #3");
    int arr[3] = {7, -1, 9};
    hccn_rt_wire_bytes(&m, arr, sizeof(arr));
    assert_int_equal(m.bad, 0);

    assert_true(hccn_rt_wire_get_u64(&m) == UINT64_MAX - 1);
    for (int i = 0; i < 5; i++)
        assert_true(bits(hccn_rt_wire_get_f64(&m)) == bits(ds[i]));
    assert_null(hccn_rt_wire_get_str(&m));
    assert_string_equal(hccn_rt_wire_get_str(&m), "");
    assert_string_equal(hccn_rt_wire_get_str(&m), "allreduce #3");
    size_t n;
    const int *back = hccn_rt_wire_get_bytes(&m, &n);
    assert_int_equal(n, sizeof(arr));
    assert_memory_equal(back, arr, sizeof(arr));
    assert_int_equal(m.bad, 0);
    /* Past the end: 0 and marked bad, never a read beyond. */
    assert_true(hccn_rt_wire_get_u64(&m) == 0);
    assert_int_equal(m.bad, 1);
    hccn_rt_wire_free(&m);
}

/* Two processes map the arenas at different addresses: a pointer into
 * them is the same arena byte on the other side. */
static void test_pointers(void **state)
{
    (void)state;
    static char here[4096], there[4096], host_mem;
    rt_proc_t a = {.region = here, .region_len = sizeof(here)};
    rt_proc_t b = {.region = there, .region_len = sizeof(there)};
    rt_wire_t m = {0};
    hccn_rt_wire_ptr(&m, &a, here + 1000);
    hccn_rt_wire_ptr(&m, &a, here + sizeof(here));   /* one past the end */
    hccn_rt_wire_ptr(&m, &a, NULL);
    hccn_rt_wire_ptr(&m, &a, &host_mem);              /* in no arena */
    hccn_rt_wire_ptr(&m, &a, there + 5);              /* a raw value that
                                                         falls in b's arenas */
    assert_ptr_equal(hccn_rt_wire_get_ptr(&m, &b), there + 1000);
    assert_ptr_equal(hccn_rt_wire_get_ptr(&m, &b), there + sizeof(there));
    assert_null(hccn_rt_wire_get_ptr(&m, &b));
    assert_ptr_equal(hccn_rt_wire_get_ptr(&m, &b), &host_mem);
    char *stray = hccn_rt_wire_get_ptr(&m, &b);
    assert_true(stray < there || stray > there + sizeof(there));
    hccn_rt_wire_free(&m);
}

static void test_socket(void **state)
{
    (void)state;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    rt_wire_t out = {0}, in = {0};
    size_t big = 3 << 20;   /* larger than a socket buffer: sent in parts */
    char *blob = malloc(big);
    for (size_t i = 0; i < big; i++)
        blob[i] = (char)(i * 31);
    hccn_rt_wire_u64(&out, RT_FWD_COLL);
    hccn_rt_wire_bytes(&out, blob, big);
    pid_t pid = fork();
    if (pid == 0) {
        close(sv[1]);
        _exit(hccn_rt_wire_send(sv[0], &out) == 0 ? 0 : 1);
    }
    close(sv[0]);
    assert_int_equal(hccn_rt_wire_recv(sv[1], &in), 0);
    assert_true(hccn_rt_wire_get_u64(&in) == RT_FWD_COLL);
    size_t n;
    const void *p = hccn_rt_wire_get_bytes(&in, &n);
    assert_int_equal(n, big);
    assert_memory_equal(p, blob, big);
    /* The sender has exited: end of file. */
    assert_int_equal(hccn_rt_wire_recv(sv[1], &in), -1);
    close(sv[1]);
    free(blob);
    hccn_rt_wire_free(&out);
    hccn_rt_wire_free(&in);
}

static void test_arena_at(void **state)
{
    (void)state;
    size_t len = 1 << 20;
    char *map = mmap(NULL, len, PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(map != MAP_FAILED);
    hccn_sim_arena_t a;
    assert_int_equal(hccn_sim_arena_init_at(&a, map + 4096, 10000), HCCN_OK);
    assert_int_equal(a.size, 10240);   /* rounded up to 256 as any arena */
    void *p;
    assert_int_equal(hccn_sim_arena_alloc(&a, 5000, &p), HCCN_OK);
    assert_ptr_equal(p, map + 4096);
    assert_int_equal(hccn_sim_arena_alloc(&a, 6000, &p), HCCN_ERR_NOMEM);
    hccn_sim_arena_fini(&a);
    map[4096] = 1;   /* still mapped: fini left it to its owner */
    munmap(map, len);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_pointers),
        cmocka_unit_test(test_socket),
        cmocka_unit_test(test_arena_at),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
