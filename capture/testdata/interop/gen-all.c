/* gen-all.c: the reference-implementation oracle for nsprof/capture.
 *
 * Writes, with libsysprof-capture-4 (Sysprof 3.46), a capture holding every
 * frame type that library can write (1-15) with distinctive field values,
 * and prints to stdout, in file order, the line nsprof's capture.Dumper
 * (Start = the header's start time) must print for each frame, then
 *   HEADER start=<ns> end=<ns>
 * interop_test.go compiles this, runs it and compares.
 *
 *   gen-all OUT.syscap
 *
 * Controlling what the library does not take as a parameter:
 *  - Time: the library stamps the header start, the header end and JITMAP
 *    frames with SYSPROF_CAPTURE_CURRENT_TIME, an inline clock_gettime()
 *    call. This program defines clock_gettime() itself, which the linker
 *    binds those calls to, and so sets the library's clock (fake_now).
 *  - Order: the library writes JITMAP frames straight to the fd, before the
 *    frames still in its buffer, and flushes its buffer when a frame does
 *    not fit. The program models that buffer (same size, same rule) and
 *    prints each frame's line when the library writes the frame out.
 *  - JIT addresses: MARK | ++seq per name, deduplicated until the next
 *    JITMAP flush; the model predicts them and checks the library agrees.
 *  - Truncation: fixed-size strings are cut the library's way (strlcpy).
 *
 * Embedded file contents (checked byte for byte by the Go test):
 *   /embedded/a.bin  41000 bytes, byte i = (i*31 + (i>>8)) & 0xff
 *   fileB_path       40000 bytes, byte i = (i*17 + 5 + (i>>9)) & 0xff
 */
#ifndef _GNU_SOURCE
# define _GNU_SOURCE
#endif

#include <errno.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <sysprof-capture.h>

#include "canon.h"

#define START  INT64_C(1000000000123)        /* header start: 1000.000000123 s */
#define END    (START + INT64_C(20000000000)) /* header end: start + 20 s */
#define MARKJ  UINT64_C(0xE000000000000000)

#define CTX_HV           UINT64_C(0xffffffffffffffe0)
#define CTX_KERNEL       UINT64_C(0xffffffffffffff80)
#define CTX_USER         UINT64_C(0xfffffffffffffe00)
#define CTX_GUEST        UINT64_C(0xfffffffffffff800)
#define CTX_GUEST_KERNEL UINT64_C(0xfffffffffffff780)
#define CTX_GUEST_USER   UINT64_C(0xfffffffffffff600)

/* ---- the library's clock --------------------------------------------- */

static int64_t fake_now = START;

int
clock_gettime (clockid_t clk, struct timespec *ts)
{
  (void) clk;
  ts->tv_sec = (time_t) (fake_now / 1000000000);
  ts->tv_nsec = (long) (fake_now % 1000000000);
  return 0;
}

/* ---- the library's buffering, modelled ------------------------------- */

static SysprofCaptureWriter *w;
static size_t buf_size, buf_pos;
static char **pending;
static size_t n_pending, cap_pending;
static Line line;

static void
die (const char *what)
{
  fprintf (stderr, "gen-all: %s failed (errno %d: %s)\n", what, errno, strerror (errno));
  exit (1);
}

static size_t
align8 (size_t n)
{
  return (n + 7) & ~(size_t) 7;
}

static void
print_pending (void)
{
  for (size_t i = 0; i < n_pending; i++)
    {
      puts (pending[i]);
      free (pending[i]);
    }
  n_pending = 0;
}

/* emit2 queues `line` for a frame for which the library reserved `need`
 * bytes of its buffer and kept `used` (they differ only for
 * add_allocation, which reserves room for 64 addresses and shrinks). */
static void
emit2 (size_t need, size_t used)
{
  need = align8 (need);
  used = align8 (used);
  if (buf_size - buf_pos < need)
    {
      print_pending ();
      buf_pos = 0;
    }
  buf_pos += used;
  if (n_pending == cap_pending)
    {
      cap_pending = cap_pending ? 2 * cap_pending : 64;
      pending = realloc (pending, cap_pending * sizeof *pending);
      if (pending == NULL)
        die ("realloc");
    }
  pending[n_pending++] = strdup (line.s);
}

