/* Instruction fetch: `sweep` is 32 KiB of straight-line code (one-byte `nop`s), twice the
 * 16 KiB L1 I-cache of the default machine, called argv[1] times. Each call runs through all
 * 1024 of its 32-byte lines, every one a miss in a direct-mapped (or LRU) cache of half the
 * size. Writes the function's address range to argv[2]. */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>

extern void sweep(void);
extern char sweep_end[];
__asm__(".text\n"
        ".globl sweep\n"
        ".type sweep, @function\n"
        ".p2align 6\n"
        "sweep:\n"
        ".rept 32767\n"
        "nop\n"
        ".endr\n"
        "ret\n"
        ".globl sweep_end\n"
        "sweep_end:\n"
        ".size sweep, . - sweep\n");

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1;
    for (int i = 0; i < n; i++)
        sweep();
    FILE *f = fopen(argc > 2 ? argv[2] : "/dev/stdout", "w");
    fprintf(f, "%lx %lx\n", (unsigned long)(uintptr_t)sweep, (unsigned long)(uintptr_t)sweep_end);
    fclose(f);
    return 0;
}
