// Package symcache keeps, across recordings, what symbolizing an object
// cost: its symbol table, the source frames of the addresses resolved in
// it, and the frames of every address of whole functions (runs of
// addresses with the same frames), keyed by the object's build-id, as
// perf keeps ~/.debug. Later recordings of the same binaries read them
// back instead of parsing symbol tables and inflating DWARF again. It
// also keeps blobs (GetBlob, PutBlob): bytes under a key of the caller's
// making, such as this boot's /proc/kallsyms with its index.
//
// The cache is a directory owned by the user, writable by no one else,
// holding one file per build-id. Entries are written atomically (a
// temporary file renamed into place), opened without following symbolic
// links, checked for their owner, and decoded with a checksum and bounds:
// a corrupt or planted entry is ignored (and counted), never trusted. An
// entry's runs of frames and their frame lists are indexed in its file
// and decoded only as addresses are looked up in them, each block of
// them checked the first time a lookup reaches it: a recording looks up
// a few thousand of libc's 137 k runs. An entry read is its file mapped,
// not copied into the heap, until its Close. Frames of addresses added to an entry read
// from the cache are appended to its file as a delta (AddFrames), merged
// as it is read, until the deltas outweigh the entry and it is written
// whole again. The directory's total size is bounded; the entries least
// recently used are removed first. Two files of the directory are not
// entries: the lock of the process that fills entries whole in the
// background (LockFill, one at a time) and its log (OpenFillLog).
package symcache