static void
emit (size_t len)
{
  emit2 (len, len);
}

/* ---- JIT names, modelled ---------------------------------------------- */

typedef struct {
  uint64_t addr;
  char    *name;
} Jit;

static Jit jit_pending[512];
static size_t n_jit, jit_bytes;
static uint64_t jit_seq;

static void
print_jitmap (void)
{
  if (n_jit == 0)
    return;
  canon_head (&line, START, fake_now, -1, (int32_t) getpid (), SYSPROF_CAPTURE_FRAME_JITMAP);
  canon_jitmap_n (&line, (unsigned) n_jit);
  for (size_t i = 0; i < n_jit; i++)
    {
      canon_jitmap_entry (&line, jit_pending[i].addr, jit_pending[i].name);
      free (jit_pending[i].name);
    }
  puts (line.s);
  n_jit = 0;
  jit_bytes = 0;
}

static uint64_t
jit (const char *name)
{
  size_t len = 8 + strlen (name) + 1;
  uint64_t want, got;

  for (size_t i = 0; i < n_jit; i++)
    if (strcmp (jit_pending[i].name, name) == 0)
      {
        want = jit_pending[i].addr;
        goto lookup;
      }

  /* A new name: the library first writes the pending names out when its
   * 512-entry table or its 16 KiB name buffer is full, straight to the fd. */
  if (n_jit == 512 || 4096 * 4 - jit_bytes < len)
    print_jitmap ();
  want = MARKJ | ++jit_seq;
  jit_pending[n_jit].addr = want;
  jit_pending[n_jit].name = strdup (name);
  n_jit++;
  jit_bytes += len;

lookup:
  got = sysprof_capture_writer_add_jitmap (w, name);
  if (got != want)
    {
      fprintf (stderr, "gen-all: add_jitmap(%s) = %#" PRIx64 ", model says %#" PRIx64 "\n",
               name, got, want);
      exit (1);
    }
  return got;
}

/* flush_at writes everything out with the library clock at `now`: JITMAP
 * first (written straight to the fd), then the buffer. */
static void
flush_at (int64_t now)
{
  fake_now = now;
  print_jitmap ();
  print_pending ();
  buf_pos = 0;
  if (!sysprof_capture_writer_flush (w))
    die ("flush");
}

/* ---- helpers ------------------------------------------------------------ */

/* strlcpy's result in a char[size]: what the library stores. */
static const char *
cut (const char *s, size_t size, char *out)
{
  snprintf (out, size, "%s", s);
  return out;
}

static uint8_t
file_a_byte (size_t i)
{
  return (uint8_t) (i * 31u + (i >> 8));
}

static uint8_t
file_b_byte (size_t i)
{
  return (uint8_t) (i * 17u + 5u + (i >> 9));
}

static unsigned int
backtrace3 (SysprofCaptureAddress *addrs, unsigned int n, void *data)
{
  (void) data;
  if (n < 3)
    return 0;
  addrs[0] = CTX_USER;
  addrs[1] = 0x401000;
  addrs[2] = 0x7f0000001234;
  return 3;
}

static int
backtrace3_cb (SysprofCaptureAddress *addrs, unsigned int n, void *data)
{
  return (int) backtrace3 (addrs, n, data);
}

/* ---- the frames ------------------------------------------------------ */

static void
timestamp (int64_t t, int cpu, int32_t pid)
{
  if (!sysprof_capture_writer_add_timestamp (w, t, cpu, pid))
    die ("add_timestamp");
  canon_head (&line, START, t, cpu, pid, SYSPROF_CAPTURE_FRAME_TIMESTAMP);
  emit (sizeof (SysprofCaptureTimestamp));
}

static void
process (int64_t t, int cpu, int32_t pid, const char *cmdline)
{
  if (!sysprof_capture_writer_add_process (w, t, cpu, pid, cmdline))
    die ("add_process");
  canon_head (&line, START, t, cpu, pid, SYSPROF_CAPTURE_FRAME_PROCESS);
  canon_process (&line, cmdline ? cmdline : "");
  emit (sizeof (SysprofCaptureProcess) + strlen (cmdline ? cmdline : "") + 1);
}

