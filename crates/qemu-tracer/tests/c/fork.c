/* The parent forks a child that stores to an array and exits with status 5; the parent checks
 * it. The child is not traced: the trace has the parent alone, with the fork's return value. */
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
volatile uint64_t array[100000];
int main(void) {
    pid_t pid = fork();
    if (pid == 0) {
        for (int i = 0; i < 100000; i++)
            array[i] = i;
        _exit(5);
    }
    int status;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 5 ? 0 : 1;
}
