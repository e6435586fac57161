/* Data in the brk heap (a small malloc), in an anonymous mmap, and in the bss; writes their
 * addresses (hex: small, mapped, bss) to argv[1]. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
volatile char bss[100000];
int main(int argc, char **argv) {
    if (argc < 2)
        return 2;
    volatile char *small = malloc(100);
    volatile char *mapped = mmap(0, 3 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    small[0] = 1;
    mapped[0] = 1;
    bss[0] = 1;
    FILE *f = fopen(argv[1], "w");
    fprintf(f, "%lx %lx %lx\n", (unsigned long)small, (unsigned long)mapped, (unsigned long)bss);
    fclose(f);
    return 0;
}