static void
map (int64_t t, int cpu, int32_t pid, uint64_t start, uint64_t end, uint64_t off,
     uint64_t inode, const char *file)
{
  if (!sysprof_capture_writer_add_map (w, t, cpu, pid, start, end, off, inode, file))
    die ("add_map");
  canon_head (&line, START, t, cpu, pid, SYSPROF_CAPTURE_FRAME_MAP);
  canon_map (&line, start, end, off, inode, file ? file : "", NULL);
  emit (sizeof (SysprofCaptureMap) + strlen (file ? file : "") + 1);
}

static void
fork_ (int64_t t, int cpu, int32_t pid, int32_t child)
{
  if (!sysprof_capture_writer_add_fork (w, t, cpu, pid, child))
    die ("add_fork");
  canon_head (&line, START, t, cpu, pid, SYSPROF_CAPTURE_FRAME_FORK);
  canon_fork (&line, child);
  emit (sizeof (SysprofCaptureFork));
}

static void
exit_ (int64_t t, int cpu, int32_t pid)
{
  if (!sysprof_capture_writer_add_exit (w, t, cpu, pid))
    die ("add_exit");
  canon_head (&line, START, t, cpu, pid, SYSPROF_CAPTURE_FRAME_EXIT);
  emit (sizeof (SysprofCaptureExit));
}

static void
sample (int64_t t, int cpu, int32_t pid, int32_t tid, const uint64_t *addrs, unsigned int n)
{
  if (!sysprof_capture_writer_add_sample (w, t, cpu, pid, tid, addrs, n))
    die ("add_sample");
  canon_head (&line, START, t, cpu, pid, SYSPROF_CAPTURE_FRAME_SAMPLE);
  canon_sample (&line, tid, addrs, n);
  emit (sizeof (SysprofCaptureSample) + 8 * (size_t) n);
}

static void
define_counters (int64_t t, int cpu, int32_t pid, const SysprofCaptureCounter *c, unsigned int n)
{
  if (!sysprof_capture_writer_define_counters (w, t, cpu, pid, c, n))
    die ("define_counters");
  canon_head (&line, START, t, cpu, pid, SYSPROF_CAPTURE_FRAME_CTRDEF);
  line_printf (&line, " n=%u", n);
  for (unsigned int i = 0; i < n; i++)
    canon_ctrdef_counter (&line, c[i].id, (uint8_t) c[i].type, c[i].category, c[i].name,
                          c[i].description, (uint64_t) c[i].value.v64);
  emit (sizeof (SysprofCaptureCounterDefine) + sizeof (SysprofCaptureCounter) * n);
}

static void
set_counters (int64_t t, int cpu, int32_t pid, const unsigned int *ids,
              const SysprofCaptureCounterValue *v, unsigned int n)
{
  if (!sysprof_capture_writer_set_counters (w, t, cpu, pid, ids, v, n))
    die ("set_counters");
  canon_head (&line, START, t, cpu, pid, SYSPROF_CAPTURE_FRAME_CTRSET);
  line_printf (&line, " n=%u", n);
  for (unsigned int i = 0; i < n; i++)
    canon_ctrset_value (&line, ids[i], (uint64_t) v[i].v64);
  emit (sizeof (SysprofCaptureCounterSet) + sizeof (SysprofCaptureCounterValues) * ((n + 7) / 8));
}

static void
mark (int64_t t, int cpu, int32_t pid, uint64_t duration, const char *group,
      const char *name, const char *message)
{
  char g[24], nm[40];

  if (!sysprof_capture_writer_add_mark (w, t, cpu, pid, duration, group, name, message))
    die ("add_mark");
  canon_head (&line, START, t, cpu, pid, SYSPROF_CAPTURE_FRAME_MARK);
  canon_mark (&line, (int64_t) duration, cut (group, sizeof g, g), sizeof g,
              cut (name, sizeof nm, nm), sizeof nm, message ? message : "");
  emit (sizeof (SysprofCaptureMark) + strlen (message ? message : "") + 1);
}

