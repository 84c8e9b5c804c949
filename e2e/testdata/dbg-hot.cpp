// dbg-hot.cpp: the C++ variant of dbg-hot.c; its functions must be shown
// demangled, as hot::Burner::leaf(long) and so on.
#include <cstdlib>
#include <ctime>

volatile double dbg_sink;

namespace hot {
class Burner {
public:
	__attribute__((noinline)) double step(long i);
	__attribute__((noinline)) double leaf(long n);
	__attribute__((noinline)) double middle(long n);
	double bias = 3;
};

double Burner::step(long i) { return (double)i / ((double)i + bias); }

double Burner::leaf(long n) {
	double s = 0;
	for (long i = 1; i < n; i++)
		s += step(i);
	return s;
}

double Burner::middle(long n) { return leaf(n) * 2.0; }

__attribute__((noinline)) void outer(Burner &b) { dbg_sink = b.middle(100000); }
} // namespace hot

int main(int argc, char **argv) {
	std::time_t end = std::time(nullptr) + (argc > 1 ? std::atoi(argv[1]) : 2);
	hot::Burner b;
	while (std::time(nullptr) < end)
		hot::outer(b);
	return 0;
}
