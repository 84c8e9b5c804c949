/* A host program of the fixture for recordings that attach to it (-p):
 * it sleeps the milliseconds its argument gives (default 1500), for the
 * recorder to place its probes, then calls fix_run(1000000) once, as
 * main.c does, and exits. */
#include <stdlib.h>
#include <time.h>

void fix_run(unsigned long nf);

volatile int fix_host_sink;

__attribute__((noinline)) void fix_host(unsigned long nf)
{
	fix_run(nf);
	fix_host_sink++;
}

int main(int argc, char **argv)
{
	long ms = argc > 1 ? strtol(argv[1], NULL, 10) : 1500;
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	while (nanosleep(&ts, &ts) != 0)
		;
	fix_host(1000000);
	return 0;
}