static void
metadata (int64_t t, int cpu, int32_t pid, const char *id, const char *value, ssize_t len)
{
  char idc[40];
  size_t n = len < 0 ? strlen (value) : (size_t) len;
  char *v = strndup (value, n);

  if (!sysprof_capture_writer_add_metadata (w, t, cpu, pid, id, value, len))
    die ("add_metadata");
  canon_head (&line, START, t, cpu, pid, SYSPROF_CAPTURE_FRAME_METADATA);
  canon_metadata (&line, cut (id, sizeof idc, idc), sizeof idc, v);
  emit (sizeof (SysprofCaptureMetadata) + n + 1);
  free (v);
}

static void
log_ (int64_t t, int cpu, int32_t pid, int severity, const char *domain, const char *message)
{
  char d[32];

  if (!sysprof_capture_writer_add_log (w, t, cpu, pid, severity, domain, message))
    die ("add_log");
  canon_head (&line, START, t, cpu, pid, SYSPROF_CAPTURE_FRAME_LOG);
  canon_log (&line, (unsigned) severity & 0xFFFF, cut (domain, sizeof d, d), sizeof d, message);
  emit (sizeof (SysprofCaptureLog) + strlen (message) + 1);
}

static void
file_chunk_line (int64_t t, int cpu, int32_t pid, const char *path, size_t len, bool last)
{
  char p[256];

  canon_head (&line, START, t, cpu, pid, SYSPROF_CAPTURE_FRAME_FILE_CHUNK);
  canon_file (&line, cut (path, sizeof p, p), sizeof p, (unsigned) len, last);
  emit (sizeof (SysprofCaptureFileChunk) + len);
}

static void
file_chunk (int64_t t, int cpu, int32_t pid, const char *path, bool last,
            const uint8_t *data, size_t len)
{
  if (!sysprof_capture_writer_add_file (w, t, cpu, pid, path, last, data, len))
    die ("add_file");
  file_chunk_line (t, cpu, pid, path, len, last);
}

/* add_file_fd reads 16 KiB - 284 bytes per chunk and ends with an empty
 * chunk marked last. */
static void
file_fd (int64_t t, int cpu, int32_t pid, const char *path, int fd, size_t size)
{
  const size_t chunk = 4096 * 4 - sizeof (SysprofCaptureFileChunk);

  if (!sysprof_capture_writer_add_file_fd (w, t, cpu, pid, path, fd))
    die ("add_file_fd");
  for (size_t off = 0; off < size; off += chunk)
    file_chunk_line (t, cpu, pid, path, size - off < chunk ? size - off : chunk, false);
  file_chunk_line (t, cpu, pid, path, 0, true);
}

static void
allocation (int64_t t, int cpu, int32_t pid, int32_t tid, uint64_t addr, int64_t size,
            const uint64_t *addrs, unsigned int n)
{
  unsigned int stored = n > 0xFFF ? 0xFFF : n; /* add_allocation_copy's cap */

  if (!sysprof_capture_writer_add_allocation_copy (w, t, cpu, pid, tid, addr, size, addrs, n))
    die ("add_allocation_copy");
  canon_head (&line, START, t, cpu, pid, SYSPROF_CAPTURE_FRAME_ALLOCATION);
  canon_allocation (&line, tid, addr, size, addrs, stored);
  emit (sizeof (SysprofCaptureAllocation) + 8 * (size_t) stored);
}

static void
allocation_bt (int64_t t, int cpu, int32_t pid, int32_t tid, uint64_t addr, int64_t size)
{
  uint64_t addrs[64];
  unsigned int n = backtrace3 (addrs, 64, NULL);

  if (!sysprof_capture_writer_add_allocation (w, t, cpu, pid, tid, addr, size, backtrace3_cb, NULL))
    die ("add_allocation");
  canon_head (&line, START, t, cpu, pid, SYSPROF_CAPTURE_FRAME_ALLOCATION);
  canon_allocation (&line, tid, addr, size, addrs, n);
  /* MAX_UNWIND_DEPTH is 64 in 3.46 */
  emit2 (sizeof (SysprofCaptureAllocation) + 8 * 64, sizeof (SysprofCaptureAllocation) + 8 * (size_t) n);
}

