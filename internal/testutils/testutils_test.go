package testutils

import "testing"

func TestInCI(t *testing.T) {
	for v, want := range map[string]bool{"": false, "true": true, "1": true, "TRUE": true, "false": false, "0": false, "yes": false} {
		t.Setenv("CI", v)
		if got := InCI(); got != want {
			t.Errorf("CI=%q: InCI() = %t, want %t", v, got, want)
		}
	}
}

func TestRequireCISkipsOutsideCI(t *testing.T) {
	t.Setenv("CI", "")
	var sub *testing.T
	t.Run("missing", func(t *testing.T) {
		sub = t
		RequireCI(t, "prerequisite %s missing", "x")
		t.Error("RequireCI returned")
	})
	if !sub.Skipped() {
		t.Error("RequireCI did not skip outside CI")
	}
	t.Run("lookpath", func(t *testing.T) {
		sub = t
		LookPathOrSkip(t, "nsprof-no-such-program")
		t.Error("LookPathOrSkip returned")
	})
	if !sub.Skipped() {
		t.Error("LookPathOrSkip did not skip outside CI")
	}
	if p := LookPathOrSkip(t, "sh"); p == "" {
		t.Error("LookPathOrSkip(sh) returned an empty path")
	}
}
