/* pltcalls: calls libc functions through the PLT, for the symbol/ tests of
 * NAME@plt entries. Taking the address of atexit puts its PLT entry in
 * .plt.got (its GOT slot is filled by GLOB_DAT) in non-PIE builds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int (*volatile plt_fp)(const char *) = puts;

int main(int argc, char **argv)
{
	const char *s = getenv("PLTCALLS");
	long n = strtol(s ? s : "3", NULL, 10);
	char buf[32];
	snprintf(buf, sizeof buf, "%ld", n);
	plt_fp(buf);
	return (int)strlen(buf) + puts(buf) - 4 + argc - 1;
}
