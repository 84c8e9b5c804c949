/* canon.h: the canonical one-line text of a capture frame, byte for byte as
 * nsprof's capture.Dumper (capture/text.go) prints it, for the C programs
 * that check nsprof/capture against libsysprof-capture (interop_test.go).
 *
 * Line format (Dumper.Append):
 *   <±sec.nsec relative to Start> cpu=<i16> pid=<i32> <TYPE><fields>
 * Strings are quoted like Go's %q (strconv.Quote), counter doubles printed
 * like strconv.FormatFloat(v, 'g', -1, 64).
 *
 * Limit: Go's %q prints non-printable non-ASCII runes as \uXXXX. canon_quote
 * knows only a few of them (C1 controls, NBSP, soft hyphen, zero-width and
 * line/paragraph separators, BOM, private use); test strings must use other
 * non-ASCII runes only if they are printable (é, 日本, ✓ …).
 *
 * Header-only, no dependency beyond libc.
 */
#ifndef NSPROF_CANON_H
#define NSPROF_CANON_H

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A growable line. */
typedef struct {
  char  *s;
  size_t len, cap;
} Line;

static void
line_grow (Line *l, size_t n)
{
  if (l->len + n + 1 <= l->cap)
    return;
  while (l->len + n + 1 > l->cap)
    l->cap = l->cap ? 2 * l->cap : 256;
  l->s = realloc (l->s, l->cap);
  if (l->s == NULL)
    {
      perror ("realloc");
      exit (2);
    }
}

static void
line_putn (Line *l, const char *p, size_t n)
{
  line_grow (l, n);
  memcpy (l->s + l->len, p, n);
  l->len += n;
  l->s[l->len] = 0;
}

static void
line_puts (Line *l, const char *p)
{
  line_putn (l, p, strlen (p));
}

static void
line_printf (Line *l, const char *fmt, ...) __attribute__ ((format (printf, 2, 3)));

static void
line_printf (Line *l, const char *fmt, ...)
{
  va_list ap;
  int n;

  va_start (ap, fmt);
  n = vsnprintf (NULL, 0, fmt, ap);
  va_end (ap);
  line_grow (l, (size_t) n);
  va_start (ap, fmt);
  vsnprintf (l->s + l->len, (size_t) n + 1, fmt, ap);
  va_end (ap);
  l->len += (size_t) n;
}

static void
line_reset (Line *l)
{
  l->len = 0;
  if (l->s)
    l->s[0] = 0;
}

/* appendTime: sign, seconds, '.', nine digits of nanoseconds. */
static void
canon_time (Line *l, int64_t ns)
{
  uint64_t u;

  if (ns < 0)
    {
      line_putn (l, "-", 1);
      u = (uint64_t) 0 - (uint64_t) ns;
    }
  else
    {
      line_putn (l, "+", 1);
      u = (uint64_t) ns;
    }
  line_printf (l, "%" PRIu64 ".%09" PRIu64, u / 1000000000u, u % 1000000000u);
}

/* Go's utf8.DecodeRune: returns the width (0 for invalid) and the rune. */
static int
canon_utf8 (const unsigned char *p, size_t n, uint32_t *r)
{
  unsigned char b0 = p[0];
  unsigned char lo = 0x80, hi = 0xBF;
  int w;

  if (b0 < 0x80)
    {
      *r = b0;
      return 1;
    }
  if (b0 >= 0xC2 && b0 <= 0xDF)
    w = 2, *r = b0 & 0x1F;
  else if (b0 >= 0xE0 && b0 <= 0xEF)
    {
      w = 3, *r = b0 & 0x0F;
      if (b0 == 0xE0)
        lo = 0xA0;
      else if (b0 == 0xED)
        hi = 0x9F;
    }
  else if (b0 >= 0xF0 && b0 <= 0xF4)
    {
      w = 4, *r = b0 & 0x07;
      if (b0 == 0xF0)
        lo = 0x90;
      else if (b0 == 0xF4)
        hi = 0x8F;
    }
  else
    return 0;
  if ((size_t) w > n)
    return 0;
  if (p[1] < lo || p[1] > hi)
    return 0;
  *r = (*r << 6) | (p[1] & 0x3F);
  for (int i = 2; i < w; i++)
    {
      if (p[i] < 0x80 || p[i] > 0xBF)
        return 0;
      *r = (*r << 6) | (p[i] & 0x3F);
    }
  return w;
}

