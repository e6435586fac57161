/* Stores to a global array, then replaces itself with /bin/true: QEMU does not follow execve,
 * so the trace must end, complete, at the execve call. */
#include <stdint.h>
#include <unistd.h>
#define N 1000
volatile uint64_t array[N];
int main(void) {
    for (int i = 0; i < N; i++)
        array[i] = i;
    execl("/bin/true", "true", (char *)0);
    return 9; /* exec failed */
}
