package container

import (
	"bytes"
	"strings"
	"testing"
)

func FuzzParseContainersJSON(f *testing.F) {
	f.Add([]byte(containersJSON))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		cs, err := parseContainersJSON(bytes.NewReader(data))
		if err != nil && cs != nil {
			t.Fatal("error with a result")
		}
		for _, c := range cs {
			if c.ID == "" {
				t.Fatal("container without id")
			}
		}
		findContainer(cs, "abc", "x")
	})
}

func FuzzParseLayersJSON(f *testing.F) {
	f.Add([]byte(`[{"id":"a"},{"id":"b","parent":"a"},{"id":"c","parent":"b"}]`), "c")
	f.Add([]byte(`[{"id":"a","parent":"a"}]`), "a")
	f.Fuzz(func(t *testing.T, data []byte, top string) {
		ls, err := parseLayersJSON(bytes.NewReader(data))
		if err != nil {
			if ls != nil {
				t.Fatal("error with a result")
			}
			return
		}
		chain, err := layerChain(ls, top)
		if err != nil && chain != nil {
			t.Fatal("error with a chain")
		}
		if len(chain) > maxLayerDepth {
			t.Fatalf("chain of %d layers", len(chain))
		}
	})
}

func FuzzParseConmonCmdline(f *testing.F) {
	f.Add([]byte(strings.Join(conmonArgv, "\x00")))
	f.Add([]byte("conmon\x00-c\x00abc\x00-b\x00/g/overlay-containers/abc/userdata"))
	f.Fuzz(func(t *testing.T, data []byte) {
		argv := strings.Split(string(data), "\x00")
		a, ok := parseConmonCmdline(argv)
		if ok && a.ID == "" {
			t.Fatal("ok without an id")
		}
		if !ok && a != (conmonArgs{}) {
			t.Fatal("not ok with a result")
		}
		if gr, drv, ok := graphrootFromBundle(a.Bundle, a.ID); ok && (gr == "" || drv == "") {
			t.Fatal("empty graphroot or driver")
		}
	})
}

func FuzzParseFuseOverlayfsCmdline(f *testing.F) {
	f.Add([]byte("/usr/bin/fuse-overlayfs\x00-o\x00lowerdir=/l/A:/l/B,upperdir=/u,workdir=/w\x00/m"))
	f.Add([]byte("fuse-overlayfs\x00-olowerdir=/a\\:b::/c\x00/m"))
	f.Fuzz(func(t *testing.T, data []byte) {
		o, ok := parseFuseOverlayfsCmdline(strings.Split(string(data), "\x00"))
		if ok && len(o.layers()) == 0 {
			t.Fatal("ok without layers")
		}
		for _, l := range o.Lower {
			if l == "" {
				t.Fatal("empty lower dir")
			}
		}
	})
}

func FuzzParseFlatpakInfo(f *testing.F) {
	f.Add([]byte(flatpakInfoText))
	f.Add([]byte("[Runtime]\nname=org.test.Sdk\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fi, err := parseFlatpakInfo(bytes.NewReader(data))
		if err != nil && fi != (flatpakInfo{}) {
			t.Fatal("error with a result")
		}
		if err == nil && fi.AppID == "" {
			t.Fatal("no app id without an error")
		}
	})
}
