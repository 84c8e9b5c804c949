/*
 * The fixture of the gmon.out export test (cmd/nsprof/gmon_test.go),
 * built there as a shared library with -pg. gm_run calls gm_f 1,000,000
 * times and gm_g 1,000 times from two callers (600 from gm_caller_a, 400
 * from gm_caller_b), then spins in gm_spin for spin_ms milliseconds of
 * the thread's CPU time: the function the CPU samples land on.
 */
#include <time.h>

volatile unsigned long gm_sink;

__attribute__((noinline)) void gm_f(unsigned long i)
{
	gm_sink += i;
}

__attribute__((noinline)) void gm_g(unsigned long i)
{
	gm_sink ^= i;
}

__attribute__((noinline)) void gm_caller_a(void)
{
	for (unsigned long i = 0; i < 600; i++)
		gm_g(i);
}

__attribute__((noinline)) void gm_caller_b(void)
{
	for (unsigned long i = 0; i < 400; i++)
		gm_g(i);
}

static long cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* gm_spin computes until the thread has used spin_ms more milliseconds
 * of CPU time, reading the clock every million steps only. */
__attribute__((noinline)) void gm_spin(long spin_ms)
{
	long end = cpu_ms() + spin_ms;
	do {
		for (unsigned long i = 0; i < 1000000; i++)
			gm_sink = gm_sink * 6364136223846793005UL + i;
	} while (cpu_ms() < end);
}

__attribute__((noinline)) void gm_run(unsigned long nf, long spin_ms)
{
	for (unsigned long i = 0; i < nf; i++)
		gm_f(i);
	gm_caller_a();
	gm_caller_b();
	gm_spin(spin_ms);
	gm_sink++; /* no tail call */
}
