/* dbg-hot: burns CPU in dbg_hot_leaf <- dbg_hot_middle <- dbg_hot_outer <-
 * main for argv[1] seconds. Built static so it runs alone in a chroot, and
 * in debug-info variants (stripped with a debuglink or a build-id debug
 * file, MiniDebugInfo, debuginfod) by e2e/debuginfo_test.go. dbg_hot_leaf
 * calls dbg_hot_step so GCC 12 keeps its frame-pointer prologue. */
#include <stdlib.h>
#include <time.h>

volatile double dbg_sink;

__attribute__((noinline)) double dbg_hot_step(long i) { return (double)i / (double)(i + 3); }

__attribute__((noinline)) double dbg_hot_leaf(long n) {
	double s = 0;
	for (long i = 1; i < n; i++)
		s += dbg_hot_step(i);
	return s;
}

__attribute__((noinline)) double dbg_hot_middle(long n) { return dbg_hot_leaf(n) * 2.0; }

__attribute__((noinline)) void dbg_hot_outer(void) { dbg_sink = dbg_hot_middle(100000); }

int main(int argc, char **argv) {
	time_t end = time(NULL) + (argc > 1 ? atoi(argv[1]) : 2);
	while (time(NULL) < end)
		dbg_hot_outer();
	return 0;
}
