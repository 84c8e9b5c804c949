/* libnsprof-speedtrack.so: the LD_PRELOAD fallback of nsprof record
 * --speedtrack, for where user probes cannot be placed (no uprobe PMU, or
 * a recorder without root). GLib calls g_main_context_dispatch directly
 * inside libglib (it links with -Bsymbolic-functions), so no preload can
 * wrap it; but each main-loop iteration waits in poll(), which libglib
 * calls through its PLT. On the main thread of each process, the time
 * from the return of one of GLib's polls to the start of the next (the
 * check and dispatch of an iteration, and the prepare and query of the
 * next) is written as a MARK frame of group "mainloop", name
 * "busy between polls", to the capture file whose descriptor
 * NSPROF_SPEEDTRACK_FD names. nsprof wrote the file's header; the frames
 * are appended with one write() each (the descriptor's offset is shared,
 * so processes do not overwrite each other's frames). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

/* The layout of a Sysprof MARK frame (capture/format.go). */
enum {
	frame_header = 24,
	mark_fixed = 96,
	mark_group_len = 24,
	mark_name_len = 40,
	type_mark = 10,
};

static const char mark_group[] = "mainloop";
static const char mark_name[] = "busy between polls";

static int out_fd = -1;
static int (*real_poll)(struct pollfd *, nfds_t, int);

/* The end of the last GLib poll of process last_pid's main thread. */
static int64_t last_return;
static pid_t last_pid;
/* The last caller looked up, and whether it is in libglib. */
static void *known_caller;
static int known_glib;

__attribute__((constructor)) static void speedtrack_init(void)
{
	const char *s = getenv("NSPROF_SPEEDTRACK_FD");
	if (s != NULL && *s != '\0') {
		char *end;
		long fd = strtol(s, &end, 10);
		if (*end == '\0' && fd >= 0)
			out_fd = (int)fd;
	}
	real_poll = (int (*)(struct pollfd *, nfds_t, int))dlsym(RTLD_NEXT, "poll");
}

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* is_glib reports whether the code address caller is in libglib-2.0. */
static int is_glib(void *caller)
{
	Dl_info info;
	if (caller == known_caller)
		return known_glib;
	known_caller = caller;
	known_glib = dladdr(caller, &info) != 0 && info.dli_fname != NULL &&
		     strstr(info.dli_fname, "libglib-2.0.so") != NULL;
	return known_glib;
}

static void put64(unsigned char *b, uint64_t v) { memcpy(b, &v, 8); }

/* write_mark appends the MARK frame of a busy interval. */
static void write_mark(pid_t pid, int64_t start, int64_t duration)
{
	unsigned char b[mark_fixed + 8];
	uint16_t len = sizeof b;
	int16_t cpu = -1;
	int32_t p = pid;
	memset(b, 0, sizeof b);
	memcpy(b, &len, 2);
	memcpy(b + 2, &cpu, 2);
	memcpy(b + 4, &p, 4);
	put64(b + 8, (uint64_t)start);
	b[16] = type_mark;
	put64(b + frame_header, (uint64_t)duration);
	memcpy(b + 32, mark_group, sizeof mark_group);
	memcpy(b + 32 + mark_group_len, mark_name, sizeof mark_name);
	/* The message is empty: its NUL and the padding are the zeros. */
	if (write(out_fd, b, sizeof b) != (ssize_t)sizeof b)
		out_fd = -1; /* the file is gone or full: stop */
}

EXPORT int poll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	pid_t pid;
	int64_t t;
	int r;

	if (real_poll == NULL)
		speedtrack_init();
	pid = getpid();
	if (out_fd < 0 || (pid_t)syscall(SYS_gettid) != pid || !is_glib(__builtin_return_address(0)))
		return real_poll(fds, nfds, timeout);
	t = now_ns();
	if (last_pid == pid && last_return > 0 && t > last_return)
		write_mark(pid, last_return, t - last_return);
	r = real_poll(fds, nfds, timeout);
	last_return = now_ns();
	last_pid = pid;
	return r;
}