/* The non-ASCII runes Go's strconv.IsPrint rejects that canon_quote knows. */
static int
canon_unprintable (uint32_t r)
{
  return (r >= 0x80 && r <= 0xA0) || r == 0xAD ||
         (r >= 0x200B && r <= 0x200F) || r == 0x2028 || r == 0x2029 ||
         (r >= 0x202A && r <= 0x202E) || r == 0xFEFF ||
         (r >= 0xE000 && r <= 0xF8FF) || (r >= 0xFFF9 && r <= 0xFFFB) ||
         r >= 0xF0000;
}

/* Go's %q of the n bytes at p. */
static void
canon_quoten (Line *l, const char *s, size_t n)
{
  const unsigned char *p = (const unsigned char *) s;
  size_t i = 0;

  line_putn (l, "\"", 1);
  while (i < n)
    {
      uint32_t r;
      int w = canon_utf8 (p + i, n - i, &r);

      if (w == 0)
        {
          line_printf (l, "\\x%02x", p[i]);
          i++;
          continue;
        }
      if (w == 1)
        {
          char c = (char) r;
          switch (c)
            {
            case '"': line_puts (l, "\\\""); break;
            case '\\': line_puts (l, "\\\\"); break;
            case '\a': line_puts (l, "\\a"); break;
            case '\b': line_puts (l, "\\b"); break;
            case '\f': line_puts (l, "\\f"); break;
            case '\n': line_puts (l, "\\n"); break;
            case '\r': line_puts (l, "\\r"); break;
            case '\t': line_puts (l, "\\t"); break;
            case '\v': line_puts (l, "\\v"); break;
            default:
              if (r < 0x20 || r == 0x7F)
                line_printf (l, "\\x%02x", (unsigned) r);
              else
                line_putn (l, &c, 1);
            }
        }
      else if (canon_unprintable (r))
        {
          if (r < 0x10000)
            line_printf (l, "\\u%04x", (unsigned) r);
          else
            line_printf (l, "\\U%08x", (unsigned) r);
        }
      else
        line_putn (l, s + i, (size_t) w);
      i += (size_t) w;
    }
  line_putn (l, "\"", 1);
}

static void
canon_quote (Line *l, const char *s)
{
  canon_quoten (l, s, strlen (s));
}

/* strlen bounded by n: the string in a fixed-size char array. */
static size_t
canon_strnlen (const char *s, size_t n)
{
  const char *z = memchr (s, 0, n);
  return z ? (size_t) (z - s) : n;
}

/* strconv.FormatFloat(v, 'g', -1, 64): the shortest digits that round-trip,
 * in %e form when the exponent is < -4 or >= 6 (shortest mode's eprec),
 * with at least two exponent digits. */
