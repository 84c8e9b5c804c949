/* The host program of the --calls fixture: built without instrumentation
 * (or with -pg, as a program linked with -pg), it calls libfixture.so's
 * fix_run (fixture.c) from fix_host. An argument sets the f loop's count
 * (default 1,000,000). */
#include <stdlib.h>

void fix_run(unsigned long nf);

volatile int fix_host_sink;

/* fix_host is a function of the executable with a frame of its own: gcc
 * gives main none even with -pg, so that no mcount sees main's caller. */
__attribute__((noinline)) void fix_host(unsigned long nf)
{
	fix_run(nf);
	fix_host_sink++; /* after the call: not a tail call */
}

int main(int argc, char **argv)
{
	fix_host(argc > 1 ? strtoul(argv[1], NULL, 10) : 1000000);
	return 0;
}
