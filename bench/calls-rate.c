/* Calls fix_f (libfixture.so) RATE times a second for SECS seconds, in
 * bursts each millisecond, then prints its own CPU time. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <sys/resource.h>
void fix_f(unsigned long i);
int main(int argc, char **argv) {
	long rate = argc > 1 ? atol(argv[1]) : 340000, secs = argc > 2 ? atol(argv[2]) : 10;
	struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);
	long per_ms = rate / 1000, n = 0;
	for (long ms = 0; ms < secs * 1000; ms++) {
		for (long i = 0; i < per_ms; i++) fix_f(n++);
		t.tv_nsec += 1000000; if (t.tv_nsec >= 1000000000) { t.tv_nsec -= 1000000000; t.tv_sec++; }
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL);
	}
	struct rusage ru; getrusage(RUSAGE_SELF, &ru);
	printf("calls=%ld work_cpu_s=%.3f\n", n, ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
	return 0;
}
