/*
 * Compiled-in call instrumentation (nsprof record --calls), part of
 * libnsprof-memprof.so: memprof.c includes this file, so the calls go to
 * the same per-thread rings as the allocations.
 *
 * Two kinds of builds are profiled, with no change to them:
 *
 *  - -finstrument-functions: the compiler calls __cyg_profile_func_enter
 *    and _exit around every function; we interpose both (glibc's are
 *    no-ops). Each thread keeps a shadow stack of (function, call site,
 *    entry ticks, ticks of its callees), so each call gives its total and
 *    its self time.
 *
 *  - -pg: the compiler calls mcount after the prologue (or __fentry__
 *    before it, with -mfentry); we interpose both with the assembly stubs
 *    below. Only entries are hooked, so these calls are counted exactly
 *    but not timed: timing them needs the return address replaced by a
 *    trampoline (uftrace's way), which longjmp, exceptions and stack
 *    walkers must then be taught about. Their time comes from the CPU
 *    samples recorded alongside (report --calls says so).
 *
 * A call is not one ring record: each thread sums its calls per arc
 * (call site, function) in an open-addressing table, and writes the
 * table to its ring as MEMPROF_REC_CALL records (memprof.h) when it is
 * half full, every CALLS_FLUSH_NS or so, when the thread exits and when
 * the process exits. Calls still on the shadow stack then are counted,
 * timed up to that moment. Calls whose record found the ring full, made
 * by a signal handler that interrupted this thread's own table update,
 * made after the thread's last write (in later destructors), or left
 * unwritten by threads still running at process exit
 * (calls_process_exit) are counted in the ring header (calls_lost);
 * calls nested deeper than CALLS_DEPTH are counted but not timed
 * (calls_untimed).
 *
 * An executable linked with -pg also calls glibc's __monstartup from
 * gcrt1: we interpose it to learn so, and then pass every mcount call on
 * to glibc's too, so that its gmon.out is written as without us.
 */

#define CALLS_SLOTS 4096u /* arcs per thread table, a power of two */
#define CALLS_DEPTH 1024u /* timed shadow stack depth */
#define CALLS_FLUSH_NS 100000000 /* flush at least this often (100 ms) */

struct call_arc {
	uint64_t fn, site; /* fn 0: a free slot */
	uint64_t count;
	uint64_t ticks, self; /* total and self time, in ticks */
};

struct call_frame {
	uint64_t fn, site;
	uint64_t start, child; /* ticks at entry; ticks spent in callees */
};

struct cstate {
	struct call_arc *arcs; /* NULL: not started */
	struct call_frame *stack;
	uint32_t used;
	uint32_t depth; /* may exceed CALLS_DEPTH: those frames are untimed */
	uint64_t flush_at; /* ticks of the next periodic flush */
	int busy; /* updating the table: a signal handler's calls are counted lost */
	int off;  /* the thread's calls are not recorded (init failed, or exiting) */
	uint64_t lost, untimed; /* added to the ring header at the next flush */
	uint64_t calls; /* -pg calls counted, for pg_arc's periodic slow path */
	int flushed;    /* registered with the current ring (calls_register) */
};

static __thread struct cstate cs __attribute__((tls_model("initial-exec")));

/* Read by the assembly stubs below, hence used. */
__attribute__((used)) static int calls_on; /* NSPROF_CALLS=1 and a recorder listens */
__attribute__((used)) static int gmon_on;  /* __monstartup ran: pass mcount calls on to glibc */
__attribute__((used)) static void (*real_mcount)(void);
__attribute__((used)) static void (*real_fentry)(void);
static void (*real_monstartup)(unsigned long, unsigned long);

/* Ticks: the TSC where there is one, else CLOCK_MONOTONIC ns. They are
 * turned into ns when written, at the rate measured from the process's
 * first tick read to that moment. */
static uint64_t tick0;
static int64_t ns0;

