/*
 * libnsprof-memprof.so: an LD_PRELOAD library that reports every heap
 * allocation and free of the process it is loaded into to `nsprof record
 * --memprof`, which writes them as Sysprof ALLOCATION frames; and the
 * calls of code built with -pg or -finstrument-functions to `nsprof
 * record --calls` (calls.c, included below).
 *
 * The recorder hands the process one end of a SOCK_SEQPACKET socket pair
 * in NSPROF_MEMPROF_FD. The first time a thread allocates, it creates a
 * memfd ring (memprof.h), maps it, and sends the fd over that socket with
 * SCM_RIGHTS; the recorder learns the sender's host pid from
 * SCM_CREDENTIALS, which the kernel translates across PID namespaces.
 * From then on the thread appends records to its ring without locks or
 * system calls, and the recorder drains every ring a few hundred times a
 * second. When the ring is full the thread waits a bounded time, then
 * drops the event and counts it in the ring header.
 *
 * Stacks come from the frame-pointer chain, bounded by the thread's stack
 * (NSPROF_MEMPROF_UNWIND=backtrace uses glibc's DWARF backtrace() instead).
 * NSPROF_MEMPROF_SAMPLE=N records about one allocation per N bytes, each
 * with the unbiased weight size / (1 - exp(-size / N)). Event times are
 * mostly extrapolated from the TSC ("event times" below;
 * NSPROF_MEMPROF_CLOCK=gettime reads the clock for each).
 *
 * Safety: dlsym may allocate before the real functions are known, so a
 * static arena serves those calls; a thread registers its ring with its
 * signals blocked, and its own allocations there (pthread_getattr_np) go
 * straight to the real allocator; a fork child unmaps its parent's rings
 * and starts its own; a pthread key destructor marks a thread's ring
 * closed. A signal handler that allocates while its thread is in the
 * middle of writing a record is recorded too ("signal handlers" below).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <poll.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "memprof.h"

#define EXPORT __attribute__((visibility("default")))
#define NOINLINE __attribute__((noinline))
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#define LIKELY(x) __builtin_expect(!!(x), 1)

typedef void *(*malloc_fn)(size_t);
typedef void *(*calloc_fn)(size_t, size_t);
typedef void *(*realloc_fn)(void *, size_t);
typedef void (*free_fn)(void *);
typedef void *(*memalign_fn)(size_t, size_t);
typedef int (*posix_memalign_fn)(void **, size_t, size_t);
typedef void *(*valloc_fn)(size_t);

static malloc_fn real_malloc;
static calloc_fn real_calloc;
static realloc_fn real_realloc;
static free_fn real_free;
static memalign_fn real_memalign;
static posix_memalign_fn real_posix_memalign;
static memalign_fn real_aligned_alloc;
static valloc_fn real_valloc;
static valloc_fn real_pvalloc;

/* ---- bootstrap arena: serves dlsym's allocations ---- */

static _Alignas(64) char arena[64 * 1024];
static size_t arena_used;
static int resolving;

