/* Single-threaded: a known number of stores to a global array.
 * N_PASSES passes over N elements: N * N_PASSES 8-byte stores into `array`. */
#include <stdio.h>
#include <stdint.h>
#define N 4096
#define N_PASSES 25
volatile uint64_t array[N];
int main(int argc, char **argv) {
    for (int p = 0; p < N_PASSES; p++)
        for (int i = 0; i < N; i++)
            array[i] = (uint64_t)(i + p);
    /* Write the array's address range so the test can count the trace's stores into it. */
    FILE *f = fopen(argc > 1 ? argv[1] : "/dev/stdout", "w");
    fprintf(f, "%lx %lx\n", (unsigned long)(uintptr_t)&array[0], (unsigned long)(uintptr_t)&array[N]);
    fclose(f);
    return 3; /* a known exit status, passed through by the runner */
}
