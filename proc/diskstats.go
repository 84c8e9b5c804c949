package proc

import (
	"io"
	"strconv"
	"strings"
)

// DiskStat is one line of /proc/diskstats. Sectors are 512 bytes
// regardless of the device's sector size; times are in milliseconds.
type DiskStat struct {
	Dev              Dev
	Name             string // for example "sda", "nvme0n1p2", "dm-0"
	ReadsCompleted   uint64
	ReadsMerged      uint64
	SectorsRead      uint64
	ReadTimeMs       uint64
	WritesCompleted  uint64
	WritesMerged     uint64
	SectorsWritten   uint64
	WriteTimeMs      uint64
	IOInProgress     uint64
	IOTimeMs         uint64
	WeightedIOTimeMs uint64
}

// ParseDiskstats parses the /proc/diskstats format. Each line needs the 14
// fields of Linux 2.6; the discard and flush fields of later kernels are
// ignored. On error it returns nil and a *[SyntaxError] naming the line.
func ParseDiskstats(r io.Reader) ([]DiskStat, error) {
	lr := newLineReader(r, "diskstats")
	var stats []DiskStat
	for lr.Next() {
		line := lr.Text()
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) < 14 {
			return nil, lr.Errorf(line, "want at least 14 fields, have %d", len(f))
		}
		var p fieldParser
		maj, err1 := strconv.ParseUint(f[0], 10, 32)
		min, err2 := strconv.ParseUint(f[1], 10, 32)
		if err1 != nil || err2 != nil {
			return nil, lr.Errorf(line, "bad device number")
		}
		d := DiskStat{
			Dev:              Dev{Major: uint32(maj), Minor: uint32(min)},
			Name:             f[2],
			ReadsCompleted:   p.uint(f[3]),
			ReadsMerged:      p.uint(f[4]),
			SectorsRead:      p.uint(f[5]),
			ReadTimeMs:       p.uint(f[6]),
			WritesCompleted:  p.uint(f[7]),
			WritesMerged:     p.uint(f[8]),
			SectorsWritten:   p.uint(f[9]),
			WriteTimeMs:      p.uint(f[10]),
			IOInProgress:     p.uint(f[11]),
			IOTimeMs:         p.uint(f[12]),
			WeightedIOTimeMs: p.uint(f[13]),
		}
		if p.bad != "" {
			return nil, lr.Errorf(line, "bad number %q", p.bad)
		}
		stats = append(stats, d)
	}
	if err := lr.Err(); err != nil {
		return nil, err
	}
	return stats, nil
}

// ReadDiskstats reads /proc/diskstats.
func (fs FS) ReadDiskstats() ([]DiskStat, error) {
	return parseFile(fs.path("diskstats"), ParseDiskstats)
}

// ReadDiskstats reads /proc/diskstats through [DefaultFS].
func ReadDiskstats() ([]DiskStat, error) { return DefaultFS.ReadDiskstats() }