static inline __attribute__((always_inline)) uint64_t ticks(void)
{
#ifdef HAVE_TSC
	return __rdtsc();
#else
	return (uint64_t)now_ns();
#endif
}

static uint64_t calls_flush_ticks;

static void calls_init(void)
{
	const char *s = getenv("NSPROF_CALLS");
	if (!s || strcmp(s, "1") != 0)
		return;
	tick0 = ticks();
	ns0 = now_ns();
	calls_flush_ticks = CALLS_FLUSH_NS; /* ns; about 3x that in ticks at 3 GHz */
	__atomic_store_n(&calls_on, 1, __ATOMIC_RELEASE);
}

/* ns_per_tick returns the measured ns a tick stands for. */
static double ns_per_tick(void)
{
#ifdef HAVE_TSC
	uint64_t t1;
	int64_t n1;
	/* At least 10 us of baseline: the clock reads' error stays below 0.5%. */
	do {
		n1 = now_ns();
		t1 = ticks();
	} while (n1 - ns0 < 10000);
	if (t1 <= tick0)
		return 1;
	return (double)(n1 - ns0) / (double)(t1 - tick0);
#else
	return 1;
#endif
}

/* calls_refused counts a call made once the thread's table is gone (in
 * a destructor after the thread's or process's last write) as lost, in
 * its ring while the ring is there. */
static NOINLINE void calls_refused(struct cstate *c)
{
	struct memprof_ring_header *h = ts.ring;
	if (c->off && h && ts.state == T_ACTIVE)
		__atomic_fetch_add(&h->calls_lost, 1, __ATOMIC_RELAXED);
}

/* calls_register notes c as the call table of the thread's ring. */
static void calls_register(struct cstate *c)
{
	lock(&ring_lock);
	for (int i = 0; i < MAX_RINGS; i++) {
		if (rings[i].ring && rings[i].ring == ts.ring) {
			rings[i].calls = c;
			break;
		}
	}
	unlock(&ring_lock);
}

