/* jitloop spins in anonymous executable memory, as JIT-compiled code
 * does: its samples fall in no file mapping, so the recorder looks them
 * up in /tmp/perf-PID.map. The code is placed at a fixed address,
 * JITLOOP_ADDR, so a test can write the map before it runs. */
#include <string.h>
#include <sys/mman.h>

#define JITLOOP_ADDR ((void *)0x200000000000)

int main(void)
{
	static const unsigned char loop[] = {0xeb, 0xfe}; /* jmp . */
	void *p = mmap(JITLOOP_ADDR, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (p != JITLOOP_ADDR)
		return 1;
	memcpy(p, loop, sizeof loop);
	((void (*)(void))p)();
	return 0;
}
