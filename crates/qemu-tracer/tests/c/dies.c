/* Stores 3 M times into a global array, writes the array's address range to argv[1], then
 * dies of the signal named by argv[2]: "abort" (SIGABRT), "segv" (SIGSEGV) or "pipe" (SIGPIPE,
 * writing to a pipe whose reader is gone, as `prog | head` does). QEMU 7.2 calls no plugin
 * callback then: the trace's names must have been written before. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#define N 3000000
volatile uint64_t array[N];
int main(int argc, char **argv) {
    if (argc < 3)
        return 2;
    for (int i = 0; i < N; i++)
        array[i] = i;
    FILE *f = fopen(argv[1], "w");
    fprintf(f, "%lx %lx\n", (unsigned long)(uintptr_t)&array[0], (unsigned long)(uintptr_t)&array[N]);
    fclose(f);
    if (!strcmp(argv[2], "abort"))
        abort();
    if (!strcmp(argv[2], "segv"))
        *(volatile int *)(uintptr_t)16 = 1;
    if (!strcmp(argv[2], "pipe")) {
        int p[2];
        if (pipe(p))
            return 3;
        close(p[0]);
        for (;;)
            if (write(p[1], "x", 1) < 0)
                return 4; /* SIGPIPE was ignored */
    }
    return 5;
}
