package archtest

import (
	"os/exec"
	"strings"
	"testing"
)

// otlpOnly are the packages (and those below them) that only nsprof-otlp,
// cmd/nsprof built with the otlp tag, links: the OTLP client.
var otlpOnly = []string{"nsprof/otlp", "nsprof/agent", "google.golang.org/grpc", "go.opentelemetry.io/"}

// TestNsprofLeavesOutOTLP checks, with go list, that the nsprof binary
// links none of the OTLP client, which nsprof-otlp has: an untagged file
// of cmd/nsprof importing otlp would put it back into every command's
// start-up and memory.
func TestNsprofLeavesOutOTLP(t *testing.T) {
	deps := func(tags string) []string {
		out, err := exec.Command("go", "list", "-deps", "-tags", tags, "nsprof/cmd/nsprof").Output()
		if err != nil {
			t.Fatalf("go list -deps -tags %q nsprof/cmd/nsprof: %v", tags, err)
		}
		return strings.Fields(string(out))
	}
	otlp := func(pkgs []string) []string {
		var found []string
		for _, p := range pkgs {
			for _, o := range otlpOnly {
				if p == o || strings.HasPrefix(p, strings.TrimSuffix(o, "/")+"/") {
					found = append(found, p)
					break
				}
			}
		}
		return found
	}
	if found := otlp(deps("")); len(found) > 0 {
		t.Errorf("nsprof links %d packages of the OTLP client, which only nsprof-otlp should: %s", len(found), strings.Join(found[:min(5, len(found))], ", "))
	}
	// The list is right: nsprof-otlp has them.
	if found := otlp(deps("otlp")); len(found) < 3 {
		t.Errorf("nsprof-otlp links %d packages of the OTLP client (%v): the list names none of them", len(found), found)
	}
}
