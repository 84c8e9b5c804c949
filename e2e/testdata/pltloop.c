/* pltloop: spends a good part of its time in the PLT entry of labs, for
 * the end-to-end test of NAME@plt names. Built with -fno-builtin so that
 * labs is called through the PLT rather than inlined. */
#include <stdlib.h>
#include <time.h>

volatile long sink;

int main(int argc, char **argv)
{
	int secs = argc > 1 ? atoi(argv[1]) : 2;
	time_t end = time(NULL) + secs;
	while (time(NULL) < end)
		for (long i = 0; i < 1000000; i++)
			sink += labs(i - 500000);
	return 0;
}
