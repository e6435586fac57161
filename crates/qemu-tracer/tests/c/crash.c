/* Stores 3 M times into a global array, then dies of SIGABRT: QEMU 7.2 calls no plugin
 * callback then, so the trace must still be valid, up to its last written chunk. */
#include <stdint.h>
#include <stdlib.h>
#define N 3000000
volatile uint64_t array[N];
int main(void) {
    for (int i = 0; i < N; i++)
        array[i] = i;
    abort();
}
