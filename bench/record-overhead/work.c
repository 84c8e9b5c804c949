/* work: a fixed amount of CPU-bound work with a known call chain, for
 * bench/record-overhead.sh. Unlike internal/testutils/fixtures/callchain.c,
 * which runs for a fixed time, it runs ITERATIONS calls of
 *
 *   work_thread -> work_outer -> work_middle -> work_inner -> work_leaf
 *
 * in each of THREADS threads (the main thread waits), so a profiler that
 * steals CPU time makes it take longer. It prints the time it measured
 * itself, from before creating the threads to after joining them, so the
 * profiler's own startup and teardown are excluded:
 *
 *   work_wall_s=1.234567 work_cpu_s=2.456789 iterations=N threads=T
 *
 * work_cpu_s is the process's user+system CPU time (getrusage RUSAGE_SELF).
 *
 * Usage: work ITERATIONS [THREADS]
 * Build: gcc -O1 -g -fno-omit-frame-pointer -fno-inline -pthread */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

static long iterations;
volatile unsigned long sink;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Not a leaf, so GCC gives work_leaf a frame-pointer prologue (see
 * callchain.c). */
NOINLINE unsigned long work_mix(unsigned long x) { return x ^ (x >> 31); }

NOINLINE unsigned long work_leaf(unsigned long x)
{
	for (int i = 0; i < 20000; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	return work_mix(x);
}

NOINLINE unsigned long work_inner(unsigned long x) { return work_leaf(x) + 1; }
NOINLINE unsigned long work_middle(unsigned long x) { return work_inner(x) + 1; }

NOINLINE unsigned long work_outer(long n)
{
	unsigned long x = 1;
	for (long i = 0; i < n; i++)
		x = work_middle(x);
	return x;
}

NOINLINE void *work_thread(void *arg)
{
	(void)arg;
	sink += work_outer(iterations);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: work ITERATIONS [THREADS]\n");
		return 2;
	}
	iterations = atol(argv[1]);
	int nthreads = argc > 2 ? atoi(argv[2]) : 1;
	if (nthreads < 1 || nthreads > 64)
		nthreads = 1;
	pthread_t th[64];
	double t0 = now();
	for (int i = 0; i < nthreads; i++)
		pthread_create(&th[i], NULL, work_thread, NULL);
	for (int i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	double wall = now() - t0;
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
		     ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
	printf("work_wall_s=%.6f work_cpu_s=%.6f iterations=%ld threads=%d\n", wall, cpu, iterations, nthreads);
	return 0;
}