static void
overlay (int64_t t, int cpu, int32_t pid, uint32_t layer, const char *src, const char *dst)
{
  if (!sysprof_capture_writer_add_overlay (w, t, cpu, pid, layer, src, dst))
    die ("add_overlay");
  canon_head (&line, START, t, cpu, pid, SYSPROF_CAPTURE_FRAME_OVERLAY);
  canon_overlay (&line, layer & 0xFF, src, strlen (src), dst, strlen (dst));
  emit (sizeof (SysprofCaptureOverlay) + strlen (src) + 1 + strlen (dst) + 1);
}

static void
counter (SysprofCaptureCounter *c, unsigned int id, int type, const char *category,
         const char *name, const char *description, int64_t v64, double vdbl)
{
  memset (c, 0, sizeof *c);
  snprintf (c->category, sizeof c->category, "%s", category);
  snprintf (c->name, sizeof c->name, "%s", name);
  snprintf (c->description, sizeof c->description, "%s", description);
  c->id = id;
  c->type = type;
  if (type == SYSPROF_CAPTURE_COUNTER_DOUBLE)
    c->value.vdbl = vdbl;
  else
    c->value.v64 = v64;
}

static SysprofCaptureCounterValue
ival (int64_t v)
{
  SysprofCaptureCounterValue r;
  r.v64 = v;
  return r;
}

static SysprofCaptureCounterValue
dval (double v)
{
  SysprofCaptureCounterValue r;
  r.vdbl = v;
  return r;
}

