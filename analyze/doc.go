// Package analyze is the analysis model over a capture: processes, threads,
// mappings and stack samples loaded from a Sysprof capture into one
// [Profile], named by pluggable [Symbolizer]s, and the operations that
// reports are made of, each in its own file: [Profile.Select] (filters),
// [Profile.Top] (functions by self and total samples), [Profile.Tree]
// (top-down and bottom-up call trees) and [Profile.Group] (per process,
// thread or container). Marks, counters, logs and process lifetimes form
// the [Timeline].
//
// There is one sample model for every measurement. Samples carry values
// described by [Profile.SampleTypes], as pprof's samples do: a stack
// sample counts 1 "samples" (and its period in "cpu" nanoseconds when
// known); an allocation of a --memprof capture is a sample on the same
// interned stacks that counts its objects and bytes (alloc_objects,
// alloc_space) and, when its block was never freed, inuse_objects and
// inuse_space, or when it was temporary, temp_objects and temp_space.
// [ViewOptions.Value] picks the column the views weigh by, so every
// filter, view and grouping serves every type; [View.Heap] adds what only
// the order of events tells (the peak of live bytes, the frees) for the
// allocations a view selects. [Load] reads the capture once, in one
// pass, into the samples, their values and, with [LoadOptions.Timeline],
// the [Timeline].
//
// Stacks are interned: a Profile holds each distinct stack of a process
// once, and each distinct place in code as one [Frame] named once (the
// same offset of one build of a file in many processes is one frame), so
// operations cost in proportion to the distinct stacks and code, not the
// samples and processes.
//
// Robustness: [Load] never panics on damaged input. When reading stops at
// damage, it returns the profile of everything before the damage together
// with the error, which names the byte offset.
//
// Concurrency: a Profile is safe for concurrent reads once loaded;
// [Profile.Symbolize] must not run concurrently with anything else.
package analyze
