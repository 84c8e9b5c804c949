/* fixture: a shared library with known function names for the symbol/
 * tests. fixture_static is local: it is in .symtab but not in .dynsym, so
 * it is found only through a debug file, MiniDebugInfo or the unstripped
 * library. */
#define NOINLINE __attribute__((noinline))

volatile int fixture_sink;

static NOINLINE int fixture_static(int x)
{
	for (int i = 0; i < 3; i++)
		fixture_sink += x * i;
	return fixture_sink;
}

NOINLINE int fixture_leaf(int x)
{
	fixture_sink += x;
	return fixture_static(x) + 1;
}

NOINLINE int fixture_middle(int x) { return fixture_leaf(x) + 1; }

NOINLINE int fixture_outer(int x) { return fixture_middle(x) + 1; }
