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
#define MEMPROF_VERSION 4u
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

/*
 * Records. Every record starts as a Sysprof capture frame does (the
 * 24-byte SysprofCaptureFrame: u16 len, i16 cpu, i32 pid, i64 time, u8
 * type, 7 bytes zero), so that runs of allocation records are written
 * to the capture as they lie in the ring. A pad record, filling the end
 * of the data area, is the exception: its first u16 is its length with
 * bit 0 set (frame lengths are multiples of 8), and nothing else of it
 * is read; it may be 8 bytes long.
 */
#define MEMPROF_REC_ALLOC 14   /* Sysprof's ALLOCATION frame type */
#define MEMPROF_REC_CALL 0x80  /* a struct memprof_call_record; no Sysprof type */
#define MEMPROF_PAD_BIT 1u     /* in len: a pad record */

/*
 * An allocation or a free: byte for byte a Sysprof ALLOCATION frame
 * (SysprofCaptureAllocation), then n_addrs return addresses, innermost
 * first. A free has size 0 and no address, as Sysprof's memprof writes.
 * cpu is -1; pid and tid are as the writer sees them, and the recorder
 * rewrites them in place when the host's ids differ (a PID namespace).
 */
struct memprof_record {
	uint16_t len; /* whole record, a multiple of 8 */
	int16_t cpu;
	int32_t pid;
	int64_t time; /* CLOCK_MONOTONIC ns */
	uint8_t type; /* MEMPROF_REC_ALLOC */
	uint8_t pad0[7];
	uint64_t addr;
	int64_t size; /* bytes; in sampling mode the unbiased weight; 0: a free */
	int32_t tid;
	uint16_t n_addrs;
	uint16_t pad1;
};

/* The calls of one arc (call site -> function) a thread made since its
 * last such record (preload/calls.c): type MEMPROF_REC_CALL, len 64. The
 * recorder keeps them for its calls file; they never reach the capture
 * as frames. */
struct memprof_call_record {
	uint16_t len;
	int16_t cpu;
	int32_t pid;
	int64_t time; /* CLOCK_MONOTONIC ns of the write */
	uint8_t type;
	uint8_t pad0[7];
	uint64_t fn;   /* the function's entry (-finstrument-functions), or
			  the return address of its mcount call (-pg) */
	uint64_t site; /* the return address into the caller */
	uint64_t count;
	uint64_t ns;      /* total time of those calls; 0 when untimed (-pg) */
	uint64_t self_ns; /* the part not spent in instrumented callees */
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