static void
canon_float (Line *l, double v)
{
  char buf[64], digits[32];
  int nd = 0, exp10, prec;
  char *e;

  if (isnan (v))
    {
      line_puts (l, "NaN");
      return;
    }
  if (isinf (v))
    {
      line_puts (l, v < 0 ? "-Inf" : "+Inf");
      return;
    }
  if (v == 0)
    {
      line_puts (l, signbit (v) ? "-0" : "0");
      return;
    }
  if (v < 0)
    {
      line_putn (l, "-", 1);
      v = -v;
    }
  for (prec = 1; prec <= 17; prec++)
    {
      snprintf (buf, sizeof buf, "%.*e", prec - 1, v);
      if (strtod (buf, NULL) == v)
        break;
    }
  /* buf is d[.ddd]e±XX */
  for (char *p = buf; *p && *p != 'e'; p++)
    if (*p >= '0' && *p <= '9')
      digits[nd++] = *p;
  while (nd > 1 && digits[nd - 1] == '0')
    nd--;
  digits[nd] = 0;
  e = strchr (buf, 'e');
  exp10 = atoi (e + 1);
  if (exp10 < -4 || exp10 >= 6)
    {
      line_putn (l, digits, 1);
      if (nd > 1)
        {
          line_putn (l, ".", 1);
          line_putn (l, digits + 1, (size_t) nd - 1);
        }
      line_printf (l, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
      return;
    }
  /* %f form with max(nd - dp, 0) decimals, dp = exp10 + 1. */
  {
    int dp = exp10 + 1;
    if (dp <= 0)
      {
        line_puts (l, "0.");
        for (int i = 0; i < -dp; i++)
          line_putn (l, "0", 1);
        line_putn (l, digits, (size_t) nd);
      }
    else
      {
        for (int i = 0; i < dp; i++)
          line_putn (l, i < nd ? &digits[i] : "0", 1);
        if (nd > dp)
          {
            line_putn (l, ".", 1);
            line_putn (l, digits + dp, (size_t) (nd - dp));
          }
      }
  }
}

/* Counter types learnt from CTRDEF frames, as the Dumper keeps them. */
typedef struct {
  uint32_t id;
  uint8_t  type;
} CanonCounterType;

static CanonCounterType *canon_ctypes;
static size_t canon_n_ctypes, canon_cap_ctypes;

static void
canon_set_ctype (uint32_t id, uint8_t type)
{
  for (size_t i = 0; i < canon_n_ctypes; i++)
    if (canon_ctypes[i].id == id)
      {
        canon_ctypes[i].type = type;
        return;
      }
  if (canon_n_ctypes == canon_cap_ctypes)
    {
      canon_cap_ctypes = canon_cap_ctypes ? 2 * canon_cap_ctypes : 64;
      canon_ctypes = realloc (canon_ctypes, canon_cap_ctypes * sizeof *canon_ctypes);
      if (canon_ctypes == NULL)
        exit (2);
    }
  canon_ctypes[canon_n_ctypes].id = id;
  canon_ctypes[canon_n_ctypes].type = type;
  canon_n_ctypes++;
}

static uint8_t
canon_ctype (uint32_t id)
{
  for (size_t i = 0; i < canon_n_ctypes; i++)
    if (canon_ctypes[i].id == id)
      return canon_ctypes[i].type;
  return 0; /* the Dumper's zero value: int64 */
}

/* appendValue: a counter value by its type. */
static void
canon_value (Line *l, uint8_t type, uint64_t raw)
{
  if (type == 1)
    {
      double d;
      memcpy (&d, &raw, sizeof d);
      canon_float (l, d);
    }
  else
    line_printf (l, "%" PRId64, (int64_t) raw);
}

static const char *
canon_ctype_name (uint8_t type, char buf[32])
{
  if (type == 0)
    return "int64";
  if (type == 1)
    return "double";
  snprintf (buf, 32, "countertype%u", type);
  return buf;
}

/* appendAddrs */
static void
canon_addrs (Line *l, const uint64_t *a, unsigned int n)
{
  line_printf (l, " n=%u", n);
  for (unsigned int i = 0; i < n; i++)
    {
      uint64_t v;
      const char *name = NULL;

      memcpy (&v, &a[i], sizeof v);
      line_puts (l, i == 0 ? " addrs=" : ",");
      switch (v)
        {
        case 0xffffffffffffffe0ull: name = "[hv]"; break;
        case 0xffffffffffffff80ull: name = "[kernel]"; break;
        case 0xfffffffffffffe00ull: name = "[user]"; break;
        case 0xfffffffffffff800ull: name = "[guest]"; break;
        case 0xfffffffffffff780ull: name = "[guest-kernel]"; break;
        case 0xfffffffffffff600ull: name = "[guest-user]"; break;
        default: break;
        }
      if (name)
        line_puts (l, name);
      else
        line_printf (l, "0x%" PRIx64, v);
    }
}

/* Go's %#x of an unsigned value: "0x0" for 0, unlike C's %#x. */
static void
canon_hex (Line *l, uint64_t v)
{
  line_printf (l, "0x%" PRIx64, v);
}

static const char *const canon_type_names[] = {
  "TYPE0", "TIMESTAMP", "SAMPLE", "MAP", "PROCESS", "FORK", "EXIT", "JITMAP",
  "CTRDEF", "CTRSET", "MARK", "METADATA", "LOG", "FILE_CHUNK", "ALLOCATION",
  "OVERLAY", "TRACE", "DBUS_MESSAGE",
};

/* The common start of every line. */
static void
canon_head (Line *l, int64_t start, int64_t time, int cpu, int32_t pid, int type)
{
  line_reset (l);
  canon_time (l, time - start);
  line_printf (l, " cpu=%d pid=%" PRId32 " ", (int) (int16_t) cpu, pid);
  if (type >= 0 && type < (int) (sizeof canon_type_names / sizeof canon_type_names[0]))
    line_puts (l, canon_type_names[type]);
  else
    line_printf (l, "TYPE%d", type);
}

/* Per-type tails, each appended after canon_head. */

static void
canon_sample (Line *l, int32_t tid, const uint64_t *addrs, unsigned int n)
{
  line_printf (l, " tid=%" PRId32, tid);
  canon_addrs (l, addrs, n);
}

static void
canon_map (Line *l, uint64_t start, uint64_t end, uint64_t off, uint64_t inode,
           const char *file, const char *build_id)
{
  line_putn (l, " ", 1);
  canon_hex (l, start);
  line_putn (l, "-", 1);
  canon_hex (l, end);
  line_puts (l, " off=");
  canon_hex (l, off);
  line_printf (l, " inode=%" PRIu64 " file=", inode);
  canon_quote (l, file);
  if (build_id && *build_id)
    line_printf (l, " build-id=%s", build_id);
}

static void
canon_process (Line *l, const char *cmdline)
{
  line_puts (l, " cmdline=");
  canon_quote (l, cmdline);
}

static void
canon_fork (Line *l, int32_t child)
{
  line_printf (l, " child=%" PRId32, child);
}

static void
canon_jitmap_n (Line *l, unsigned int n)
{
  line_printf (l, " n=%u", n);
}

static void
canon_jitmap_entry (Line *l, uint64_t addr, const char *name)
{
  line_putn (l, " ", 1);
  canon_hex (l, addr);
  line_putn (l, "=", 1);
  canon_quote (l, name);
}

/* One counter of a CTRDEF; category, name and description are the fixed
 * arrays (32, 32, 52 bytes), read up to their first NUL. */
static void
canon_ctrdef_counter (Line *l, uint32_t id, uint8_t type, const char *category,
                      const char *name, const char *description, uint64_t value)
{
  char tb[32];

  canon_set_ctype (id, type);
  line_printf (l, " [id=%u %s ", id, canon_ctype_name (type, tb));
  canon_quoten (l, category, canon_strnlen (category, 32));
  line_putn (l, "/", 1);
  canon_quoten (l, name, canon_strnlen (name, 32));
  line_putn (l, " ", 1);
  canon_quoten (l, description, canon_strnlen (description, 52));
  line_puts (l, " value=");
  canon_value (l, type, value);
  line_putn (l, "]", 1);
}

static void
canon_ctrset_value (Line *l, uint32_t id, uint64_t value)
{
  line_printf (l, " %u=", id);
  canon_value (l, canon_ctype (id), value);
}

static void
canon_mark (Line *l, int64_t duration, const char *group, size_t group_len,
            const char *name, size_t name_len, const char *message)
{
  line_puts (l, " duration=");
  canon_time (l, duration);
  line_puts (l, " group=");
  canon_quoten (l, group, canon_strnlen (group, group_len));
  line_puts (l, " name=");
  canon_quoten (l, name, canon_strnlen (name, name_len));
  line_puts (l, " message=");
  canon_quote (l, message);
}

static void
canon_metadata (Line *l, const char *id, size_t id_len, const char *value)
{
  line_puts (l, " id=");
  canon_quoten (l, id, canon_strnlen (id, id_len));
  line_puts (l, " value=");
  canon_quote (l, value);
}

static void
canon_log (Line *l, unsigned int severity, const char *domain, size_t domain_len,
           const char *message)
{
  line_printf (l, " severity=%u domain=", severity);
  canon_quoten (l, domain, canon_strnlen (domain, domain_len));
  line_puts (l, " message=");
  canon_quote (l, message);
}

static void
canon_file (Line *l, const char *path, size_t path_len, unsigned int len, int last)
{
  line_puts (l, " path=");
  canon_quoten (l, path, canon_strnlen (path, path_len));
  line_printf (l, " len=%u last=%s", len, last ? "true" : "false");
}

static void
canon_allocation (Line *l, int32_t tid, uint64_t addr, int64_t size,
                  const uint64_t *addrs, unsigned int n)
{
  if (size == 0 && n == 0)
    {
      line_printf (l, " tid=%" PRId32 " free=", tid);
      canon_hex (l, addr);
    }
  else
    {
      line_printf (l, " tid=%" PRId32 " addr=", tid);
      canon_hex (l, addr);
      line_printf (l, " size=%" PRId64, size);
    }
  canon_addrs (l, addrs, n);
}

static void
canon_overlay (Line *l, unsigned int layer, const char *src, size_t src_len,
               const char *dst, size_t dst_len)
{
  line_printf (l, " layer=%u src=", layer);
  canon_quoten (l, src, canon_strnlen (src, src_len));
  line_puts (l, " dst=");
  canon_quoten (l, dst, canon_strnlen (dst, dst_len));
}

#endif /* NSPROF_CANON_H */
