/* An OpenMP program on sixteen threads: a dot product with a reduction and a stencil sweep
 * over a shared array, several parallel regions (libgomp's team of 16 threads: the main
 * thread and 15 workers, reused from region to region). The fused-replay figure of issue 19:
 * `OMP_NUM_THREADS=16 OMP_WAIT_POLICY=passive pmusim run --record -p 16 -- tests/c/omp16 [N]`
 * (passive: waiting threads sleep in futex waits instead of spinning, as a traced spin would
 * be millions of loads). Build: gcc -O1 -fopenmp -o omp16 omp16.c */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define CELLS (1 << 16)
static double a[CELLS], b[CELLS];

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 20;
    for (int i = 0; i < CELLS; i++)
        a[i] = (double)(i % 89);
    double dot = 0;
    for (int r = 0; r < rounds; r++) {
#pragma omp parallel for schedule(static)
        for (int i = 1; i < CELLS - 1; i++)
            b[i] = 0.25 * a[i - 1] + 0.5 * a[i] + 0.25 * a[i + 1];
#pragma omp parallel for schedule(static) reduction(+ : dot)
        for (int i = 1; i < CELLS - 1; i++) {
            a[i] = b[i];
            dot += a[i] * 1e-6;
        }
    }
    printf("%d threads, %.3f\n", omp_get_max_threads(), dot);
    return dot > 0 ? 0 : 1;
}
