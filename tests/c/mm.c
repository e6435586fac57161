/* A 200x200 double matrix product: the C program of issue 19's I1/D1/LL comparison with
 * Cachegrind (docs/qemu-tracer.md). Build: gcc -O1 -g -o mm mm.c */
#include <stdio.h>
#define N 200
static double a[N][N], b[N][N], c[N][N];
int main(void) {
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) { a[i][j] = i + j; b[i][j] = i - j; }
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int k = 0; k < N; k++) s += a[i][k] * b[k][j];
            c[i][j] = s;
        }
    printf("%f\n", c[N / 2][N / 3]);
    return 0;
}
