// klass: a C++ shared library whose symbols must demangle to
// ns::Klass::method(int) and ns::free_function(char const*, long).
#define NOINLINE __attribute__((noinline))

namespace ns {
class Klass {
public:
	NOINLINE int method(int x);
	int v = 0;
};

NOINLINE int Klass::method(int x) { return v += x; }

NOINLINE long free_function(const char *s, long n) { return s[0] + n; }
} // namespace ns

extern "C" int klass_entry(int x)
{
	ns::Klass k;
	return k.method(x) + (int)ns::free_function("a", x);
}
