/* jittramp.c: a JIT as Python 3.13's -X perf_jit is one, for
 * e2e/jitdump_test.go. It copies a trampoline that keeps no frame pointer
 * (sub $8,%rsp; call *%rcx; add $8,%rsp; ret: Python runs each of its
 * functions through one) into anonymous memory, describes it in a jitdump
 * (/tmp/jit-PID.dump, mapped executable for a profiler to find): an
 * unwinding record holding its .eh_frame, then its code-load record,
 * written straight to the file, then spins in work() called through it
 * from run() for SECONDS of CPU time. With a second argument "late" the
 * two records are written only once work() is done, as Python's
 * buffered dump describes its last functions only at exit; "late-exec"
 * then execs /bin/true. A stack
 * unwound from its call
 * frame information reads main, run, jit::trampoline, work; the
 * frame-pointer walk an unwinder falls back on where no file maps the
 * code stops at the trampoline (this file is built without frame
 * pointers, as Python is).
 *
 * The layouts are perf's (tools/perf/util/jitdump.h); the .eh_frame is
 * the one Python writes: a CIE (augmentation zR, pc-relative sdata4
 * addresses, CFA rsp+8, return address at CFA-8) and an FDE (its pc_begin
 * relative to the bytes placed after the code rounded up to 16 bytes: CFA
 * rsp+16 from offset 4, rsp+8 from offset 10). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>

static const unsigned char trampoline[] = {
	0x48, 0x83, 0xec, 0x08, /* sub $8,%rsp */
	0xff, 0xd1,             /* call *%rcx */
	0x48, 0x83, 0xc4, 0x08, /* add $8,%rsp */
	0xc3,                   /* ret */
};

static const unsigned char eh_frame[48] = {
	/* CIE: length 20, id 0, version 1, "zR", code align 1, data align
	 * -8, return address register 16, augmentation data: pcrel|sdata4;
	 * def_cfa rsp+8, offset r16 at cfa-8, padding. */
	0x14, 0, 0, 0, 0, 0, 0, 0, 1, 'z', 'R', 0, 1, 0x78, 0x10, 1, 0x1b,
	0x0c, 0x07, 0x08, 0x90, 0x01, 0, 0,
	/* FDE: length 20, CIE pointer 28, pc_begin -48, pc_range 11, no
	 * augmentation data; advance 4, def_cfa_offset 16, advance 6,
	 * def_cfa_offset 8, padding. */
	0x14, 0, 0, 0, 0x1c, 0, 0, 0, 0xd0, 0xff, 0xff, 0xff, 11, 0, 0, 0, 0,
	0x44, 0x0e, 0x10, 0x46, 0x0e, 0x08, 0,
};

/* The .eh_frame_hdr perf inject places after the .eh_frame: version 1,
 * pcrel|sdata4 pointer, udata4 count, datarel|sdata4 table; one entry. */
static const unsigned char eh_frame_hdr[20] = {
	1, 0x1b, 0x03, 0x3b, 0xcc, 0xff, 0xff, 0xff, 1, 0, 0, 0,
	0xc0, 0xff, 0xff, 0xff, 0xe8, 0xff, 0xff, 0xff,
};

static uint64_t timestamp(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static double cpu_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static void put(int fd, const void *p, size_t n)
{
	if (write(fd, p, n) != (ssize_t)n) {
		perror("write jitdump");
		exit(1);
	}
}

volatile unsigned long sink;

__attribute__((noinline)) long work(long ms)
{
	double end = cpu_now() + ms / 1000.0;
	while (cpu_now() < end)
		for (int i = 0; i < 100000; i++) /* the clock is a system call */
			sink += (unsigned long)i * i;
	return 0;
}

typedef long (*tramp_fn)(long ms, void *unused1, void *unused2, long (*fn)(long));

__attribute__((noinline)) long run(tramp_fn t, long ms)
{
	long r = t(ms, 0, 0, work); /* the target in rcx, as Python's */
	return r + 1;               /* not a tail call */
}

/* describe writes the trampoline's unwinding and code-load records. */
static void describe(int fd, unsigned char *code)
{
	struct {
		uint32_t id, total_size;
		uint64_t timestamp, unwinding_size, eh_frame_hdr_size, mapped_size;
	} unwinding = {4, 40 + sizeof eh_frame + sizeof eh_frame_hdr, timestamp(),
		       sizeof eh_frame + sizeof eh_frame_hdr, sizeof eh_frame_hdr,
		       sizeof eh_frame + sizeof eh_frame_hdr};
	put(fd, &unwinding, sizeof unwinding);
	put(fd, eh_frame, sizeof eh_frame);
	put(fd, eh_frame_hdr, sizeof eh_frame_hdr);

	static const char name[] = "jit::trampoline";
	struct {
		uint32_t id, total_size;
		uint64_t timestamp;
		uint32_t pid, tid;
		uint64_t vma, code_addr, code_size, code_index;
	} load = {0, 56 + sizeof name + sizeof trampoline, timestamp(), (uint32_t)getpid(),
		  (uint32_t)getpid(), (uint64_t)(uintptr_t)code, (uint64_t)(uintptr_t)code,
		  sizeof trampoline, 1};
	put(fd, &load, sizeof load);
	put(fd, name, sizeof name);
	put(fd, trampoline, sizeof trampoline);
}

int main(int argc, char **argv)
{
	long ms = argc > 1 ? atol(argv[1]) : 1000;
	unsigned char *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (code == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	memcpy(code, trampoline, sizeof trampoline);
	if (mprotect(code, 4096, PROT_READ | PROT_EXEC) != 0) {
		perror("mprotect");
		return 1;
	}

	char path[64];
	snprintf(path, sizeof path, "/tmp/jit-%d.dump", getpid());
	int fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0644);
	if (fd < 0) {
		perror(path);
		return 1;
	}
	struct {
		uint32_t magic, version, size, elf_mach, pad, pid;
		uint64_t timestamp, flags;
	} header = {0x4A695444, 1, 40, 62, 0, (uint32_t)getpid(), timestamp(), 0};
	put(fd, &header, sizeof header);
	/* The marker: a profiler finds the dump among the mappings. */
	if (mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0) == MAP_FAILED) {
		perror("mmap jitdump");
		return 1;
	}

	int late = argc > 2 && strncmp(argv[2], "late", 4) == 0;
	if (!late)
		describe(fd, code);
	long r = run((tramp_fn)(uintptr_t)code, ms);
	if (late)
		describe(fd, code);
	unlink(path);
	if (argc > 2 && strcmp(argv[2], "late-exec") == 0) {
		execl("/bin/true", "true", (char *)NULL);
		perror("exec /bin/true");
		return 1;
	}
	return (int)(r - 1);
}
