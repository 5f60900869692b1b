#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

const char *test_path(const char *rel)
{
    static char buf[4096];
    const char *root = getenv("HCCN_SOURCE_DIR");
#ifdef HCCN_SOURCE_DIR
    if (root == NULL)
        root = HCCN_SOURCE_DIR;
#endif
    if (root == NULL)
        root = ".";
    snprintf(buf, sizeof(buf), "%s/%s", root, rel);
    return buf;
}

char *test_read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s != NULL && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s != NULL)
        s[n] = '\0';
    fclose(f);
    return s;
}

double test_rel_diff(double a, double b)
{
    double m = fmax(fabs(a), fabs(b));
    return m == 0.0 ? 0.0 : fabs(a - b) / m;
}

unsigned long long test_rand_next(unsigned long long *state)
{
    unsigned long long z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

unsigned long long test_rand_at(unsigned long long seed, int rank,
                                unsigned long long idx)
{
    unsigned long long s = seed ^ ((unsigned long long)rank *
                                   0xd1342543de82ef95ULL) ^
                           (idx * 0xa0761d6478bd642fULL);
    return test_rand_next(&s);
}
