/* jitloop spins in anonymous executable memory, as JIT-compiled code
 * does: its samples fall in no file mapping, so the recorder looks them
 * up in /tmp/perf-PID.map. */
#include <string.h>
#include <sys/mman.h>

int main(void)
{
	static const unsigned char loop[] = {0xeb, 0xfe}; /* jmp . */
	void *p = mmap(0, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 1;
	memcpy(p, loop, sizeof loop);
	((void (*)(void))p)();
	return 0;
}