static void *arena_alloc(size_t size, size_t align)
{
	if (align < 16)
		align = 16;
	size_t start = __atomic_load_n(&arena_used, __ATOMIC_RELAXED);
	for (;;) {
		size_t p = (start + 16 + align - 1) & ~(align - 1);
		size_t end = p + size;
		if (end > sizeof arena || end < p)
			return NULL;
		if (__atomic_compare_exchange_n(&arena_used, &start, end, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
			memcpy(arena + p - sizeof(size_t), &size, sizeof size);
			return arena + p;
		}
	}
}

static inline int in_arena(const void *p)
{
	return (const char *)p >= arena && (const char *)p < arena + sizeof arena;
}

static size_t arena_size(const void *p)
{
	size_t n;
	memcpy(&n, (const char *)p - sizeof n, sizeof n);
	return n;
}

static void resolve(void)
{
	if (real_free)
		return;
	resolving = 1;
	real_malloc = (malloc_fn)dlsym(RTLD_NEXT, "malloc");
	real_calloc = (calloc_fn)dlsym(RTLD_NEXT, "calloc");
	real_realloc = (realloc_fn)dlsym(RTLD_NEXT, "realloc");
	real_memalign = (memalign_fn)dlsym(RTLD_NEXT, "memalign");
	real_posix_memalign = (posix_memalign_fn)dlsym(RTLD_NEXT, "posix_memalign");
	real_aligned_alloc = (memalign_fn)dlsym(RTLD_NEXT, "aligned_alloc");
	real_valloc = (valloc_fn)dlsym(RTLD_NEXT, "valloc");
	real_pvalloc = (valloc_fn)dlsym(RTLD_NEXT, "pvalloc");
	__atomic_store_n(&real_free, (free_fn)dlsym(RTLD_NEXT, "free"), __ATOMIC_RELEASE);
	resolving = 0;
}

/* ---- configuration, set once by the constructor ---- */

static int enabled;       /* a recorder is listening */
static int allocs_on = 1; /* record allocations (NSPROF_MEMPROF_ALLOCS=0: calls only) */
static int control_fd = -1;
static uint64_t ring_bytes = 4u << 20;
static uint64_t sample_bytes; /* 0: record everything */
static int use_backtrace;
static pthread_key_t exit_key;

/* ---- per-thread state (initial-exec TLS: no allocation on access) ---- */

/* A thread's clock state. All zero is "no anchor yet". */
struct tclock {
	uint64_t tsc; /* the anchor: TSC and clock read together on CPU cpu-1 */
	int64_t ns;
	int32_t cpu;  /* CPU + 1; 0: no anchor */
	int32_t rcpu; /* the rate's reference point, on CPU rcpu-1 */
	uint64_t rtsc;
	int64_t rns;
	int64_t last; /* the last time given: a thread's times never go back */
	uint64_t extrapolated; /* times given from the TSC */
};

enum { T_NONE, T_ACTIVE, T_OFF };

/* An event of a signal handler kept aside while its thread was writing
 * a record (see "signal handlers"). */
struct pend_rec {
	struct memprof_record r;
	uint64_t addrs[MEMPROF_MAX_DEPTH];
};
#define PEND_SLOTS 16
#define PEND_BYTES (PEND_SLOTS * sizeof(struct pend_rec))

struct tstate {
	struct memprof_ring_header *ring;
	uint8_t *data;
	uint64_t mask;
	uintptr_t stack_hi;
	int64_t sample_left;
	uint64_t rng;
	int busy; /* our own code allocates: not recorded */
	int state;
	int waited_out; /* the last full-ring wait timed out */
	/* Signal handlers: writing is set while the thread writes to its
	 * ring or its clock; a handler that finds it set appends its event
	 * to pend[pend_w % PEND_SLOTS] (pend_busy meanwhile), and the writer
	 * copies pend[pend_r...] into the ring when it is done. */
	int writing;
	int pend_busy;
	uint64_t pend_w, pend_r;
	struct pend_rec *pend;
	struct tclock clock;
};

static __thread struct tstate ts __attribute__((tls_model("initial-exec")));

struct cstate;

/* Every live ring mapping, so a fork child can unmap its parent's, and
 * the exiting process can count the calls its other threads never wrote. */
struct ringent {
	struct memprof_ring_header *ring;
	size_t len;
	struct pend_rec *pend;
	struct cstate *calls; /* the thread's call table (calls.c), or NULL */
};
#define MAX_RINGS 4096
static struct ringent rings[MAX_RINGS];
static int ring_lock;

static void lock(int *l)
{
	while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
		sched_yield();
}

static void unlock(int *l) { __atomic_store_n(l, 0, __ATOMIC_RELEASE); }

static void rings_add(struct memprof_ring_header *r, size_t len, struct pend_rec *pend)
{
	lock(&ring_lock);
	for (int i = 0; i < MAX_RINGS; i++) {
		if (!rings[i].ring) {
			rings[i].ring = r;
			rings[i].len = len;
			rings[i].pend = pend;
			rings[i].calls = NULL;
			break;
		}
	}
	unlock(&ring_lock);
}

static void rings_del(struct memprof_ring_header *r)
{
	lock(&ring_lock);
	for (int i = 0; i < MAX_RINGS; i++) {
		if (rings[i].ring == r) {
			rings[i].ring = NULL;
			rings[i].calls = NULL;
			break;
		}
	}
	unlock(&ring_lock);
}

static inline int64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* ---- event times ----
 *
 * Every event carries a CLOCK_MONOTONIC time, and the analysis orders the
 * threads' events by it (a block allocated on one thread, freed on
 * another). In a KVM guest clock_gettime reads kvm-clock, about 25 ns: a
 * fifth of what recording an event costs. Within a thread, the time is
 * instead extrapolated from the TSC since the thread's last clock_gettime
 * (its anchor), for at most TSC_SPAN ticks and only while the thread stays
 * on the anchor's CPU (rseq's cpu_id, a plain load): the TSC of one CPU
 * against the clock read on that CPU, so CPUs whose TSCs differ do not
 * matter. The ticks-to-ns rate is measured by the threads themselves,
 * between two anchors on one CPU at least RATE_BASELINE apart; until then,
 * and without rseq or off x86-64, every event reads the clock. Each anchor
 * checks the extrapolation against the clock: off by more than
 * TSC_TOLERANCE ns (a TSC the hypervisor moved), the process goes back
 * to the clock for good. NSPROF_MEMPROF_CLOCK=gettime turns it off. */

#if defined(__x86_64__) && __has_include(<sys/rseq.h>)
#include <sys/rseq.h>
#include <x86intrin.h>
#define HAVE_TSC 1
#endif

#define TSC_SPAN (1ull << 20)  /* about half a millisecond at 2 GHz */
#define RATE_BASELINE 10000000 /* ns */
#define TSC_TOLERANCE 1000     /* ns */
#define ANCHOR_TICKS 256       /* a clock read bracketed by more was interrupted */

static int tsc_allowed;   /* set by the constructor; cleared for good on a bad check */
static uint64_t tsc_mult; /* ns per tick, 32.32 fixed point; 0: read the clock */

#ifdef HAVE_TSC
/* rseq_cpu returns the CPU the kernel last ran the thread on, or -1. */
static inline int32_t rseq_cpu(void)
{
	if (__rseq_size == 0)
		return -1;
	struct rseq *r = (struct rseq *)((char *)__builtin_thread_pointer() + __rseq_offset);
	return (int32_t)__atomic_load_n(&r->cpu_id, __ATOMIC_RELAXED);
}
#endif

static inline int64_t monotone(struct tclock *c, int64_t ns)
{
	if (ns < c->last)
		ns = c->last;
	return c->last = ns;
}

/* anchor_time reads the clock, and with it the TSC when extrapolating is
 * allowed: a new anchor, a check of the extrapolation, a rate. */
