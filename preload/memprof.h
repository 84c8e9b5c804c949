/*
 * Wire format shared by libnsprof-memprof.so and the recorder
 * (record/memprof_ring.go). Everything is in the machine's byte order.
 *
 * Each thread that allocates owns one ring: a memfd of one header page
 * followed by a power-of-two data area. The thread is the only producer,
 * the recorder the only consumer. Positions are byte counts that only
 * grow; a position's offset in the data area is pos & (size - 1).
 */
#ifndef NSPROF_MEMPROF_H
#define NSPROF_MEMPROF_H

#include <stdint.h>

#define MEMPROF_MAGIC 0x6d70736eu /* "nspm" */
#define MEMPROF_VERSION 3u
#define MEMPROF_HEADER_SIZE 4096u
#define MEMPROF_MAX_DEPTH 64

/* Ring header, in the ring's first page. */
struct memprof_ring_header {
	uint32_t magic;
	uint32_t version;
	uint64_t size; /* data area bytes, a power of two */
	int32_t pid;   /* pid and tid as the writer sees them */
	int32_t tid;
	uint32_t closed; /* set by the writer when its thread exits */
	uint32_t pad0;
	uint8_t pad1[64 - 32];
	uint64_t head; /* consumer position (recorder writes) */
	uint8_t pad2[64 - 8];
	uint64_t tail; /* producer position (writer writes) */
	uint64_t lost; /* events dropped because the ring stayed full */
	uint64_t sampled_untracked; /* sampled blocks the free table could not hold */
	uint64_t tsc_times; /* events whose time was extrapolated from the TSC */
	uint64_t signal_dropped; /* events of signal handlers that found no room */
	uint64_t calls_lost; /* calls (not arcs) not recorded: ring full, or signal handlers */
	uint64_t calls_untimed; /* calls counted without their time (shadow stack too deep) */
};

/* Record kinds. */
#define MEMPROF_REC_ALLOC 1
#define MEMPROF_REC_FREE 2
#define MEMPROF_REC_PAD 3
#define MEMPROF_REC_CALL 4 /* a struct memprof_call_record */

/* A record: this header, then n_addrs return addresses, innermost first. */
struct memprof_record {
	uint32_t len; /* whole record, a multiple of 8 */
	uint16_t kind;
	uint16_t n_addrs;
	int64_t time; /* CLOCK_MONOTONIC ns */
	uint64_t addr;
	int64_t size; /* bytes; in sampling mode the unbiased weight */
};

/* The calls of one arc (call site -> function) a thread made since its
 * last such record (preload/calls.c): n_addrs is 0, len 64. */
struct memprof_call_record {
	uint32_t len;
	uint16_t kind;
	uint16_t n_addrs;
	int64_t time; /* CLOCK_MONOTONIC ns of the write */
	uint64_t fn;   /* the function's entry (-finstrument-functions), or
			  the return address of its mcount call (-pg) */
	uint64_t site; /* the return address into the caller */
	uint64_t count;
	uint64_t ns;      /* total time of those calls; 0 when untimed (-pg) */
	uint64_t self_ns; /* the part not spent in instrumented callees */
	uint64_t pad;
};

/* Registration message sent with the ring's memfd (SCM_RIGHTS). */
struct memprof_hello {
	uint32_t magic;
	uint32_t version;
	int32_t pid; /* as the writer sees them (its PID namespace) */
	int32_t tid;
	uint64_t ring_size; /* bytes of the whole memfd */
	uint64_t sample_bytes; /* 0: every event recorded */
};

#endif
