/* The host program of the gmon.out export fixture: built with -fPIE, so
 * that it too is loaded at a random base, and not instrumented. It spins
 * in host_spin for 150 ms of CPU time, then calls libgmonfix.so's gm_run
 * (gmonfix.c), which the dynamic loader maps at a random base. */
#include <time.h>

void gm_run(unsigned long nf, long spin_ms);

volatile unsigned long host_sink;

static long cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

__attribute__((noinline)) void host_spin(long spin_ms)
{
	long end = cpu_ms() + spin_ms;
	do {
		for (unsigned long i = 0; i < 1000000; i++)
			host_sink = host_sink * 6364136223846793005UL + i;
	} while (cpu_ms() < end);
}

int main(void)
{
	host_spin(150);
	gm_run(1000000, 300);
	return 0;
}
