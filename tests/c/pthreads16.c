/* Sixteen threads (the main thread and 15 it creates) relax a shared 1-D grid: each owns a
 * slice, reads its neighbours' edge values, and all meet at a pthread barrier after every
 * sweep; a mutex-protected sum at the end. The fused-replay figure of issue 19 (16 threads on
 * numachine with 16 processors): `pmusim run --record -p 16 -- tests/c/pthreads16 [SWEEPS]`.
 * Build: gcc -O1 -pthread -o pthreads16 pthreads16.c */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 16
#define CELLS (1 << 16)

static double grid[2][CELLS];
static pthread_barrier_t barrier;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static double total;
static int sweeps = 40;

static void *relax(void *arg) {
    long me = (long)arg;
    long lo = me * (CELLS / THREADS), hi = lo + CELLS / THREADS;
    for (int s = 0; s < sweeps; s++) {
        const double *in = grid[s & 1];
        double *out = grid[(s + 1) & 1];
        for (long i = lo; i < hi; i++) {
            double l = in[i == 0 ? CELLS - 1 : i - 1], r = in[i == CELLS - 1 ? 0 : i + 1];
            out[i] = 0.25 * l + 0.5 * in[i] + 0.25 * r;
        }
        pthread_barrier_wait(&barrier);
    }
    double sum = 0;
    for (long i = lo; i < hi; i++)
        sum += grid[sweeps & 1][i];
    pthread_mutex_lock(&lock);
    total += sum;
    pthread_mutex_unlock(&lock);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1)
        sweeps = atoi(argv[1]);
    for (long i = 0; i < CELLS; i++)
        grid[0][i] = (double)(i % 97);
    pthread_barrier_init(&barrier, NULL, THREADS);
    pthread_t t[THREADS];
    for (long k = 1; k < THREADS; k++)
        pthread_create(&t[k], NULL, relax, (void *)k);
    relax((void *)0);
    for (long k = 1; k < THREADS; k++)
        pthread_join(t[k], NULL);
    /* The sum is conserved by the stencil (periodic grid). */
    double want = 0;
    for (long i = 0; i < CELLS; i++)
        want += (double)(i % 97);
    printf("%.1f %.1f\n", total, want);
    return total > want - 1e-3 * want && total < want + 1e-3 * want ? 0 : 1;
}
