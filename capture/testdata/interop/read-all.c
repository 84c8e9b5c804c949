/* read-all.c: reads a capture with libsysprof-capture-4's reader (Sysprof
 * 3.46) and prints on stdout one line per frame, in the format of nsprof's
 * capture.Dumper with Start = the header's start time (see canon.h), then
 *   END frames=<n> offset=<pos> ok=<0|1>
 * offset is the file offset after the last frame read; ok is 1 only if the
 * reader read every frame up to the end of the file. A 3.46 reader stops
 * early at a frame type it does not know (peek_type returns false), and a
 * read_<type> function returns NULL for a frame it finds malformed: both
 * end with ok=0 and a "STOP ..." line on stderr saying where and why.
 * stderr also gets, last, the reader's view of the header time range:
 *   HEADER start=<ns> end=<ns>       (get_start_time, get_end_time)
 *
 *   read-all IN.syscap
 */
#ifndef _GNU_SOURCE
# define _GNU_SOURCE
#endif

#include <errno.h>
#include <sys/stat.h>

#include <sysprof-capture.h>

#include "canon.h"

static int
is_hex (const char *s)
{
  if (*s == 0)
    return 0;
  for (; *s; s++)
    if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f') || (*s >= 'A' && *s <= 'F')))
      return 0;
  return 1;
}

