/* Per-line attribution (`--cachegrind-out` with DWARF line information): `sum` reads the N
 * elements of `a` once per call and is called argv[1] times, so the source line marked
 * LINE_LOAD executes N * argv[1] loads. Compiled with -g. */
#include <stdio.h>
#include <stdlib.h>
#define N 1000
long a[N];
__attribute__((noinline)) long sum(void) {
    long s = 0;
    for (int i = 0; i < N; i++)
        s += a[i]; /* LINE_LOAD */
    return s;
}
int main(int argc, char **argv) {
    int k = argc > 1 ? atoi(argv[1]) : 1;
    long t = 0;
    for (int j = 0; j < k; j++) {
        a[j] += j; /* a store between calls: each call reads again */
        t += sum();
    }
    printf("%ld\n", t);
    return 0;
}