static NOINLINE int64_t anchor_time(struct tclock *c)
{
#ifdef HAVE_TSC
	if (__atomic_load_n(&tsc_allowed, __ATOMIC_RELAXED)) {
		int32_t cpu = rseq_cpu();
		uint64_t a = __rdtsc();
		int64_t ns = now_ns();
		uint64_t b = __rdtsc();
		if (cpu < 0 || cpu != rseq_cpu() || b - a > ANCHOR_TICKS) {
			c->cpu = 0; /* moved or interrupted: no anchor */
			return monotone(c, ns);
		}
		uint64_t tsc = a + (b - a) / 2;
		uint64_t m = __atomic_load_n(&tsc_mult, __ATOMIC_RELAXED);
		if (m && c->cpu == cpu + 1 && tsc - c->tsc < 64 * TSC_SPAN) {
			int64_t guess = c->ns + (int64_t)(((tsc - c->tsc) * m) >> 32);
			if (guess - ns > TSC_TOLERANCE || ns - guess > TSC_TOLERANCE) {
				__atomic_store_n(&tsc_allowed, 0, __ATOMIC_RELAXED);
				__atomic_store_n(&tsc_mult, 0, __ATOMIC_RELAXED);
				return monotone(c, ns);
			}
		}
		if (c->rcpu != cpu + 1 || tsc <= c->rtsc) {
			c->rcpu = cpu + 1, c->rtsc = tsc, c->rns = ns;
		} else if (ns - c->rns >= RATE_BASELINE) {
			double r = (double)(ns - c->rns) / (double)(tsc - c->rtsc);
			if (r > 0.01 && r < 16) /* a TSC of 62.5 MHz to 100 GHz */
				__atomic_store_n(&tsc_mult, (uint64_t)(r * 4294967296.0), __ATOMIC_RELAXED);
			c->rtsc = tsc, c->rns = ns;
		}
		c->tsc = tsc, c->ns = ns, c->cpu = cpu + 1;
		return monotone(c, ns);
	}
#endif
	(void)c;
	return now_ns();
}

/* event_time returns the time of an event of the thread owning c. */
static inline int64_t event_time(struct tclock *c)
{
#ifdef HAVE_TSC
	uint64_t m = __atomic_load_n(&tsc_mult, __ATOMIC_RELAXED);
	if (m) {
		int32_t cpu = rseq_cpu();
		uint64_t d = __rdtsc() - c->tsc;
		if (d < TSC_SPAN && cpu + 1 == c->cpu && cpu == rseq_cpu()) {
			c->extrapolated++;
			return monotone(c, c->ns + (int64_t)((d * m) >> 32));
		}
	}
#endif
	return anchor_time(c);
}

/* ---- stacks ---- */

/*
 * fp_walk follows the frame-pointer chain from the hook's own frame fp:
 * each frame holds the caller's frame pointer and, above it, the return
 * address. Frames must lie between fp and the top of the thread's stack,
 * be 8-aligned and grow upwards, so a bad chain ends the walk instead of
 * faulting. The hook's own frame is always read, even on a signal stack
 * outside those bounds: every allocation has at least its caller.
 */
static int fp_walk(uintptr_t fp, uintptr_t hi, uint64_t *out, int max)
{
	uintptr_t lo = fp;
	int n = 0;
	while (n < max) {
		if ((fp & 7) || (n > 0 && (fp < lo || fp + 16 > hi)))
			break;
		const uintptr_t *f = (const uintptr_t *)fp;
		uintptr_t ret = f[1];
		if (ret < 4096)
			break;
		out[n++] = ret;
		uintptr_t next = f[0];
		if (next <= fp)
			break;
		fp = next;
	}
	return n;
}

static void stack_bounds(struct tstate *t, uintptr_t fp)
{
	pthread_attr_t a;
	void *lo;
	size_t sz;
	t->stack_hi = fp + (8u << 20); /* if the bounds cannot be read */
	if (pthread_getattr_np(pthread_self(), &a) == 0) {
		if (pthread_attr_getstack(&a, &lo, &sz) == 0 && (uintptr_t)lo + sz > fp)
			t->stack_hi = (uintptr_t)lo + sz;
		pthread_attr_destroy(&a);
	}
}

/* capture fills out with the caller's return addresses, innermost first. */
static NOINLINE int capture(struct tstate *t, uintptr_t fp, uint64_t *out)
{
	if (use_backtrace) {
		/* backtrace() starts inside capture: skip it and the hook. */
		void *buf[MEMPROF_MAX_DEPTH + 3];
		int n = backtrace(buf, MEMPROF_MAX_DEPTH + 3);
		int k = 0;
		for (int i = 3; i < n; i++)
			out[k++] = (uint64_t)(uintptr_t)buf[i];
		return k ? k : fp_walk(fp, t->stack_hi, out, 1);
	}
	return fp_walk(fp, t->stack_hi, out, MEMPROF_MAX_DEPTH);
}

/* ---- rings ---- */

#define SIGNAL_FENCE() __atomic_signal_fence(__ATOMIC_SEQ_CST)

/* Set once the process has announced itself; reset in a fork child. */
static int announced;

/*
 * send_ring registers a ring. A process's first ring also carries the
 * write end of a pipe that the recorder closes once it has read the
 * process's mappings: a short-lived process must not exit before that.
 */
