package container

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
)

// maxStorageJSON bounds containers.json and layers.json. A storage with
// thousands of layers stays far below it.
const maxStorageJSON = 64 << 20

// storageContainer is one entry of containers/storage's containers.json.
type storageContainer struct {
	ID    string   `json:"id"`
	Names []string `json:"names"`
	Image string   `json:"image"`
	Layer string   `json:"layer"`
}

// storageLayer is one entry of containers/storage's layers.json.
type storageLayer struct {
	ID     string   `json:"id"`
	Parent string   `json:"parent"`
	Names  []string `json:"names"`
}

var errTooLarge = errors.New("file too large")

func readBounded(r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, errTooLarge
	}
	return data, nil
}

// parseContainersJSON parses <graphroot>/<driver>-containers/containers.json.
// Entries without an id are dropped. On error it returns nil.
func parseContainersJSON(r io.Reader) ([]storageContainer, error) {
	data, err := readBounded(r, maxStorageJSON)
	if err != nil {
		return nil, fmt.Errorf("containers.json: %w", err)
	}
	var cs []storageContainer
	if err := json.Unmarshal(data, &cs); err != nil {
		return nil, fmt.Errorf("containers.json: %w", err)
	}
	out := cs[:0]
	for _, c := range cs {
		if c.ID != "" {
			out = append(out, c)
		}
	}
	return out, nil
}

// parseLayersJSON parses <graphroot>/<driver>-layers/layers.json. Entries
// without an id are dropped. On error it returns nil.
func parseLayersJSON(r io.Reader) ([]storageLayer, error) {
	data, err := readBounded(r, maxStorageJSON)
	if err != nil {
		return nil, fmt.Errorf("layers.json: %w", err)
	}
	var ls []storageLayer
	if err := json.Unmarshal(data, &ls); err != nil {
		return nil, fmt.Errorf("layers.json: %w", err)
	}
	out := ls[:0]
	for _, l := range ls {
		if l.ID != "" {
			out = append(out, l)
		}
	}
	return out, nil
}

// findContainer returns the container whose id is id (or, for ids of at
// least 12 characters, starts with it), or failing that whose names hold
// name.
func findContainer(cs []storageContainer, id, name string) (storageContainer, bool) {
	if id != "" {
		for _, c := range cs {
			if c.ID == id || (len(id) >= 12 && strings.HasPrefix(c.ID, id)) {
				return c, true
			}
		}
	}
	if name != "" {
		for _, c := range cs {
			for _, n := range c.Names {
				if n == name {
					return c, true
				}
			}
		}
	}
	return storageContainer{}, false
}

// maxLayerDepth bounds a layer chain; overlay itself allows at most 500 lower
// directories.
const maxLayerDepth = 500

// layerChain returns top and its ancestors, top first, following parent
// links. A missing parent or a cycle is an error.
func layerChain(ls []storageLayer, top string) ([]string, error) {
	byID := make(map[string]storageLayer, len(ls))
	for _, l := range ls {
		byID[l.ID] = l
	}
	var chain []string
	seen := map[string]bool{}
	for id := top; id != ""; {
		if seen[id] {
			return nil, fmt.Errorf("layer %s: parent cycle", id)
		}
		if len(chain) >= maxLayerDepth {
			return nil, fmt.Errorf("layer %s: more than %d ancestors", top, maxLayerDepth)
		}
		l, ok := byID[id]
		if !ok {
			return nil, fmt.Errorf("layer %s not in layers.json", id)
		}
		seen[id] = true
		chain = append(chain, id)
		id = l.Parent
	}
	return chain, nil
}

// conmonArgs holds what conmon's command line says about a container.
type conmonArgs struct {
	ID      string // -c, --cid
	Name    string // -n, --name
	Bundle  string // -b, --bundle: <graphroot>/<driver>-containers/<id>/userdata
	Runtime string // -r, --runtime
	// Root, RunRoot and StorageDriver come from the podman command line that
	// conmon runs at exit (--exit-command-arg).
	Root, RunRoot, StorageDriver string
}

// conmonSwitches are conmon's flags without a value.
var conmonSwitches = map[string]bool{
	"-t": true, "--terminal": true, "-i": true, "--stdin": true, "--leave-stdin-open": true,
	"-s": true, "--systemd-cgroup": true, "--syslog": true, "--no-pivot": true, "--no-new-keyring": true,
	"--full-attach": true, "--no-sync-log": true, "--sync": true, "-e": true, "--exec": true,
	"--exec-attach": true, "--version": true, "--help": true,
}

// parseConmonCmdline parses conmon's argv. ok is false when argv is not a
// conmon command line with a container id.
func parseConmonCmdline(argv []string) (a conmonArgs, ok bool) {
	if len(argv) == 0 || path.Base(argv[0]) != "conmon" {
		return conmonArgs{}, false
	}
	var exitArgs []string
	for i := 1; i < len(argv); i++ {
		flag, val, hasVal := strings.Cut(argv[i], "=")
		if !strings.HasPrefix(flag, "-") {
			continue
		}
		next := func() string {
			if hasVal {
				return val
			}
			if i+1 < len(argv) {
				i++
				return argv[i]
			}
			return ""
		}
		switch flag {
		case "-c", "--cid":
			a.ID = next()
		case "-n", "--name":
			a.Name = next()
		case "-b", "--bundle":
			a.Bundle = next()
		case "-r", "--runtime":
			a.Runtime = next()
		case "--exit-command-arg":
			exitArgs = append(exitArgs, next())
		default:
			// Other flags take a value unless they are known switches.
			if !conmonSwitches[flag] {
				next()
			}
		}
	}
	for i := 0; i < len(exitArgs); i++ {
		flag, val, hasVal := strings.Cut(exitArgs[i], "=")
		get := func() string {
			if hasVal {
				return val
			}
			if i+1 < len(exitArgs) {
				i++
				return exitArgs[i]
			}
			return ""
		}
		switch flag {
		case "--root":
			a.Root = get()
		case "--runroot":
			a.RunRoot = get()
		case "--storage-driver":
			a.StorageDriver = get()
		}
	}
	if a.ID == "" {
		return conmonArgs{}, false
	}
	return a, true
}

// graphrootFromBundle splits a conmon bundle path
// <graphroot>/<driver>-containers/<id>/userdata into graphroot and driver.
func graphrootFromBundle(bundle, id string) (graphroot, driver string, ok bool) {
	b := path.Clean(bundle)
	rest, ok := strings.CutSuffix(b, "/userdata")
	if !ok {
		return "", "", false
	}
	dir, cid := path.Split(rest)
	if cid == "" || (id != "" && cid != id) {
		return "", "", false
	}
	dir = strings.TrimSuffix(dir, "/")
	parent, ctrs := path.Split(dir)
	drv, ok := strings.CutSuffix(ctrs, "-containers")
	if !ok || drv == "" || parent == "" {
		return "", "", false
	}
	gr := strings.TrimSuffix(parent, "/")
	if gr == "" {
		return "", "", false // a graphroot of "/" is not a storage
	}
	return gr, drv, true
}

// libpodIDFromCgroup returns the container id in a cgroup path such as
// /libpod_parent/libpod-<id> or /machine.slice/libpod-<id>.scope/container.
func libpodIDFromCgroup(p string) (string, bool) {
	for _, elem := range strings.Split(p, "/") {
		id, ok := strings.CutPrefix(elem, "libpod-")
		if !ok {
			continue
		}
		id = strings.TrimSuffix(id, ".scope")
		if isHexID(id) {
			return id, true
		}
	}
	return "", false
}

func isHexID(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
