package perf

import "testing"

func TestParseConfigBit(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint
		ok   bool
	}{
		{"config:0\n", 0, true},
		{"config:63", 63, true},
		{"config:64", 0, false},
		{"config:32-63", 0, false},
		{"config1:0", 0, false},
		{"", 0, false},
	} {
		got, err := parseConfigBit(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseConfigBit(%q) = %d, %v; want %d, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}
