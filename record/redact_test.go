package record

import (
	"slices"
	"testing"

	"nsprof/capture"
)

func TestRedactor(t *testing.T) {
	for _, tc := range []struct {
		mode     Redaction
		uid      uint32
		uidKnown bool
		cmdline  []string
		want     []string
	}{
		{RedactOthers, 1000, true, []string{"/usr/bin/psql", "--password=x"}, []string{"/usr/bin/psql", "--password=x"}},
		{RedactOthers, 0, true, []string{"/usr/sbin/daemon", "-k"}, []string{"/usr/sbin/daemon", "-k"}},
		{RedactOthers, 1001, true, []string{"/usr/bin/psql", "--password=x"}, []string{"psql"}},
		{RedactOthers, 0, false, []string{"/usr/bin/psql", "--password=x"}, []string{"psql"}}, // owner unknown
		// A title set over argv (setproctitle): the comm instead.
		{RedactOthers, 1001, true, []string{"postgres: alice sales [local] idle"}, []string{"postgres"}},
		{RedactAll, 1000, true, []string{"./run", "--token=y"}, []string{"run"}},
		{RedactNone, 1001, true, []string{"/usr/bin/psql", "--password=x"}, []string{"/usr/bin/psql", "--password=x"}},
	} {
		r := &redactor{mode: tc.mode, users: []uint32{0, 1000}}
		pi := capture.ProcessInfo{UID: tc.uid, Comm: "postgres", Cmdline: slices.Clone(tc.cmdline)}
		r.apply(&pi, tc.uidKnown)
		cut := !slices.Equal(tc.cmdline, tc.want)
		if !slices.Equal(pi.Cmdline, tc.want) || pi.CmdlineRedacted != cut || r.cut != map[bool]int{true: 1}[cut] {
			t.Errorf("%v uid %d (known %v) %q: %q redacted %v (%d cut), want %q", tc.mode, tc.uid, tc.uidKnown, tc.cmdline, pi.Cmdline, pi.CmdlineRedacted, r.cut, tc.want)
		}
	}
	for _, s := range []string{"others", "all", "none"} {
		if r, err := ParseRedaction(s); err != nil || r.String() != s {
			t.Errorf("ParseRedaction(%q) = %v, %v", s, r, err)
		}
	}
	if _, err := ParseRedaction("some"); err == nil {
		t.Error("ParseRedaction(\"some\") did not fail")
	}
}
