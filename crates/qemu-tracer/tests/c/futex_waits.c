/* Futex waits that end in each way, for the replay's pairing (issue 19, item 6):
 *   - two raw FUTEX_WAIT calls on `word` that time out (-110) while another thread keeps
 *     making futex wakes on another address (`other`), which wake nobody;
 *   - two raw FUTEX_WAIT calls on `word` with a wrong expected value: EAGAIN (-11) at once;
 *   - a pthread_cond_timedwait on `c` that nobody signals: times out;
 *   - a pthread_cond_wait on `c` that the main thread signals: woken.
 * Writes "word cond_start cond_end" (hex) to argv[1]. Exits 10+ on an unexpected result. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int word;
static int other;
static atomic_int stop;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int waiting, ready;

static long futex(int *addr, int op, int val, const struct timespec *ts) {
    return syscall(SYS_futex, addr, op, val, ts, 0, 0);
}

static void *waker(void *arg) {
    (void)arg;
    while (!atomic_load(&stop)) {
        futex(&other, FUTEX_WAKE_PRIVATE, 1, 0);
        usleep(500);
    }
    return 0;
}

static void *consumer(void *arg) {
    (void)arg;
    pthread_mutex_lock(&m);
    waiting = 1;
    while (!ready)
        pthread_cond_wait(&c, &m);
    pthread_mutex_unlock(&m);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2)
        return 2;
    FILE *f = fopen(argv[1], "w");
    fprintf(f, "%lx %lx %lx\n", (unsigned long)&word, (unsigned long)&c,
            (unsigned long)&c + sizeof c);
    fclose(f);
    pthread_t b, k;
    pthread_create(&b, 0, waker, 0);
    struct timespec ts = {0, 20 * 1000 * 1000};
    for (int i = 0; i < 2; i++)
        if (futex(&word, FUTEX_WAIT_PRIVATE, 0, &ts) != -1 || errno != ETIMEDOUT)
            return 10;
    for (int i = 0; i < 2; i++)
        if (futex(&word, FUTEX_WAIT_PRIVATE, 1, 0) != -1 || errno != EAGAIN)
            return 11;
    struct timespec abs;
    clock_gettime(CLOCK_REALTIME, &abs);
    abs.tv_nsec += 20 * 1000 * 1000;
    if (abs.tv_nsec >= 1000000000) {
        abs.tv_sec += 1;
        abs.tv_nsec -= 1000000000;
    }
    pthread_mutex_lock(&m);
    int r = pthread_cond_timedwait(&c, &m, &abs);
    pthread_mutex_unlock(&m);
    if (r != ETIMEDOUT)
        return 12;
    pthread_create(&k, 0, consumer, 0);
    for (;;) {
        pthread_mutex_lock(&m);
        int w = waiting;
        pthread_mutex_unlock(&m);
        if (w)
            break;
        usleep(1000);
    }
    /* The consumer released the mutex inside pthread_cond_wait; give it time to block. */
    usleep(100 * 1000);
    pthread_mutex_lock(&m);
    ready = 1;
    pthread_cond_signal(&c);
    pthread_mutex_unlock(&m);
    pthread_join(k, 0);
    atomic_store(&stop, 1);
    pthread_join(b, 0);
    return 0;
}
