// Package symcache keeps, across recordings, what symbolizing an object
// cost: its symbol table and the source frames of the addresses resolved in
// it, keyed by the object's build-id, as perf keeps ~/.debug. A second
// recording of the same binaries reads them back instead of parsing symbol
// tables and inflating DWARF again.
//
// The cache is a directory owned by the user, writable by no one else,
// holding one file per build-id. Entries are written atomically (a
// temporary file renamed into place), opened without following symbolic
// links, checked for their owner, and decoded with a checksum and bounds:
// a corrupt or planted entry is ignored (and counted), never trusted. The
// directory's total size is bounded; the entries least recently used are
// removed first.
package symcache