int
main (int argc, char **argv)
{
  static uint64_t big[5000];
  static char longpath[65528];
  static uint8_t file_a[41000];
  static char msg[3001];
  const int32_t pid = 4242, tid = 4244;
  int64_t t = START;
  uint64_t a_foo, a_bar, a_py, a_foo2, fn[600];
  unsigned int base;
  SysprofCaptureCounter ctr[10];

  if (argc != 2)
    {
      fprintf (stderr, "usage: gen-all OUT.syscap\n");
      return 2;
    }

  fake_now = START;
  if (!(w = sysprof_capture_writer_new (argv[1], 0)))
    die ("sysprof_capture_writer_new");
  buf_size = sysprof_capture_writer_get_buffer_size (w);

  /* Header-only frames; a frame before the start; int16/int32 extremes. */
  timestamp (t + 1, 3, -1);
  timestamp (START - 1000, 32767, 0);
  timestamp (t += 1000, -32768, INT32_MAX);

  process (t += 1000, -1, pid, "/usr/bin/demo --name=\"x y\" C:\\tmp\tTAB é日本 ✓ \x01\x7f");
  process (t += 1000, 0, pid + 1, "");

  map (t += 1000, 1, pid, 0x400000, 0x401000, 0x1000, 123456, "/usr/bin/demo");
  /* The longest MAP frame there can be: 65528 bytes. */
  {
    size_t n = 65528 - sizeof (SysprofCaptureMap) - 1, i = 0;
    while (i < n)
      {
        char part[32];
        int k = snprintf (part, sizeof part, "/dir-%05zu", i);
        for (int j = 0; j < k && i < n; j++)
          longpath[i++] = part[j];
      }
    longpath[n] = 0;
  }
  map (t += 1000, -1, pid, UINT64_C(0x7fff00000000), UINT64_C(0x7fffffffffff),
       UINT64_C(0xffffffffffff0000), UINT64_MAX, longpath);
  map (t += 1000, 2, pid, 0, 0, 0, 0, "");

  fork_ (t += 1000, -1, pid, pid + 1);
  exit_ (t += 1000, 5, pid + 1);

  /* JIT names: deduplicated while pending. */
  a_foo = jit ("js::foo");
  a_bar = jit ("js::bar é");
  a_py = jit ("py:<lambda> \"q\"\\");
  a_foo2 = jit ("js::foo");
  if (a_foo2 != a_foo)
    {
      fprintf (stderr, "gen-all: js::foo not deduplicated\n");
      return 1;
    }
  {
    const uint64_t addrs[] = {
      CTX_KERNEL, UINT64_C(0xffffffff81000010), UINT64_C(0xffffffff81abcdef),
      CTX_USER, 0x401234, a_foo, a_bar, a_py, UINT64_C(0x7fffffffffff), 0,
      CTX_HV, CTX_GUEST, CTX_GUEST_KERNEL, CTX_GUEST_USER, UINT64_MAX,
    };
    sample (t += 1000, 2, pid, tid, addrs, sizeof addrs / sizeof addrs[0]);
  }
  sample (t += 1000, -1, INT32_MAX, INT32_MIN, NULL, 0);
  flush_at (START + 50000);

  /* After a flush the library's buffer holds stale bytes: from here on the
   * padding after strings is not zero. */
  for (unsigned int i = 0; i < 1000; i++)
    big[i] = 0x500000 + 16 * (uint64_t) i;
  sample (t += 1000, 1, pid, tid, big, 1000);
  {
    const uint64_t addrs[] = { CTX_USER, a_foo, 0x401000 };
    sample (t += 1000, 1, pid, tid, addrs, 3);
  }

  /* 600 names: the 513th makes the library write the first 512 at once,
   * ahead of the frames in its buffer. */
  for (unsigned int i = 0; i < 600; i++)
    {
      char name[32];
      snprintf (name, sizeof name, "jit::fn_%03u", i);
      fn[i] = jit (name);
      if (i == 300)
        timestamp (t += 1000, 0, pid);
    }
  {
    const uint64_t addrs[] = { fn[5], fn[511], fn[512], fn[599], a_foo };
    sample (t += 1000, 0, pid, tid, addrs, 5);
  }
  flush_at (START + 60000);

  /* Counters: 10 (int64 and double), sets spanning 2 groups. */
  base = sysprof_capture_writer_request_counter (w, 10);
  if (base != 1)
    {
      fprintf (stderr, "gen-all: request_counter = %u\n", base);
      return 1;
    }
  counter (&ctr[0], base + 0, SYSPROF_CAPTURE_COUNTER_INT64, "Memory", "Used", "Memory used", -7, 0);
  counter (&ctr[1], base + 1, SYSPROF_CAPTURE_COUNTER_DOUBLE, "CPU Percent", "Total CPU 0", "Total CPU usage", 0, 12.5);
  counter (&ctr[2], base + 2, SYSPROF_CAPTURE_COUNTER_INT64, "category-of-exactly-31-bytes-xx", "name-of-exactly-31-bytes-xxxxxx",
           "description-of-exactly-51-bytes-xxxxxxxxxxxxxxxxxxx", INT64_MIN, 0);
  counter (&ctr[3], base + 3, SYSPROF_CAPTURE_COUNTER_DOUBLE, "", "", "", 0, -0.0);
  counter (&ctr[4], base + 4, SYSPROF_CAPTURE_COUNTER_DOUBLE, "Net", "rx é", "bytes/s", 0, 1234567.0);
  counter (&ctr[5], base + 5, SYSPROF_CAPTURE_COUNTER_INT64, "Net", "tx", "\"quoted\"\n", INT64_MAX, 0);
  counter (&ctr[6], base + 6, SYSPROF_CAPTURE_COUNTER_DOUBLE, "Power", "RAPL", "W", 0, 0.1 + 0.2);
  counter (&ctr[7], base + 7, SYSPROF_CAPTURE_COUNTER_DOUBLE, "Power", "tiny", "", 0, 1e-7);
  counter (&ctr[8], base + 8, SYSPROF_CAPTURE_COUNTER_DOUBLE, "Power", "huge", "", 0, 6.02e23);
  counter (&ctr[9], base + 9, SYSPROF_CAPTURE_COUNTER_INT64, "Disk", "ops", "", 0, 0);
  define_counters (t += 1000, -1, -1, ctr, 10);
  {
    const unsigned int ids[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 };
    const SysprofCaptureCounterValue v[] = {
      ival (1 << 20), dval (99.25), ival (-1), dval (0.0001), dval (123456.0),
      ival (INT64_MIN), dval (1e21), dval (-2.5e-5), dval (1.0 / 3.0), ival (42),
    };
    set_counters (t += 1000, 4, pid, ids, v, 10);
  }
  {
    const unsigned int ids[] = { 2, 5, 9 };
    const SysprofCaptureCounterValue v[] = { dval (-0.5), dval (100.0), dval (5e-324) };
    set_counters (t += 1000, -1, -1, ids, v, 3);
  }
  {
    const unsigned int ids[] = { 10, 9, 8, 7, 6, 5, 4, 3 };
    const SysprofCaptureCounterValue v[] = {
      ival (7), dval (1.5e300), dval (-1e-300), dval (2.0), ival (0), dval (1e6), dval (999999.0), ival (-42),
    };
    set_counters (t += 1000, -1, -1, ids, v, 8);
  }

  /* Marks: an interval with a long message, truncated group and name (one
   * cut inside a UTF-8 sequence), an instant with no message. */
  for (size_t i = 0; i < sizeof msg - 1; i++)
    msg[i] = "abcdefghijklmnopqrstuvwxyz0123456789 \t\"\\"[i % 40];
  msg[sizeof msg - 1] = 0;
  mark (t += 1000, 1, pid, UINT64_C(1500000000), "nsprof-group", "frame", msg);
  mark (t += 1000, -1, pid, 0, "a-group-name-longer-than-23-bytes",
        "a-very-long-mark-name-that-exceeds-thirty-nine-bytes", "");
  mark (t += 1000, -1, pid, 1, "日本語日本語日本語", "x名前名前名前名前名前名前名前", "é");

  metadata (t += 1000, -1, -1, "org.nsprof.test-key-that-is-much-longer-than-forty-bytes",
            "line1\nline2\ttab \"quoted\" é", -1);
  metadata (t += 1000, 0, pid, "short", "abcdef", 3);
  metadata (t += 1000, 0, pid, "empty", "", -1);

  log_ (t += 1000, 3, pid, 16, "Gtk-domain-that-is-way-longer-than-32-bytes", "hello\nworld");
  log_ (t += 1000, -1, -1, 0x12345, "", "");

  /* A ~40 KB file in three chunks, the last data chunk marked last. */
  for (size_t i = 0; i < sizeof file_a; i++)
    file_a[i] = file_a_byte (i);
  file_chunk (t += 1000, -1, pid, "/embedded/a.bin", false, file_a, 20000);
  file_chunk (t, -1, pid, "/embedded/a.bin", false, file_a + 20000, 20000);
  file_chunk (t, -1, pid, "/embedded/a.bin", true, file_a + 40000, 1000);

  /* 40000 bytes through add_file_fd, under a 300-byte path cut to 255. */
  {
    char path[301];
    uint8_t *data = malloc (40000);
    int fd = memfd_create ("gen-all", 0);

    for (size_t i = 0; i < 300; i++)
      path[i] = i % 10 == 0 ? '/' : (char) ('a' + i % 26);
    path[300] = 0;
    if (fd < 0 || data == NULL)
      die ("memfd_create");
    for (size_t i = 0; i < 40000; i++)
      data[i] = file_b_byte (i);
    if (write (fd, data, 40000) != 40000 || lseek (fd, 0, SEEK_SET) != 0)
      die ("write memfd");
    file_fd (t += 1000, 2, pid, path, fd, 40000);
    close (fd);
    free (data);
  }

  for (unsigned int i = 0; i < 5000; i++)
    big[i] = 0x600000 + 8 * (uint64_t) i;
  allocation (t += 1000, 2, pid, tid, 0x55550000, 4096, big, 5);
  allocation (t += 1000, 2, pid, tid, 0x55550000, 0, NULL, 0);
  allocation (t += 1000, -1, pid, tid, UINT64_C(0xffff800000000000), INT64_C(1) << 40, big, 5000);
  allocation (t += 1000, 0, pid, INT32_MIN, 1, -1, big, 1);
  allocation_bt (t += 1000, 1, pid, tid, 0x7f0000000000, 24);

  overlay (t += 1000, -1, pid, 3, "/var/lib/containers/storage/overlay/abc/diff", "/");
  overlay (t += 1000, -1, pid, 255, "", "");
  overlay (t += 1000, -1, pid, 256 + 7, "/src é", "/mnt/dst");

  mark (START + INT64_C(10000000000), -1, -1, 0, "last", "last", "far in the future");

  flush_at (END);
  sysprof_capture_writer_unref (w); /* flushes again: patches end = END */
  printf ("HEADER start=%" PRId64 " end=%" PRId64 "\n", (int64_t) START, (int64_t) END);
  return 0;
}