static int send_ring(int memfd, struct memprof_ring_header *h)
{
	int ack[2] = {-1, -1};
	int nfd = 1;
	if (!__atomic_load_n(&announced, __ATOMIC_RELAXED) && pipe2(ack, O_CLOEXEC) == 0)
		nfd = 2;
	int fds[2] = {memfd, ack[1]};
	struct memprof_hello hello = {
		.magic = MEMPROF_MAGIC,
		.version = MEMPROF_VERSION,
		.pid = h->pid,
		.tid = h->tid,
		.ring_size = MEMPROF_HEADER_SIZE + h->size,
		.sample_bytes = sample_bytes,
	};
	struct iovec iov = {.iov_base = &hello, .iov_len = sizeof hello};
	union {
		char buf[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof u);
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(nfd * sizeof(int));
	msg.msg_controllen = CMSG_SPACE(nfd * sizeof(int));
	memcpy(CMSG_DATA(c), fds, nfd * sizeof(int));
	int ok = -1;
	/* Bounded: a recorder that stopped reading must not hang the program. */
	for (int i = 0; i < 2000; i++) {
		if (sendmsg(control_fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)sizeof hello) {
			ok = 0;
			break;
		}
		if (errno != EAGAIN && errno != EINTR && errno != ENOBUFS)
			break;
		struct timespec d = {0, 500000};
		nanosleep(&d, NULL);
	}
	if (nfd == 2) {
		int e = errno;
		close(ack[1]);
		if (ok == 0) {
			struct pollfd p = {.fd = ack[0], .events = POLLIN};
			while (poll(&p, 1, 2000) < 0 && errno == EINTR)
				;
			__atomic_store_n(&announced, 1, __ATOMIC_RELAXED);
		}
		close(ack[0]);
		errno = e;
	}
	return ok;
}

static int thread_init_locked(struct tstate *t, uintptr_t fp);

/*
 * thread_init creates and registers the calling thread's ring, with the
 * thread's signals blocked: a handler's allocation waits until the ring
 * is ready, and the allocations made here (pthread_getattr_np), which
 * state T_OFF sends straight to the real allocator, are all our own.
 */
static NOINLINE int thread_init(struct tstate *t, uintptr_t fp)
{
	if (t->state != T_NONE)
		return t->state == T_ACTIVE;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	/* A handler may have registered the ring before the mask was set. */
	int ok = t->state == T_NONE ? thread_init_locked(t, fp) : t->state == T_ACTIVE;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return ok;
}

static int thread_init_locked(struct tstate *t, uintptr_t fp)
{
	t->state = T_OFF;
	size_t len = MEMPROF_HEADER_SIZE + ring_bytes;
	void *pend = mmap(NULL, PEND_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (pend == MAP_FAILED)
		return 0;
	int fd = memfd_create("nsprof-memprof", MFD_CLOEXEC);
	if (fd < 0) {
		munmap(pend, PEND_BYTES);
		return 0;
	}
	if (ftruncate(fd, (off_t)len) < 0) {
		close(fd);
		munmap(pend, PEND_BYTES);
		return 0;
	}
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		close(fd);
		munmap(pend, PEND_BYTES);
		return 0;
	}
	struct memprof_ring_header *h = m;
	h->magic = MEMPROF_MAGIC;
	h->version = MEMPROF_VERSION;
	h->size = ring_bytes;
	h->pid = getpid();
	h->tid = (int32_t)syscall(SYS_gettid);
	int err = send_ring(fd, h);
	close(fd);
	if (err < 0) {
		munmap(m, len);
		munmap(pend, PEND_BYTES);
		if (errno == EPIPE || errno == ECONNREFUSED || errno == ENOTCONN)
			__atomic_store_n(&enabled, 0, __ATOMIC_RELAXED);
		return 0;
	}
	t->ring = h;
	t->data = (uint8_t *)m + MEMPROF_HEADER_SIZE;
	t->mask = ring_bytes - 1;
	t->pend = pend;
	t->pend_w = t->pend_r = 0;
	t->rng = ((uint64_t)h->tid << 32) ^ (uint64_t)now_ns() ^ 0x9e3779b97f4a7c15ull;
	stack_bounds(t, fp);
	rings_add(h, len, pend);
	pthread_setspecific(exit_key, t);
	t->state = T_ACTIVE;
	return 1;
}

/* fits says whether a record of up to max bytes, and the padding before
 * it when the end of the data area is too near, fit after tail. */
static inline int fits(struct tstate *t, uint64_t tail, uint64_t max)
{
	uint64_t size = t->mask + 1;
	uint64_t off = tail & t->mask;
	uint64_t need = off + max > size ? size - off + max : max;
	return tail + need - __atomic_load_n(&t->ring->head, __ATOMIC_ACQUIRE) <= size;
}

/*
 * wait_room waits, boundedly, until a record of up to max bytes fits at
 * the tail. With open set the caller has nothing half written, and a
 * signal handler arriving while it sleeps writes its events straight to
 * the ring (t->writing cleared), moving the tail.
 */
static NOINLINE int wait_room(struct tstate *t, uint64_t max, int open)
{
	if (t->waited_out)
		return 0; /* the recorder is not keeping up: do not stall again */
	/* Up to about a second: the recorder drains every few ms. */
	for (int i = 0; i < 20000; i++) {
		if (open) {
			SIGNAL_FENCE();
			t->writing = 0;
			SIGNAL_FENCE();
		}
		if (i < 64) {
			sched_yield();
		} else {
			struct timespec d = {0, 50000};
			nanosleep(&d, NULL);
		}
		if (open) {
			SIGNAL_FENCE();
			t->writing = 1;
			SIGNAL_FENCE();
		}
		if (fits(t, __atomic_load_n(&t->ring->tail, __ATOMIC_RELAXED), max))
			return 1;
	}
	t->waited_out = 1;
	return 0;
}

/*
 * reserve returns room for a record of up to max bytes at the ring's tail,
 * padding to the start of the data area first when the end is too near;
 * NULL (the event counted as lost) when the ring stays full. The record is
 * published by commit. open is wait_room's.
 */
static struct memprof_record *reserve(struct tstate *t, uint32_t max, uint64_t *pos, int open)
{
	struct memprof_ring_header *h = t->ring;
	uint64_t tail = h->tail;
	if (UNLIKELY(!fits(t, tail, max))) {
		if (!wait_room(t, max, open)) {
			__atomic_fetch_add(&h->lost, 1, __ATOMIC_RELAXED);
			return NULL;
		}
		tail = __atomic_load_n(&h->tail, __ATOMIC_RELAXED);
	} else {
		t->waited_out = 0;
	}
	uint64_t off = tail & t->mask;
	uint64_t pad = 0;
	if (off + max > t->mask + 1)
		pad = t->mask + 1 - off;
	if (pad) {
		/* Less than a record: it fits a u16, and may be 8 bytes. */
		*(uint16_t *)(t->data + off) = (uint16_t)(pad | MEMPROF_PAD_BIT);
		off = 0;
	}
	*pos = tail + pad;
	return (struct memprof_record *)(t->data + off);
}

/* fill_record lays out an allocation (a free when size is 0 and n 0)
 * as the ALLOCATION frame the recorder writes as it is (memprof.h),
 * every byte of its fixed part, padding included, and returns its
 * length. Word by word: the frame's halves are 8-byte fields or pack
 * into them. */
static inline uint32_t fill_record(struct memprof_record *r, int32_t pid, int32_t tid, const void *addr, int64_t size, int64_t time, int n)
{
	uint32_t len = (uint32_t)(sizeof *r + 8 * (size_t)n);
	uint64_t *q = (uint64_t *)r;
	q[0] = (uint64_t)len | (uint64_t)0xffff << 16 | (uint64_t)(uint32_t)pid << 32;
	q[1] = (uint64_t)time;
	q[2] = MEMPROF_REC_ALLOC;
	q[3] = (uint64_t)(uintptr_t)addr;
	q[4] = (uint64_t)size;
	q[5] = (uint64_t)(uint32_t)tid | (uint64_t)(uint16_t)n << 32;
	return len;
}

/* commit fills in r's header and makes it, and any padding before it,
 * visible to the recorder. */
static inline void commit(struct tstate *t, uint64_t pos, struct memprof_record *r, const void *addr, int64_t size, int64_t time, int n)
{
	uint32_t len = fill_record(r, t->ring->pid, t->ring->tid, addr, size, time, n);
	t->ring->tsc_times = t->clock.extrapolated; /* on tail's cache line */
	__atomic_store_n(&t->ring->tail, pos + len, __ATOMIC_RELEASE);
}

/* ---- sampling ---- */

/* Sampled blocks still live, so that only their frees are recorded. */
#define FT_SLOTS (1u << 18)
#define FT_PROBES 64
#define FT_TOMB 1u
static uint64_t *ftable;

static inline uint64_t hash_ptr(uint64_t p)
{
	p ^= p >> 33;
	p *= 0xff51afd7ed558ccdull;
	p ^= p >> 33;
	return p;
}

static int ft_insert(uint64_t p)
{
	uint64_t i = hash_ptr(p);
	for (int k = 0; k < FT_PROBES; k++, i++) {
		uint64_t *s = &ftable[i & (FT_SLOTS - 1)];
		uint64_t v = __atomic_load_n(s, __ATOMIC_RELAXED);
		if ((v == 0 || v == FT_TOMB) && __atomic_compare_exchange_n(s, &v, p, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			return 1;
	}
	return 0;
}

static int ft_remove(uint64_t p)
{
	uint64_t i = hash_ptr(p);
	for (int k = 0; k < FT_PROBES; k++, i++) {
		uint64_t *s = &ftable[i & (FT_SLOTS - 1)];
		uint64_t v = __atomic_load_n(s, __ATOMIC_RELAXED);
		if (v == p)
			return __atomic_compare_exchange_n(s, &v, FT_TOMB, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
		if (v == 0)
			return 0;
	}
	return 0;
}

static double uniform(struct tstate *t)
{
	/* xorshift64*, 53 bits in (0, 1] */
	uint64_t x = t->rng ? t->rng : 0x2545f4914f6cdd1dull;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	t->rng = x;
	return ((double)((x * 0x2545f4914f6cdd1dull) >> 11) + 1.0) / 9007199254740992.0;
}

static int64_t next_gap(struct tstate *t)
{
	double g = -log(uniform(t)) * (double)sample_bytes;
	return g < 1 ? 1 : (int64_t)g;
}

/*
 * sampled decides whether an allocation of size bytes is recorded, and
 * with what weight: about one byte in sample_bytes starts a sample, so a
 * block is taken with probability 1 - exp(-size / N).
 */
static inline int sampled(struct tstate *t, size_t size, int64_t *weight)
{
	if (!sample_bytes) {
		*weight = (int64_t)size;
		return 1;
	}
	if (t->sample_left == 0)
		t->sample_left = next_gap(t);
	t->sample_left -= (int64_t)size;
	if (LIKELY(t->sample_left > 0))
		return 0;
	while (t->sample_left <= 0)
		t->sample_left += next_gap(t);
	double p = 1.0 - exp(-(double)size / (double)sample_bytes);
	*weight = p > 0 ? (int64_t)((double)size / p + 0.5) : (int64_t)sample_bytes;
	return 1;
}

/* ---- signal handlers ----
 *
 * A signal handler that allocates runs on its thread, in the middle of
 * whatever the thread was doing, perhaps one of the hooks below. While a
 * hook writes a record (from the event's time to the ring's tail, with
 * t->writing set), the ring and the clock state are half updated: a
 * handler arriving then writes its event, timed by the clock, to one of
 * PEND_SLOTS side slots, and the hook copies the slots into the ring
 * before it returns (end_write). A handler interrupting another's append
 * (pend_busy) or finding every slot taken counts its event in the ring
 * header's signal_dropped; the recorder reports them. At any other point,
 * a handler's event goes to the ring as any other.
 */

static inline void begin_write(struct tstate *t)
{
	t->writing = 1;
	SIGNAL_FENCE();
}

static NOINLINE void flush_pending(struct tstate *t);

/* end_write ends a hook's writing, copying the events handlers kept
 * aside meanwhile into the ring. */
static inline void end_write(struct tstate *t)
{
	SIGNAL_FENCE();
	t->writing = 0;
	SIGNAL_FENCE();
	if (UNLIKELY(__atomic_load_n(&t->pend_w, __ATOMIC_RELAXED) != t->pend_r))
		flush_pending(t);
}

static NOINLINE void flush_pending(struct tstate *t)
{
	do {
		t->writing = 1;
		SIGNAL_FENCE();
		while (t->pend_r != __atomic_load_n(&t->pend_w, __ATOMIC_RELAXED)) {
			SIGNAL_FENCE();
			const struct pend_rec *e = &t->pend[t->pend_r % PEND_SLOTS];
			uint64_t pos;
			struct memprof_record *r = reserve(t, e->r.len, &pos, 0);
			if (r) {
				memcpy(r, e, e->r.len);
				__atomic_store_n(&t->ring->tail, pos + e->r.len, __ATOMIC_RELEASE);
			}
			SIGNAL_FENCE();
			__atomic_store_n(&t->pend_r, t->pend_r + 1, __ATOMIC_RELAXED);
		}
		SIGNAL_FENCE();
		t->writing = 0;
		SIGNAL_FENCE();
	} while (t->pend_r != __atomic_load_n(&t->pend_w, __ATOMIC_RELAXED));
}

/* pend_event keeps a handler's event aside, or counts it as dropped:
 * an allocation when alloc is set, else a free. */
static NOINLINE void pend_event(struct tstate *t, uintptr_t fp, int alloc, const void *addr, int64_t size, int64_t time)
{
	uint64_t w = t->pend_w;
	if (t->pend_busy || w - __atomic_load_n(&t->pend_r, __ATOMIC_RELAXED) >= PEND_SLOTS) {
		__atomic_fetch_add(&t->ring->signal_dropped, 1, __ATOMIC_RELAXED);
		return;
	}
	t->pend_busy = 1;
	SIGNAL_FENCE();
	struct pend_rec *e = &t->pend[w % PEND_SLOTS];
	/* The frame-pointer walk only: the interrupted code may be inside
	 * the unwinder that backtrace() uses. */
	int n = alloc ? fp_walk(fp, t->stack_hi, e->addrs, MEMPROF_MAX_DEPTH) : 0;
	fill_record(&e->r, t->ring->pid, t->ring->tid, addr, size, time, n);
	SIGNAL_FENCE();
	__atomic_store_n(&t->pend_w, w + 1, __ATOMIC_RELAXED);
	SIGNAL_FENCE();
	t->pend_busy = 0;
}

/* ---- events ---- */

/*
 * alloc_event records an allocation of size bytes at p: into the ring,
 * or aside when nested (a signal handler interrupted this thread's
 * writing). The thread's ring is registered.
 */
static inline __attribute__((always_inline)) void alloc_event(struct tstate *t, uintptr_t fp, void *p, size_t size, int nested)
{
	int64_t weight;
	if (!sampled(t, size, &weight))
		return;
	if (sample_bytes && !ft_insert((uint64_t)(uintptr_t)p)) {
		__atomic_fetch_add(&t->ring->sampled_untracked, 1, __ATOMIC_RELAXED);
	}
	if (UNLIKELY(nested)) {
		pend_event(t, fp, 1, p, weight, now_ns());
		return;
	}
	int64_t time = event_time(&t->clock);
	/* The stack is walked straight into the ring. */
	uint64_t pos;
	struct memprof_record *r = reserve(t, sizeof *r + 8 * MEMPROF_MAX_DEPTH, &pos, 1);
	if (!r)
		return;
	int n = capture(t, fp, (uint64_t *)(r + 1));
	commit(t, pos, r, p, weight, time, n);
}

static NOINLINE void on_alloc(struct tstate *t, uintptr_t fp, void *p, size_t size)
{
	if (UNLIKELY(t->state != T_ACTIVE) && !thread_init(t, fp))
		return;
	if (UNLIKELY(t->writing)) {
		alloc_event(t, fp, p, size, 1);
		return;
	}
	begin_write(t);
	alloc_event(t, fp, p, size, 0);
	end_write(t);
}

/* tracked says whether a free of p is recorded (in sampling mode, only
 * frees of sampled blocks are); it must run before the block is freed. */
static inline int tracked(void *p)
{
	return !sample_bytes || ft_remove((uint64_t)(uintptr_t)p);
}

/* free_event records a free of p at time; see alloc_event. */
static inline void free_event(struct tstate *t, uintptr_t fp, void *p, int64_t time, int nested)
{
	if (UNLIKELY(nested)) {
		pend_event(t, fp, 0, p, 0, time);
		return;
	}
	uint64_t pos;
	struct memprof_record *r = reserve(t, sizeof *r, &pos, 1);
	if (r)
		commit(t, pos, r, p, 0, time, 0);
}

static inline int active(struct tstate *t)
{
	return __atomic_load_n(&enabled, __ATOMIC_RELAXED) && allocs_on && !t->busy && t->state != T_OFF;
}

#define FP() ((uintptr_t)__builtin_frame_address(0))

/* ---- the interposed functions ---- */

EXPORT void *malloc(size_t size)
{
	if (UNLIKELY(!real_free)) {
		if (resolving)
			return arena_alloc(size, 16);
		resolve();
	}
	struct tstate *t = &ts;
	if (!active(t))
		return real_malloc(size);
	void *p = real_malloc(size);
	if (p)
		on_alloc(t, FP(), p, size);
	return p;
}

EXPORT void *calloc(size_t nmemb, size_t size)
{
	if (UNLIKELY(!real_free)) {
		if (resolving) {
			size_t n;
			if (__builtin_mul_overflow(nmemb, size, &n))
				return NULL;
			return arena_alloc(n, 16); /* static storage is zeroed */
		}
		resolve();
	}
	struct tstate *t = &ts;
	if (!active(t))
		return real_calloc(nmemb, size);
	void *p = real_calloc(nmemb, size);
	if (p)
		on_alloc(t, FP(), p, nmemb * size); /* no overflow: calloc succeeded */
	return p;
}

EXPORT void free(void *p)
{
	if (!p || UNLIKELY(in_arena(p)))
		return;
	if (UNLIKELY(!real_free))
		resolve();
	struct tstate *t = &ts;
	if (!active(t) || !tracked(p)) {
		real_free(p);
		return;
	}
	if (UNLIKELY(t->state != T_ACTIVE) && !thread_init(t, FP())) {
		real_free(p);
		return;
	}
	int nested = t->writing;
	if (!nested)
		begin_write(t);
	/* Stamped before the block can be handed out again. */
	int64_t time = nested ? now_ns() : event_time(&t->clock);
	real_free(p);
	free_event(t, FP(), p, time, nested);
	if (!nested)
		end_write(t);
}

static inline __attribute__((always_inline)) void *do_realloc(struct tstate *t, uintptr_t fp, void *old, size_t size)
{
	if (UNLIKELY(in_arena(old))) {
		size_t n = arena_size(old);
		void *p = real_malloc(size);
		if (p) {
			memcpy(p, old, n < size ? n : size);
			if (active(t))
				on_alloc(t, fp, p, size);
		}
		return p;
	}
	if (!active(t) || (UNLIKELY(t->state != T_ACTIVE) && !thread_init(t, fp)))
		return real_realloc(old, size);
	int nested = t->writing;
	if (!nested)
		begin_write(t);
	int old_tracked = old && tracked(old);
	int64_t t0 = nested ? now_ns() : event_time(&t->clock);
	void *p = real_realloc(old, size);
	/* As Sysprof records it: the old block freed, the new one allocated.
	 * glibc's realloc(p, 0) frees p and returns NULL. */
	if (old_tracked && (p || size == 0))
		free_event(t, fp, old, t0, nested);
	else if (old_tracked && sample_bytes)
		ft_insert((uint64_t)(uintptr_t)old); /* realloc failed: still live */
	if (p)
		alloc_event(t, fp, p, size, nested);
	if (!nested)
		end_write(t);
	return p;
}

EXPORT void *realloc(void *old, size_t size)
{
	if (UNLIKELY(!real_free)) {
		if (resolving) {
			void *p = arena_alloc(size, 16);
			if (p && old)
				memcpy(p, old, arena_size(old) < size ? arena_size(old) : size);
			return p;
		}
		resolve();
	}
	return do_realloc(&ts, FP(), old, size);
}

EXPORT void *reallocarray(void *old, size_t nmemb, size_t size)
{
	size_t n;
	if (__builtin_mul_overflow(nmemb, size, &n)) {
		errno = ENOMEM;
		return NULL;
	}
	if (UNLIKELY(!real_free))
		resolve();
	return do_realloc(&ts, FP(), old, n);
}

EXPORT void *memalign(size_t align, size_t size)
{
	if (UNLIKELY(!real_free)) {
		if (resolving)
			return arena_alloc(size, align);
		resolve();
	}
	struct tstate *t = &ts;
	if (!active(t))
		return real_memalign(align, size);
	void *p = real_memalign(align, size);
	if (p)
		on_alloc(t, FP(), p, size);
	return p;
}

EXPORT void *aligned_alloc(size_t align, size_t size)
{
	if (UNLIKELY(!real_free)) {
		if (resolving)
			return arena_alloc(size, align);
		resolve();
	}
	struct tstate *t = &ts;
	if (!active(t))
		return real_aligned_alloc(align, size);
	void *p = real_aligned_alloc(align, size);
	if (p)
		on_alloc(t, FP(), p, size);
	return p;
}

EXPORT int posix_memalign(void **out, size_t align, size_t size)
{
	if (UNLIKELY(!real_free)) {
		if (resolving) {
			*out = arena_alloc(size, align);
			return *out ? 0 : ENOMEM;
		}
		resolve();
	}
	struct tstate *t = &ts;
	if (!active(t))
		return real_posix_memalign(out, align, size);
	int err = real_posix_memalign(out, align, size);
	if (err == 0)
		on_alloc(t, FP(), *out, size);
	return err;
}

EXPORT void *valloc(size_t size)
{
	if (UNLIKELY(!real_free)) {
		if (resolving)
			return arena_alloc(size, 4096);
		resolve();
	}
	struct tstate *t = &ts;
	if (!active(t))
		return real_valloc(size);
	void *p = real_valloc(size);
	if (p)
		on_alloc(t, FP(), p, size);
	return p;
}

/* pvalloc is valloc with the size rounded up to whole pages: the block
 * is recorded with the size the caller may use. A C library without it
 * (glibc keeps it for old binaries only) gets memalign's equivalent. */
EXPORT void *pvalloc(size_t size)
{
	size_t page = 4096, rounded;
	if (UNLIKELY(!real_free)) {
		if (resolving) {
			if (__builtin_add_overflow(size, page - 1, &rounded))
				return NULL;
			return arena_alloc(rounded & ~(page - 1), page);
		}
		resolve();
	}
	page = (size_t)getpagesize();
	if (__builtin_add_overflow(size, page - 1, &rounded)) {
		errno = ENOMEM;
		return NULL;
	}
	rounded &= ~(page - 1);
	struct tstate *t = &ts;
	void *p = real_pvalloc ? real_pvalloc(size) : real_memalign(page, rounded);
	if (p && active(t))
		on_alloc(t, FP(), p, rounded);
	return p;
}

#include "calls.c"

/* ---- thread exit and fork ---- */

static void on_thread_exit(void *v)
{
	(void)v;
	struct tstate *t = &ts;
	calls_thread_done(&cs);
	struct memprof_ring_header *h = t->ring;
	t->state = T_OFF; /* allocations during later destructors go unrecorded */
	if (!h)
		return;
	t->ring = NULL;
	__atomic_store_n(&h->closed, 1, __ATOMIC_RELEASE);
	rings_del(h);
	munmap(h, MEMPROF_HEADER_SIZE + h->size);
	/* Empty: the slots are copied out before a hook returns. */
	munmap(t->pend, PEND_BYTES);
	t->pend = NULL;
}

static void before_fork(void) { lock(&ring_lock); }

static void after_fork_parent(void) { unlock(&ring_lock); }

/* The child has only the forking thread; its parent's rings are not its own. */
static void after_fork_child(void)
{
	for (int i = 0; i < MAX_RINGS; i++) {
		if (rings[i].ring) {
			munmap(rings[i].ring, rings[i].len);
			munmap(rings[i].pend, PEND_BYTES);
			rings[i].ring = NULL;
			rings[i].calls = NULL;
		}
	}
	unlock(&ring_lock);
	announced = 0;
	ts.ring = NULL;
	ts.data = NULL;
	ts.pend = NULL;
	ts.pend_w = ts.pend_r = 0;
	ts.state = T_NONE;
	ts.waited_out = 0;
	/* The parent's calls are the parent's to write. */
	if (cs.arcs) {
		memset(cs.arcs, 0, CALLS_SLOTS * sizeof(struct call_arc));
		cs.used = 0;
		cs.lost = cs.untimed = 0;
		cs.flushed = 0; /* registered with the child's ring at its first write */
	}
}

static uint64_t env_u64(const char *name, uint64_t def)
{
	const char *s = getenv(name);
	if (!s || !*s)
		return def;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	return *end ? def : (uint64_t)v;
}

__attribute__((constructor)) static void memprof_init(void)
{
	resolve();
	const char *s = getenv("NSPROF_MEMPROF_FD");
	if (!s || !*s)
		return;
	char *end;
	long fd = strtol(s, &end, 10);
	int type = 0;
	socklen_t len = sizeof type;
	/* A closed or reused fd number is not ours: stay out of the way. */
	if (*end || fd < 0 || getsockopt((int)fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0 || type != SOCK_SEQPACKET)
		return;
	control_fd = (int)fd;
	uint64_t rb = env_u64("NSPROF_MEMPROF_RING", ring_bytes);
	if (rb >= 4096 && rb <= (1ull << 30) && (rb & (rb - 1)) == 0)
		ring_bytes = rb;
	sample_bytes = env_u64("NSPROF_MEMPROF_SAMPLE", 0);
	allocs_on = env_u64("NSPROF_MEMPROF_ALLOCS", 1) != 0;
	const char *u = getenv("NSPROF_MEMPROF_UNWIND");
	use_backtrace = u && strcmp(u, "backtrace") == 0;
	const char *ck = getenv("NSPROF_MEMPROF_CLOCK");
#ifdef HAVE_TSC
	tsc_allowed = !(ck && strcmp(ck, "gettime") == 0) && rseq_cpu() >= 0;
#else
	(void)ck;
#endif
	if (sample_bytes) {
		void *m = mmap(NULL, FT_SLOTS * sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			return;
		ftable = m;
	}
	if (pthread_key_create(&exit_key, on_thread_exit) != 0)
		return;
	pthread_atfork(before_fork, after_fork_parent, after_fork_child);
	if (use_backtrace) {
		/* The first backtrace() loads libgcc_s, which allocates. */
		void *b[4];
		ts.busy = 1;
		backtrace(b, 4);
		ts.busy = 0;
	}
	__atomic_store_n(&enabled, 1, __ATOMIC_RELEASE);
	calls_init();
}
