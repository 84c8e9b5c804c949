/* execspin.c: a program built twice (-DSPIN=spin_first and
 * -DSPIN=spin_second, without PIE so that both have their code at the
 * same addresses) that spins in SPIN for SECONDS of its own CPU time and
 * then, when given a program, execs it: the second's samples take its
 * addresses over, and the first's must keep their own names
 * (e2e/exec_test.go). CPU time, not the clock's: on a loaded machine the
 * first program got 270 of 1078 samples in its 0.4 s of wall time. */
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

volatile unsigned long sink;

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

__attribute__((noinline)) void SPIN(double seconds)
{
	double end = now() + seconds;
	while (now() < end)
		for (int i = 0; i < 100000; i++) /* the clock is a system call */
			sink += (unsigned long)i * i;
}

int main(int argc, char **argv)
{
	SPIN(argc > 1 ? atof(argv[1]) : 0.5);
	if (argc > 2)
		execv(argv[2], argv + 2);
	return 0;
}
