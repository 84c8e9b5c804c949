/* The host program of the --calls fixture: not instrumented itself, it
 * calls libfixture.so's fix_run (fixture.c). An argument repeats the
 * f loop's count (default 1,000,000). */
#include <stdlib.h>

void fix_run(unsigned long nf);

int main(int argc, char **argv)
{
	fix_run(argc > 1 ? strtoul(argv[1], NULL, 10) : 1000000);
	return argc > 2; /* after the call: not a tail call */
}
