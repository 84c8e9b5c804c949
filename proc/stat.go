package proc

import (
	"bytes"
	"io"
	"strconv"
	"strings"
)

// maxStatFile bounds /proc/PID/stat, which is one line of about 300 bytes.
const maxStatFile = 64 << 10

// Stat holds the fields of /proc/PID/stat that nsprof uses. Times are in
// clock ticks (USER_HZ, almost always 100 per second).
type Stat struct {
	PID        int
	Comm       string // raw command name; may hold spaces, parentheses and newlines
	State      byte
	PPID       int
	PGRP       int // 0 if the group leader is outside the PID namespace
	Session    int
	Flags      uint64 // PF_* task flags
	MinFlt     uint64
	MajFlt     uint64
	UTime      uint64 // user-mode CPU time
	STime      uint64 // kernel-mode CPU time
	Priority   int64
	Nice       int64
	NumThreads int
	StartTime  uint64 // start time after boot
	VSize      uint64 // virtual memory size in bytes
	RSS        uint64 // resident set size in pages
}

// ParseStat parses the /proc/PID/stat format. The command name is taken
// between the first '(' and the last ')', so names containing ") (" parse
// correctly. At least 24 fields (up to rss) are required; later fields are
// ignored. On error it returns the zero Stat and a *[SyntaxError].
func ParseStat(r io.Reader) (Stat, error) {
	data, err := readAll(r, "stat", maxStatFile)
	if err != nil {
		return Stat{}, err
	}
	s, msg := parseStat(data)
	if msg != "" {
		return Stat{}, syntaxError("stat", 0, string(data), "%s", msg)
	}
	return s, nil
}

func parseStat(data []byte) (Stat, string) {
	var s Stat
	open := bytes.IndexByte(data, '(')
	end := bytes.LastIndexByte(data, ')')
	if open < 0 || end < open {
		return s, "missing (comm)"
	}
	pid, err := strconv.ParseUint(string(bytes.TrimSpace(data[:open])), 10, 31)
	if err != nil {
		return s, "bad pid"
	}
	s.PID = int(pid)
	s.Comm = string(data[open+1 : end])

	// f[0] is field 3 (state) in the 1-based numbering of proc(5).
	f := strings.Fields(string(data[end+1:]))
	if len(f) < 22 {
		return Stat{}, "want at least 24 fields"
	}
	if len(f[0]) != 1 {
		return Stat{}, "bad state"
	}
	s.State = f[0][0]

	var p fieldParser
	s.PPID = p.id(f[1])
	s.PGRP = p.id(f[2])
	s.Session = p.id(f[3])
	s.Flags = p.uint(f[6])
	s.MinFlt = p.uint(f[7])
	s.MajFlt = p.uint(f[9])
	s.UTime = p.uint(f[11])
	s.STime = p.uint(f[12])
	s.Priority = p.int(f[15])
	s.Nice = p.int(f[16])
	s.NumThreads = p.id(f[17])
	s.StartTime = p.uint(f[19])
	s.VSize = p.uint(f[20])
	s.RSS = p.uint(f[21])
	if p.bad != "" {
		return Stat{}, "bad number " + strconv.Quote(p.bad)
	}
	return s, ""
}

// fieldParser parses numeric fields, remembering the first one that fails.
type fieldParser struct {
	bad string
}

func (p *fieldParser) uint(s string) uint64 {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil && p.bad == "" {
		p.bad = s
	}
	return n
}

func (p *fieldParser) int(s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil && p.bad == "" {
		p.bad = s
	}
	return n
}

// id parses a non-negative ID that fits in an int on every platform.
func (p *fieldParser) id(s string) int {
	n, err := strconv.ParseUint(s, 10, 31)
	if err != nil && p.bad == "" {
		p.bad = s
	}
	return int(n)
}

// ReadStat reads /proc/PID/stat.
func (fs FS) ReadStat(pid int) (Stat, error) {
	return parseFile(fs.pidPath(pid, "stat"), ParseStat)
}

// ReadTaskStat reads /proc/PID/task/TID/stat, the stat of one thread.
func (fs FS) ReadTaskStat(pid, tid int) (Stat, error) {
	return parseFile(fs.taskPath(pid, tid, "stat"), ParseStat)
}

// ReadStat reads /proc/PID/stat through [DefaultFS].
func ReadStat(pid int) (Stat, error) { return DefaultFS.ReadStat(pid) }
