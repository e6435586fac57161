/* 20 threads created and joined one after another (QEMU reuses their vCPU index), then 3
 * threads that spin until the process ends: main exits without joining them, so exit_group
 * stops them and only the at-exit callback can flush their records. */
#include <pthread.h>
#include <stdint.h>
#include <time.h>
#include <stdlib.h>
volatile uint64_t flag, sink[64];
int started; /* spinners that run, so that main exits only once all three do */
static void *short_lived(void *arg) {
    for (int i = 0; i < 1000; i++)
        sink[(uintptr_t)arg] += i;
    return NULL;
}
static void *spinner(void *arg) {
    (void)arg;
    __atomic_add_fetch(&started, 1, __ATOMIC_SEQ_CST);
    while (!flag)
        ;
    return NULL;
}
int main(void) {
    pthread_t t;
    for (uintptr_t i = 0; i < 20; i++) {
        pthread_create(&t, NULL, short_lived, (void *)i);
        pthread_join(t, NULL);
    }
    for (int i = 0; i < 3; i++)
        pthread_create(&t, NULL, spinner, NULL);
    struct timespec ts = {0, 10 * 1000 * 1000};
    while (__atomic_load_n(&started, __ATOMIC_SEQ_CST) < 3)
        nanosleep(&ts, NULL);
    nanosleep(&ts, NULL);
    exit(0);
}
