/* 4 threads increment falsely shared counters (adjacent words of one cache line);
 * each thread does ITERS load+store pairs on its own counter, then all join. */
#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#define THREADS 4
#define ITERS 100000
volatile uint64_t counters[THREADS];
pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
pthread_barrier_t start; /* all threads wait here: futex waits and a wake */
uint64_t total;
static void *work(void *arg) {
    uintptr_t me = (uintptr_t)arg;
    pthread_barrier_wait(&start);
    for (int i = 0; i < ITERS; i++)
        counters[me]++;
    pthread_mutex_lock(&lock);
    total += counters[me];
    pthread_mutex_unlock(&lock);
    return NULL;
}
int main(int argc, char **argv) {
    pthread_t t[THREADS];
    pthread_barrier_init(&start, NULL, THREADS);
    for (uintptr_t i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, work, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    FILE *f = fopen(argc > 1 ? argv[1] : "/dev/stdout", "w");
    fprintf(f, "%lx %lx %lu\n", (unsigned long)(uintptr_t)&counters[0],
           (unsigned long)(uintptr_t)&counters[THREADS], (unsigned long)total);
    fclose(f);
    return total == (uint64_t)THREADS * ITERS ? 0 : 1;
}
