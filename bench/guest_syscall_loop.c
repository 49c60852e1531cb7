// Guest syscall floor: COUNT getppid() calls; prints microseconds per call by the guest clock.
// Every guest syscall is a round of ptrace stops for UML: this is the cost under every I2C transfer.
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
int main(int c, char**v){ long n=atol(v[1]); struct timespec a,b; clock_gettime(CLOCK_MONOTONIC,&a);
for(long i=0;i<n;i++) syscall(SYS_getppid); clock_gettime(CLOCK_MONOTONIC,&b);
printf("%.3f us/syscall\n", ((b.tv_sec-a.tv_sec)*1e9+(b.tv_nsec-a.tv_nsec))/1e3/n); }