static NOINLINE int calls_thread_init(struct cstate *c)
{
	if (c->off) {
		calls_refused(c);
		return 0;
	}
	if (!__atomic_load_n(&calls_on, __ATOMIC_ACQUIRE))
		return 0;
	c->off = 1;
	struct tstate *t = &ts;
	if (t->state != T_ACTIVE && !thread_init(t, FP()))
		return 0;
	void *m = mmap(NULL, CALLS_SLOTS * sizeof(struct call_arc) + CALLS_DEPTH * sizeof(struct call_frame), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return 0;
	c->stack = (struct call_frame *)((char *)m + CALLS_SLOTS * sizeof(struct call_arc));
	c->flush_at = ticks() + calls_flush_ticks;
	SIGNAL_FENCE();
	c->arcs = m;
	c->off = 0;
	calls_register(c);
	c->flushed = 1;
	return 1;
}

#define CALLS_MAP_BYTES (CALLS_SLOTS * sizeof(struct call_arc) + CALLS_DEPTH * sizeof(struct call_frame))

/* arc_slot returns the slot of arc (site, fn), taking a free one for a
 * new arc; NULL when the table is too full (the caller flushes). */
static inline __attribute__((always_inline)) struct call_arc *arc_slot(struct cstate *c, uint64_t fn, uint64_t site)
{
	uint64_t h = (fn * 0x9e3779b97f4a7c15ull) ^ (site * 0xc2b2ae3d27d4eb4full);
	uint32_t i = (uint32_t)(h >> 40) & (CALLS_SLOTS - 1);
	for (;;) {
		struct call_arc *a = &c->arcs[i];
		if (LIKELY(a->fn == fn && a->site == site))
			return a;
		if (a->fn == 0) {
			if (c->used >= CALLS_SLOTS / 2)
				return NULL;
			c->used++;
			a->fn = fn;
			a->site = site;
			return a;
		}
		i = (i + 1) & (CALLS_SLOTS - 1);
	}
}

/* calls_flush writes the thread's table to its ring and empties it. It
 * runs in the thread's own hooks only, never inside a signal handler
 * that interrupted the ring's writer (ts.writing). */
static NOINLINE void calls_flush(struct cstate *c)
{
	struct tstate *t = &ts;
	if (t->state != T_ACTIVE && !thread_init(t, FP())) {
		/* No ring to write to, nor to count the loss in (a fork child
		 * whose recorder went away): stop. */
		memset(c->arcs, 0, CALLS_SLOTS * sizeof(struct call_arc));
		c->used = 0;
		c->off = 1;
		return;
	}
	if (UNLIKELY(!c->flushed)) {
		/* A fork child's first write, to its own ring. */
		calls_register(c);
		c->flushed = 1;
	}
	double k = ns_per_tick();
	int64_t time = now_ns();
	begin_write(t);
	for (uint32_t i = 0; i < CALLS_SLOTS && c->used > 0; i++) {
		struct call_arc *a = &c->arcs[i];
		if (a->fn == 0)
			continue;
		uint64_t pos;
		struct memprof_call_record *r = (struct memprof_call_record *)reserve(t, sizeof *r, &pos, 1);
		if (r) {
			r->len = sizeof *r;
			r->cpu = -1;
			r->pid = t->ring->pid;
			r->time = time;
			r->type = MEMPROF_REC_CALL;
			memset(r->pad0, 0, sizeof r->pad0);
			r->fn = a->fn;
			r->site = a->site;
			r->count = a->count;
			r->ns = (uint64_t)((double)a->ticks * k);
			r->self_ns = (uint64_t)((double)a->self * k);
			__atomic_store_n(&t->ring->tail, pos + sizeof *r, __ATOMIC_RELEASE);
		} else {
			c->lost += a->count;
		}
		memset(a, 0, sizeof *a);
		c->used--;
	}
	c->used = 0;
	if (c->lost)
		__atomic_fetch_add(&t->ring->calls_lost, c->lost, __ATOMIC_RELAXED);
	if (c->untimed)
		__atomic_fetch_add(&t->ring->calls_untimed, c->untimed, __ATOMIC_RELAXED);
	c->lost = c->untimed = 0;
	end_write(t);
	c->flush_at = ticks() + calls_flush_ticks;
}

/* calls_add adds one call of fn from site, of total and self ticks. */
static inline __attribute__((always_inline)) void calls_add(struct cstate *c, uint64_t fn, uint64_t site, uint64_t total, uint64_t self, uint64_t now)
{
	if (UNLIKELY(c->busy)) {
		c->lost++; /* a signal handler interrupted this thread's update */
		return;
	}
	c->busy = 1;
	SIGNAL_FENCE();
	struct call_arc *a = arc_slot(c, fn, site);
	if (UNLIKELY(!a)) {
		if (!ts.writing) {
			calls_flush(c);
			a = arc_slot(c, fn, site);
		}
		if (!a) {
			c->lost++;
			goto out;
		}
	}
	a->count++;
	a->ticks += total;
	a->self += self;
	if (UNLIKELY(now >= c->flush_at) && !ts.writing)
		calls_flush(c);
out:
	SIGNAL_FENCE();
	c->busy = 0;
}

/* ---- -finstrument-functions ---- */

EXPORT void __cyg_profile_func_enter(void *fn, void *site)
{
	struct cstate *c = &cs;
	if (UNLIKELY(!c->arcs) && !calls_thread_init(c))
		return;
	uint32_t d = c->depth;
	if (LIKELY(d < CALLS_DEPTH)) {
		struct call_frame *f = &c->stack[d];
		f->fn = (uint64_t)(uintptr_t)fn;
		f->site = (uint64_t)(uintptr_t)site;
		f->child = 0;
		f->start = ticks();
	}
	SIGNAL_FENCE();
	c->depth = d + 1;
}

/* pop_frame ends the call on top of the shadow stack at now. */
static inline __attribute__((always_inline)) void pop_frame(struct cstate *c, uint64_t fn, uint64_t site, uint64_t now)
{
	uint32_t d = --c->depth;
	if (UNLIKELY(d >= CALLS_DEPTH)) {
		c->untimed++;
		calls_add(c, fn, site, 0, 0, now);
		return;
	}
	struct call_frame *f = &c->stack[d];
	uint64_t total = now > f->start ? now - f->start : 0;
	uint64_t self = total > f->child ? total - f->child : 0;
	if (d > 0)
		c->stack[d - 1].child += total;
	calls_add(c, f->fn, f->site, total, self, now);
}

EXPORT void __cyg_profile_func_exit(void *fn, void *site)
{
	struct cstate *c = &cs;
	if (UNLIKELY(!c->arcs) || UNLIKELY(c->depth == 0))
		return;
	uint64_t now = ticks();
	uint32_t d = c->depth - 1;
	if (LIKELY(d < CALLS_DEPTH) && UNLIKELY(c->stack[d].fn != (uint64_t)(uintptr_t)fn)) {
		/* Calls left by longjmp, whose exits never came: end them here,
		 * when fn is a little further down. */
		uint32_t j = d;
		while (j > 0 && d - j < 64 && c->stack[j].fn != (uint64_t)(uintptr_t)fn)
			j--;
		if (c->stack[j].fn != (uint64_t)(uintptr_t)fn)
			return; /* an exit without its entry (entered before we started) */
		while (c->depth - 1 > j)
			pop_frame(c, c->stack[c->depth - 1].fn, c->stack[c->depth - 1].site, now);
	}
	pop_frame(c, (uint64_t)(uintptr_t)fn, (uint64_t)(uintptr_t)site, now);
}

/* calls_thread_done counts the calls still open, then writes the table
 * and frees it: at thread exit and process exit. Later calls of the
 * thread (in later destructors) are counted lost (calls_refused). */
static void calls_thread_done(struct cstate *c)
{
	if (!c->arcs || c->off)
		return;
	uint64_t now = ticks();
	for (; c->depth > CALLS_DEPTH; c->depth--)
		c->lost++; /* open calls whose function was not kept */
	while (c->depth > 0)
		pop_frame(c, c->stack[c->depth - 1].fn, c->stack[c->depth - 1].site, now);
	if (c->used || c->lost || c->untimed)
		calls_flush(c);
	c->off = 1;
	lock(&ring_lock);
	for (int i = 0; i < MAX_RINGS; i++) {
		if (rings[i].calls == c)
			rings[i].calls = NULL;
	}
	unlock(&ring_lock);
	void *m = c->arcs;
	c->arcs = NULL;
	c->stack = NULL;
	SIGNAL_FENCE();
	munmap(m, CALLS_MAP_BYTES);
}

/*
 * At process exit the exiting thread writes its own table; the threads
 * still running then are about to be killed with theirs. Their unwritten
 * calls (their tables' counts, those open on their shadow stacks and
 * those they counted lost) go into their rings' calls_lost: read while
 * they may still be counting, so a few calls more or less.
 */
__attribute__((destructor)) static void calls_process_exit(void)
{
	calls_thread_done(&cs);
	lock(&ring_lock);
	for (int i = 0; i < MAX_RINGS; i++) {
		struct cstate *c = rings[i].calls;
		if (!c || !rings[i].ring)
			continue;
		rings[i].calls = NULL;
		struct call_arc *arcs = __atomic_load_n(&c->arcs, __ATOMIC_RELAXED);
		if (!arcs)
			continue;
		uint64_t n = c->lost + c->depth;
		for (uint32_t j = 0; j < CALLS_SLOTS; j++)
			n += __atomic_load_n(&arcs[j].count, __ATOMIC_RELAXED);
		if (n)
			__atomic_fetch_add(&rings[i].ring->calls_lost, n, __ATOMIC_RELAXED);
	}
	unlock(&ring_lock);
}

/* ---- -pg ---- */

/* pg_arc counts a call of the function at selfpc from frompc; it
 * returns 1 when the slow path (pg_slow) must run instead. It may use
 * general registers only: the stub saves no vector registers for it. */
__attribute__((used, target("general-regs-only"))) static int pg_arc(uint64_t selfpc, uint64_t frompc)
{
	struct cstate *c = &cs;
	if (UNLIKELY(!c->arcs) || UNLIKELY(c->busy))
		return 1;
	c->busy = 1;
	SIGNAL_FENCE();
	uint64_t h = (selfpc * 0x9e3779b97f4a7c15ull) ^ (frompc * 0xc2b2ae3d27d4eb4full);
	uint32_t i = (uint32_t)(h >> 40) & (CALLS_SLOTS - 1);
	int ret = 1;
	for (;;) {
		struct call_arc *a = &c->arcs[i];
		if (LIKELY(a->fn == selfpc && a->site == frompc)) {
			if (LIKELY((++c->calls & 0xffff) != 0)) {
				a->count++;
				ret = 0;
			}
			break;
		}
		if (a->fn == 0)
			break; /* a new arc: the slow path takes the slot */
		i = (i + 1) & (CALLS_SLOTS - 1);
	}
	/* Every 64 Ki calls the slow path counts the call instead (ret
	 * stays 1), and flushes the table once CALLS_FLUSH_NS passed. */
	SIGNAL_FENCE();
	c->busy = 0;
	return ret;
}

/* pg_slow counts the call pg_arc could not: the thread's first, a new
 * arc, one in a signal handler. The stub saved the vector argument
 * registers. */
__attribute__((used)) static void pg_slow(uint64_t selfpc, uint64_t frompc)
{
	struct cstate *c = &cs;
	if (UNLIKELY(!c->arcs) && !calls_thread_init(c))
		return;
	calls_add(c, selfpc, frompc, 0, 0, ticks());
}

#if defined(__x86_64__)
/*
 * mcount: called after the prologue, so (%rsp) is the return address
 * into the callee (selfpc) and 8(%rbp) the callee's return address into
 * its caller (frompc); the stack is 16-aligned at the call, as at any.
 * __fentry__: called before the prologue, (%rsp) and 8(%rsp), the stack
 * 8 bytes off that alignment. Every argument register is live: the stub
 * saves the general ones around pg_arc, and the vector ones too around
 * pg_slow. FRAME (136 or 144 bytes) realigns the stack for the calls;
 * the general registers are at 0..64(%rsp), selfpc and frompc at 72 and
 * 80. TAIL returns, or passes the call on to glibc's (PG_TAIL_GMON).
 */
#define PG_STUB(name, FRAME, frompc_load, tail)                              \
	".globl " #name "\n"                                                 \
	".type " #name ",@function\n"                                        \
	#name ":\n"                                                          \
	"	cmpl $0, calls_on(%rip)\n"                                   \
	"	je 3f\n"                                                     \
	"	subq $" FRAME ", %rsp\n"                                     \
	"	movq %rax, 0(%rsp)\n"                                        \
	"	movq %rcx, 8(%rsp)\n"                                        \
	"	movq %rdx, 16(%rsp)\n"                                       \
	"	movq %rsi, 24(%rsp)\n"                                       \
	"	movq %rdi, 32(%rsp)\n"                                       \
	"	movq %r8, 40(%rsp)\n"                                        \
	"	movq %r9, 48(%rsp)\n"                                        \
	"	movq %r10, 56(%rsp)\n"                                       \
	"	movq %r11, 64(%rsp)\n"                                       \
	"	movq " FRAME "(%rsp), %rdi\n"                                \
	"	" frompc_load "\n"                                           \
	"	movq %rdi, 72(%rsp)\n"                                       \
	"	movq %rsi, 80(%rsp)\n"                                       \
	"	call pg_arc\n"                                               \
	"	testl %eax, %eax\n"                                          \
	"	jz 2f\n"                                                     \
	"	subq $128, %rsp\n"                                           \
	"	movdqu %xmm0, 0(%rsp)\n"                                     \
	"	movdqu %xmm1, 16(%rsp)\n"                                    \
	"	movdqu %xmm2, 32(%rsp)\n"                                    \
	"	movdqu %xmm3, 48(%rsp)\n"                                    \
	"	movdqu %xmm4, 64(%rsp)\n"                                    \
	"	movdqu %xmm5, 80(%rsp)\n"                                    \
	"	movdqu %xmm6, 96(%rsp)\n"                                    \
	"	movdqu %xmm7, 112(%rsp)\n"                                   \
	"	movq 200(%rsp), %rdi\n"                                      \
	"	movq 208(%rsp), %rsi\n"                                      \
	"	call pg_slow\n"                                              \
	"	movdqu 0(%rsp), %xmm0\n"                                     \
	"	movdqu 16(%rsp), %xmm1\n"                                    \
	"	movdqu 32(%rsp), %xmm2\n"                                    \
	"	movdqu 48(%rsp), %xmm3\n"                                    \
	"	movdqu 64(%rsp), %xmm4\n"                                    \
	"	movdqu 80(%rsp), %xmm5\n"                                    \
	"	movdqu 96(%rsp), %xmm6\n"                                    \
	"	movdqu 112(%rsp), %xmm7\n"                                   \
	"	addq $128, %rsp\n"                                           \
	"2:	movq 0(%rsp), %rax\n"                                        \
	"	movq 8(%rsp), %rcx\n"                                        \
	"	movq 16(%rsp), %rdx\n"                                       \
	"	movq 24(%rsp), %rsi\n"                                       \
	"	movq 32(%rsp), %rdi\n"                                       \
	"	movq 40(%rsp), %r8\n"                                        \
	"	movq 48(%rsp), %r9\n"                                        \
	"	movq 56(%rsp), %r10\n"                                       \
	"	movq 64(%rsp), %r11\n"                                       \
	"	addq $" FRAME ", %rsp\n"                                     \
	"3:\n" tail                                                         \
	".size " #name ", .-" #name "\n"
/* PG_TAIL_GMON passes the call on to glibc's when gmon.out is being
 * made (real is where glibc's entry is kept). */
#define PG_TAIL_GMON(real)                                                   \
	"	cmpl $0, gmon_on(%rip)\n"                                    \
	"	je 4f\n"                                                     \
	"	jmp *" real "(%rip)\n"                                       \
	"4:	ret\n"

__asm__(".text\n"
	PG_STUB(mcount, "136", "movq 8(%rbp), %rsi", PG_TAIL_GMON("real_mcount"))
	PG_STUB(__fentry__, "144", "movq 152(%rsp), %rsi", PG_TAIL_GMON("real_fentry")));
/* glibc's name for the same entry, which some objects call. */
__asm__(".globl _mcount\n.set _mcount, mcount\n");
#endif

/* __monstartup is called by gcrt1 in an executable linked with -pg: its
 * gmon.out then needs glibc's mcount to see the calls too. */
EXPORT void __monstartup(unsigned long low, unsigned long high)
{
	if (!real_monstartup)
		real_monstartup = (void (*)(unsigned long, unsigned long))dlsym(RTLD_NEXT, "__monstartup");
	if (!real_mcount)
		real_mcount = (void (*)(void))dlsym(RTLD_NEXT, "mcount");
	if (!real_fentry)
		real_fentry = (void (*)(void))dlsym(RTLD_NEXT, "__fentry__");
	if (real_monstartup)
		real_monstartup(low, high);
	if (real_mcount && real_fentry)
		__atomic_store_n(&gmon_on, 1, __ATOMIC_RELEASE);
}