int
main (int argc, char **argv)
{
  SysprofCaptureReader *r;
  SysprofCaptureFrameType type;
  struct stat st;
  Line l = { 0 };
  int64_t start, offset = 256;
  size_t n = 0;
  int ok = 0;

  if (argc != 2)
    {
      fprintf (stderr, "usage: read-all IN.syscap\n");
      return 2;
    }
  if (stat (argv[1], &st) != 0)
    {
      perror (argv[1]);
      return 1;
    }
  if (!(r = sysprof_capture_reader_new (argv[1])))
    {
      fprintf (stderr, "read-all: sysprof_capture_reader_new(%s) failed: %s\n", argv[1], strerror (errno));
      return 1;
    }
  start = sysprof_capture_reader_get_start_time (r);

  for (;;)
    {
      SysprofCaptureFrame fr;
      const char *failed = NULL;

      if (!sysprof_capture_reader_peek_type (r, &type))
        {
          if (offset < (int64_t) st.st_size)
            {
              memset (&fr, 0, sizeof fr);
              sysprof_capture_reader_peek_frame (r, &fr);
              fprintf (stderr, "STOP peek_type false at offset=%" PRId64 " type=%u len=%u\n", offset,
                      (unsigned) fr.type, (unsigned) fr.len);
            }
          else
            ok = offset == (int64_t) st.st_size;
          break;
        }
      if (!sysprof_capture_reader_peek_frame (r, &fr))
        {
          fprintf (stderr, "STOP peek_frame false at offset=%" PRId64 "\n", offset);
          break;
        }

      switch (type)
        {
        case SYSPROF_CAPTURE_FRAME_TIMESTAMP: {
          const SysprofCaptureTimestamp *f = sysprof_capture_reader_read_timestamp (r);
          if (!f) { failed = "read_timestamp"; break; }
          canon_head (&l, start, f->frame.time, f->frame.cpu, f->frame.pid, type);
          break;
        }
        case SYSPROF_CAPTURE_FRAME_SAMPLE: {
          const SysprofCaptureSample *f = sysprof_capture_reader_read_sample (r);
          if (!f) { failed = "read_sample"; break; }
          canon_head (&l, start, f->frame.time, f->frame.cpu, f->frame.pid, type);
          canon_sample (&l, f->tid, f->addrs, f->n_addrs);
          break;
        }
        case SYSPROF_CAPTURE_FRAME_MAP: {
          const SysprofCaptureMap *f = sysprof_capture_reader_read_map (r);
          const char *id = NULL;
          size_t fl;
          if (!f) { failed = "read_map"; break; }
          /* Sysprof 45+ build-id: "file\0@hex\0"; 3.46 ignores it. */
          fl = strlen (f->filename);
          if (sizeof *f + fl + 2 < f->frame.len && f->filename[fl + 1] == '@' &&
              memchr (&f->filename[fl + 2], 0, f->frame.len - sizeof *f - fl - 2) &&
              is_hex (&f->filename[fl + 2]))
            id = &f->filename[fl + 2];
          canon_head (&l, start, f->frame.time, f->frame.cpu, f->frame.pid, type);
          canon_map (&l, f->start, f->end, f->offset, f->inode, f->filename, id);
          break;
        }
        case SYSPROF_CAPTURE_FRAME_PROCESS: {
          const SysprofCaptureProcess *f = sysprof_capture_reader_read_process (r);
          if (!f) { failed = "read_process"; break; }
          canon_head (&l, start, f->frame.time, f->frame.cpu, f->frame.pid, type);
          canon_process (&l, f->cmdline);
          break;
        }
        case SYSPROF_CAPTURE_FRAME_FORK: {
          const SysprofCaptureFork *f = sysprof_capture_reader_read_fork (r);
          if (!f) { failed = "read_fork"; break; }
          canon_head (&l, start, f->frame.time, f->frame.cpu, f->frame.pid, type);
          canon_fork (&l, f->child_pid);
          break;
        }
        case SYSPROF_CAPTURE_FRAME_EXIT: {
          const SysprofCaptureExit *f = sysprof_capture_reader_read_exit (r);
          if (!f) { failed = "read_exit"; break; }
          canon_head (&l, start, f->frame.time, f->frame.cpu, f->frame.pid, type);
          break;
        }
        case SYSPROF_CAPTURE_FRAME_JITMAP: {
          const SysprofCaptureJitmap *f = sysprof_capture_reader_read_jitmap (r);
          SysprofCaptureJitmapIter it;
          SysprofCaptureAddress addr;
          const char *name;
          if (!f) { failed = "read_jitmap"; break; }
          canon_head (&l, start, f->frame.time, f->frame.cpu, f->frame.pid, type);
          canon_jitmap_n (&l, f->n_jitmaps);
          sysprof_capture_jitmap_iter_init (&it, f);
          while (sysprof_capture_jitmap_iter_next (&it, &addr, &name))
            canon_jitmap_entry (&l, addr, name);
          break;
        }
        case SYSPROF_CAPTURE_FRAME_CTRDEF: {
          const SysprofCaptureCounterDefine *f = sysprof_capture_reader_read_counter_define (r);
          if (!f) { failed = "read_counter_define"; break; }
          canon_head (&l, start, f->frame.time, f->frame.cpu, f->frame.pid, type);
          line_printf (&l, " n=%u", (unsigned) f->n_counters);
          for (unsigned int i = 0; i < f->n_counters; i++)
            {
              const SysprofCaptureCounter *c = &f->counters[i];
              canon_ctrdef_counter (&l, c->id, (uint8_t) c->type, c->category, c->name,
                                    c->description, (uint64_t) c->value.v64);
            }
          break;
        }
        case SYSPROF_CAPTURE_FRAME_CTRSET: {
          const SysprofCaptureCounterSet *f = sysprof_capture_reader_read_counter_set (r);
          unsigned int nv = 0;
          if (!f) { failed = "read_counter_set"; break; }
          canon_head (&l, start, f->frame.time, f->frame.cpu, f->frame.pid, type);
          for (unsigned int g = 0; g < f->n_values; g++)
            for (unsigned int i = 0; i < 8; i++)
              nv += f->values[g].ids[i] != 0;
          line_printf (&l, " n=%u", nv);
          for (unsigned int g = 0; g < f->n_values; g++)
            for (unsigned int i = 0; i < 8; i++)
              if (f->values[g].ids[i] != 0)
                canon_ctrset_value (&l, f->values[g].ids[i], (uint64_t) f->values[g].values[i].v64);
          break;
        }
        case SYSPROF_CAPTURE_FRAME_MARK: {
          const SysprofCaptureMark *f = sysprof_capture_reader_read_mark (r);
          if (!f) { failed = "read_mark"; break; }
          canon_head (&l, start, f->frame.time, f->frame.cpu, f->frame.pid, type);
          canon_mark (&l, f->duration, f->group, sizeof f->group, f->name, sizeof f->name, f->message);
          break;
        }
        case SYSPROF_CAPTURE_FRAME_METADATA: {
          const SysprofCaptureMetadata *f = sysprof_capture_reader_read_metadata (r);
          if (!f) { failed = "read_metadata"; break; }
          canon_head (&l, start, f->frame.time, f->frame.cpu, f->frame.pid, type);
          canon_metadata (&l, f->id, sizeof f->id, f->metadata);
          break;
        }
        case SYSPROF_CAPTURE_FRAME_LOG: {
          const SysprofCaptureLog *f = sysprof_capture_reader_read_log (r);
          if (!f) { failed = "read_log"; break; }
          canon_head (&l, start, f->frame.time, f->frame.cpu, f->frame.pid, type);
          canon_log (&l, f->severity, f->domain, sizeof f->domain, f->message);
          break;
        }
        case SYSPROF_CAPTURE_FRAME_FILE_CHUNK: {
          const SysprofCaptureFileChunk *f = sysprof_capture_reader_read_file (r);
          if (!f) { failed = "read_file"; break; }
          canon_head (&l, start, f->frame.time, f->frame.cpu, f->frame.pid, type);
          canon_file (&l, f->path, sizeof f->path, f->len, f->is_last);
          break;
        }
        case SYSPROF_CAPTURE_FRAME_ALLOCATION: {
          const SysprofCaptureAllocation *f = sysprof_capture_reader_read_allocation (r);
          if (!f) { failed = "read_allocation"; break; }
          canon_head (&l, start, f->frame.time, f->frame.cpu, f->frame.pid, type);
          canon_allocation (&l, f->tid, f->alloc_addr, f->alloc_size, f->addrs, f->n_addrs);
          break;
        }
        case SYSPROF_CAPTURE_FRAME_OVERLAY: {
          const SysprofCaptureOverlay *f = sysprof_capture_reader_read_overlay (r);
          if (!f) { failed = "read_overlay"; break; }
          canon_head (&l, start, f->frame.time, f->frame.cpu, f->frame.pid, type);
          canon_overlay (&l, f->layer, f->data, f->src_len, &f->data[f->src_len + 1], f->dst_len);
          break;
        }
        default:
          failed = "unhandled type";
          break;
        }

      if (failed)
        {
          fprintf (stderr, "STOP %s returned NULL at offset=%" PRId64 " type=%u len=%u\n", failed, offset,
                  (unsigned) fr.type, (unsigned) fr.len);
          break;
        }
      puts (l.s);
      offset += fr.len;
      n++;
    }

  fprintf (stderr, "HEADER start=%" PRId64 " end=%" PRId64 "\n", start, sysprof_capture_reader_get_end_time (r));
  printf ("END frames=%zu offset=%" PRId64 " ok=%d\n", n, offset, ok);
  sysprof_capture_reader_unref (r);
  free (l.s);
  return 0;
}
