package record_test

import (
	"bytes"
	"os"
	"testing"

	"nsprof/analyze"
	"nsprof/capture"
	"nsprof/internal/testutils"
	"nsprof/record"
)

// kallsymsAliases has the cases the recorder and the reports once read
// apart: weak symbols (W, w), aliases of every rank at one address, a
// data symbol between two functions, modules and unsorted lines.
const kallsymsAliases = "0000000000000000 A fixed_percpu_data\n" +
	"ffffffff81000000 T _stext\n" +
	"ffffffff81000100 t local_alias\n" +
	"ffffffff81000100 T sys_read\n" +
	"ffffffff81000180 W weak_one\n" +
	"ffffffff81000200 D some_data\n" +
	"ffffffff81000300 t helper\n" +
	"ffffffff81000300 w helper_weak\n" +
	"ffffffff81000400 t __pfx_next\n" +
	"ffffffff81000400 t next\n" +
	"ffffffffc0000040 t modfn\t[ext4]\n" +
	"ffffffffc0000000 T modstart\t[ext4]\n" +
	"ffffffffc0000080 W modweak\t[ext4]\n"

// TestKernelNamesSameAtRecordAndReport names kernel addresses the way the
// recorder bundles them at record end and the way a report names them
// from the capture's embedded kallsyms, and checks that both give every
// address the same function and DSO.
func TestKernelNamesSameAtRecordAndReport(t *testing.T) {
	texts := map[string][]byte{"aliases": []byte(kallsymsAliases)}
	host, err := os.ReadFile("/proc/kallsyms")
	if err != nil || len(host) == 0 || bytes.HasPrefix(host, []byte("0000000000000000 ")) {
		testutils.RequireCI(t, "/proc/kallsyms unreadable or restricted (err %v)", err)
	} else {
		texts["/proc/kallsyms"] = host
	}
	for name, data := range texts {
		var addrs []uint64
		for i, line := range bytes.Split(data, []byte("\n")) {
			if name != "aliases" && i%41 != 0 {
				continue
			}
			a, ok := lineAddr(line)
			if !ok || a == 0 {
				continue
			}
			addrs = append(addrs, a, a+1, a+0x7f)
		}
		const pid = 7
		b, err := capture.EncodeSymbols(record.BundleKernel(data, pid, addrs))
		if err != nil {
			t.Fatal(err)
		}
		tab, err := capture.DecodeSymbols(b)
		if err != nil {
			t.Fatal(err)
		}
		atRecord := analyze.NewBundleSymbolizer(tab, nil)
		atReport, err := analyze.NewKallsymsSymbolizer(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		diff, named := 0, 0
		for _, a := range addrs {
			r, rok := atRecord.Symbolize(pid, a, true)
			k, kok := atReport.Symbolize(pid, a, true)
			if rok != kok || r.Function != k.Function || r.DSO != k.DSO {
				if diff++; diff <= 10 {
					t.Errorf("%s: %#x: record end names %q in %q (%t), report %q in %q (%t)", name, a, r.Function, r.DSO, rok, k.Function, k.DSO, kok)
				}
			}
			if rok {
				named++
			}
		}
		if diff > 0 || named == 0 {
			t.Errorf("%s: %d of %d addresses named apart, %d named", name, diff, len(addrs), named)
		}
		t.Logf("%s: %d addresses, %d named alike", name, len(addrs), named)
	}
}

// lineAddr parses the address that starts a kallsyms line.
func lineAddr(line []byte) (uint64, bool) {
	f := bytes.Fields(line)
	if len(f) == 0 {
		return 0, false
	}
	var v uint64
	for _, c := range f[0] {
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | uint64(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | uint64(c-'a'+10)
		default:
			return 0, false
		}
	}
	return v, true
}
