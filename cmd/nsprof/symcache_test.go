package main

import (
	"testing"

	"nsprof/symcache"
)

// The symbol cache is on by default, in its default directory; a directory
// given replaces it; --no-symbol-cache turns it off; both flags together
// are refused.
func TestSymbolCacheFlags(t *testing.T) {
	def, err := symcache.DefaultDir()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		fl      recordFlags
		want    string
		wantErr bool
	}{
		{recordFlags{}, def, false},
		{recordFlags{symbolCache: "/tmp/x"}, "/tmp/x", false},
		{recordFlags{noSymbolCache: true}, "", false},
		{recordFlags{symbolCache: "/tmp/x", noSymbolCache: true}, "", true},
	} {
		got, err := symbolCacheDir(tc.fl)
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("symbolCacheDir(%+v) = %q, %v; want %q, error %v", tc.fl, got, err, tc.want, tc.wantErr)
		}
	}
}
