/*
 * The call-count fixture of the --calls tests (cmd/nsprof/calls_test.go),
 * built in the test as a shared library, once with -pg and once with
 * -finstrument-functions. run() calls fix_f 1,000,000 times and fix_g
 * 1,000 times from two callers: 600 from fix_caller_a, 400 from
 * fix_caller_b.
 */
volatile unsigned long fix_sink;

__attribute__((noinline)) void fix_f(unsigned long i)
{
	fix_sink += i;
}

__attribute__((noinline)) void fix_g(unsigned long i)
{
	fix_sink ^= i;
}

__attribute__((noinline)) void fix_caller_a(void)
{
	for (unsigned long i = 0; i < 600; i++)
		fix_g(i);
}

__attribute__((noinline)) void fix_caller_b(void)
{
	for (unsigned long i = 0; i < 400; i++)
		fix_g(i);
}

__attribute__((noinline)) void fix_run(unsigned long nf)
{
	for (unsigned long i = 0; i < nf; i++)
		fix_f(i);
	fix_caller_a();
	fix_caller_b();
	fix_sink++; /* no tail call: -pg would see fix_run's caller call fix_caller_b */
}
