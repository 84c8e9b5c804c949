//go:build ignore

// (The build constraint keeps the go tool from treating this C program as
// part of the Go package in this directory; gcc reads it as a comment.)

/* bench.c: libsysprof-capture's writer on the workloads of
 * bench/capture-writer.sh (the Go side is main.go; keep them identical):
 *   samples: N SAMPLE frames, 32-address callchains
 *   marks:   N MARK frames, group "nsprof", name "bench-mark", message
 *            "short message", duration 500
 * Each workload (timed) creates its file in DIR, samples.syscap and
 * marks.syscap, with the default buffer size, writes N frames and closes the
 * writer (the final flush included). The files must not exist: the script
 * removes them between runs, outside the timed process (main.go says why).
 *
 *   bench DIR [N]     prints: impl=c workload=<w> frames=<N> bytes=<size> seconds=<s> frames_per_s=<r>
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sysprof-capture.h>

static double
now (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* Fails if path exists: truncating it would free its pages inside the timing. */
static void
must_not_exist (const char *path)
{
  struct stat st;

  if (lstat (path, &st) == 0)
    {
      fprintf (stderr, "%s exists; remove it first\n", path);
      exit (1);
    }
}

static void
report (const char *workload, const char *path, long n, double secs)
{
  struct stat st;

  if (stat (path, &st) != 0)
    {
      perror (path);
      exit (1);
    }
  printf ("impl=c workload=%s frames=%ld bytes=%lld seconds=%.6f frames_per_s=%.0f\n",
          workload, n, (long long) st.st_size, secs, (double) n / secs);
  fflush (stdout);
}

int
main (int argc, char **argv)
{
  SysprofCaptureWriter *w;
  SysprofCaptureAddress addrs[32];
  char out[4096];
  long n = 1000000;
  int64_t t0 = 1000000000;
  double start;

  if (argc < 2 || argc > 3)
    {
      fprintf (stderr, "usage: bench DIR [N]\n");
      return 2;
    }
  if (argc == 3)
    n = atol (argv[2]);

  /* samples */
  for (int i = 0; i < 32; i++)
    addrs[i] = 0x400000 + (uint64_t) i * 0x1000;
  snprintf (out, sizeof out, "%s/samples.syscap", argv[1]);
  must_not_exist (out);
  start = now ();
  if (!(w = sysprof_capture_writer_new (out, 0)))
    {
      perror (out);
      return 1;
    }
  for (long i = 0; i < n; i++)
    {
      addrs[0] = 0x400000 + (uint64_t) i;
      if (!sysprof_capture_writer_add_sample (w, t0 + i * 1000, (int) (i & 7), 1234,
                                              1234 + (int32_t) (i & 3), addrs, 32))
        {
          fprintf (stderr, "add_sample failed\n");
          return 1;
        }
    }
  sysprof_capture_writer_unref (w);
  report ("samples", out, n, now () - start);

  /* marks */
  snprintf (out, sizeof out, "%s/marks.syscap", argv[1]);
  must_not_exist (out);
  start = now ();
  if (!(w = sysprof_capture_writer_new (out, 0)))
    {
      perror (out);
      return 1;
    }
  for (long i = 0; i < n; i++)
    if (!sysprof_capture_writer_add_mark (w, t0 + i * 1000, -1, 1234, 500, "nsprof",
                                          "bench-mark", "short message"))
      {
        fprintf (stderr, "add_mark failed\n");
        return 1;
      }
  sysprof_capture_writer_unref (w);
  report ("marks", out, n, now () - start);
  return 0;
}
