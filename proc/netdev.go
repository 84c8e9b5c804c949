package proc

import (
	"io"
	"strings"
)

// NetDevStat is one interface line of /proc/net/dev.
type NetDevStat struct {
	Name      string
	RxBytes   uint64
	RxPackets uint64
	RxErrors  uint64
	RxDropped uint64
	TxBytes   uint64
	TxPackets uint64
	TxErrors  uint64
	TxDropped uint64
}

// ParseNetDev parses the /proc/net/dev format. The two header lines, which
// contain '|', are skipped. On error it returns nil and a *[SyntaxError]
// naming the line.
func ParseNetDev(r io.Reader) ([]NetDevStat, error) {
	lr := newLineReader(r, "net/dev")
	var stats []NetDevStat
	for lr.Next() {
		line := lr.Text()
		if strings.TrimSpace(line) == "" || strings.Contains(line, "|") {
			continue
		}
		// Interface names cannot contain ':' or white space, and the
		// receive byte count may follow the colon without a space.
		name, rest, ok := strings.Cut(line, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, lr.Errorf(line, "missing interface name")
		}
		if strings.ContainsAny(name, " \t") {
			return nil, lr.Errorf(line, "white space in interface name")
		}
		f := strings.Fields(rest)
		if len(f) < 16 {
			return nil, lr.Errorf(line, "want 16 counters, have %d", len(f))
		}
		var v [16]uint64
		var p fieldParser
		for i := range v {
			v[i] = p.uint(f[i])
		}
		if p.bad != "" {
			return nil, lr.Errorf(line, "bad number %q", p.bad)
		}
		// Columns 4-7 and 12-15 are fifo, frame, compressed, multicast and
		// fifo, colls, carrier, compressed.
		s := NetDevStat{
			Name:    name,
			RxBytes: v[0], RxPackets: v[1], RxErrors: v[2], RxDropped: v[3],
			TxBytes: v[8], TxPackets: v[9], TxErrors: v[10], TxDropped: v[11],
		}
		stats = append(stats, s)
	}
	if err := lr.Err(); err != nil {
		return nil, err
	}
	return stats, nil
}

// ReadNetDev reads /proc/PID/net/dev, the interfaces of pid's network
// namespace.
func (fs FS) ReadNetDev(pid int) ([]NetDevStat, error) {
	return parseFile(fs.pidPath(pid, "net", "dev"), ParseNetDev)
}

// ReadNetDev reads /proc/PID/net/dev through [DefaultFS].
func ReadNetDev(pid int) ([]NetDevStat, error) { return DefaultFS.ReadNetDev(pid) }
