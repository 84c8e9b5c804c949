package capture

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
)

// writtenProcessLines are lines as the recorder writes them, every field
// set in one of them, with strings json.Marshal escapes (HTML
// characters, controls, quotes, text beyond ASCII) and the extremes of
// each number.
func writtenProcessLines(t testing.TB) []string {
	t.Helper()
	ps := []ProcessInfo{
		{Time: 5, PID: 100, PPID: 1, NSpid: []int{100, 1}, Comm: "app", Cmdline: []string{"app", "-x", ""}, CmdlineRedacted: true, UID: 1000,
			MntNS: 4026531832, PidNS: 4026531836, UserNS: math.MaxUint64, Root: "/", Exe: "/usr/bin/app", ExeDev: "8:1", ExeInode: 1234,
			Cgroups: []string{"0::/user.slice"}, Container: &ContainerInfo{Kind: "podman", ID: "abcdef0123456789", Name: "web", Rootless: true, AppID: "org.x.App", Root: "/var/lib/c"}, Err: "mnt ns: denied"},
		{Time: math.MinInt64, PID: math.MaxInt, Comm: `sh -c "a && b < c > d" \ é 日本 \u2028` + "\t\n\x01\x7f", Cmdline: []string{}, UID: math.MaxUint32, Cgroups: []string{}, Container: &ContainerInfo{}},
		{Time: math.MaxInt64, PID: math.MinInt, NSpid: []int{}},
	}
	ts := []ThreadInfo{{Time: 7, TID: 101, PID: 100, NSpid: []int{101, 2}, Comm: "worker/1"}, {Time: 8, TID: 101, PID: 100, Exited: true}}
	var lines []string
	for _, p := range ps {
		b, err := EncodeProcessInfo(p)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, strings.TrimSuffix(string(b), "\n"))
	}
	for _, th := range ts {
		b, err := EncodeThreadInfo(th)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, strings.TrimSuffix(string(b), "\n"))
	}
	return lines
}

// TestParseProcessLine checks that every line the recorder writes takes
// the fast path and reads as json.Unmarshal reads it, and that lines
// beyond what it reads as encoding/json would (spaces, keys in other
// cases, repeats, null, numbers with a fraction, surrogates, bytes not
// UTF-8, fields not known) are left to json.Unmarshal.
func TestParseProcessLine(t *testing.T) {
	for _, l := range writtenProcessLines(t) {
		var got, want processLine
		if !parseProcessLine([]byte(l), &got) {
			t.Errorf("not parsed: %s", l)
			continue
		}
		if err := json.Unmarshal([]byte(l), &want); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("parsed %+v, json.Unmarshal %+v (%v): %s", got, want, err, l)
		}
	}
	for _, l := range []string{
		` {"kind":"process"}`,
		`{"kind":"process"} `,
		`{"kind": "process"}`,
		`{"Kind":"process"}`,
		`{"pid":1,"pid":2}`,
		`{"container":{"kind":"a"},"container":{"id":"b"}}`,
		`{"container":{"kind":"a","kind":"b"}}`,
		`{"comm":null}`,
		`{"container":null}`,
		`{"pid":1.0}`,
		`{"pid":1e3}`,
		`{"pid":01}`,
		`{"uid":-1}`,
		`{"uid":4294967296}`,
		`{"time":9223372036854775808}`,
		`{"comm":"\ud83d\ude00"}`,
		`{"comm":"\x"}`,
		"{\"comm\":\"\xff\"}",
		"{\"comm\":\"a\tb\"}",
		`{"foo":1}`,
		`{"kind":"process"}x`,
		`{"kind":"process",}`,
		`{"nspid":[1,]}`,
		`{"exited":True}`,
	} {
		var u processLine
		if parseProcessLine([]byte(l), &u) {
			t.Errorf("parsed, not left to json.Unmarshal: %s", l)
		}
	}
	// Lines of one kind with fields of the other read as json.Unmarshal
	// reads them, when read.
	for _, l := range oddProcessLines {
		var got, want processLine
		if parseProcessLine([]byte(l), &got) {
			if err := json.Unmarshal([]byte(l), &want); err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("parsed %+v, json.Unmarshal %+v (%v): %s", got, want, err, l)
			}
		}
	}
}

// FuzzParseProcessLine checks that a line parseProcessLine reads is one
// json.Unmarshal reads the same.
func FuzzParseProcessLine(f *testing.F) {
	for _, l := range writtenProcessLines(f) {
		f.Add([]byte(l))
	}
	f.Add([]byte(`{"kind":"thread","tid":-0,"comm":"\u0000\/\b\f"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var got, want processLine
		if !parseProcessLine(b, &got) {
			return
		}
		if err := json.Unmarshal(b, &want); err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("parsed %+v, json.Unmarshal %+v (%v): %q", got, want, err, b)
		}
	})
}

// TestProcessFieldsCoverTags: every field a process line may have (the
// json tags of ProcessInfo, processLine and ContainerInfo) is one the
// parser reads, so that a field added later does not send every line
// to json.Unmarshal unnoticed.
func TestProcessFieldsCoverTags(t *testing.T) {
	tags := func(v any) []string {
		var out []string
		var walk func(reflect.Type)
		walk = func(rt reflect.Type) {
			for f := range rt.Fields() {
				if f.Anonymous {
					walk(f.Type)
					continue
				}
				name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
				out = append(out, name)
			}
		}
		walk(reflect.TypeOf(v))
		return out
	}
	for _, tag := range tags(processLine{}) {
		if _, ok := processFields[tag]; !ok {
			t.Errorf("process line field %q not read by parseProcessLine", tag)
		}
	}
	for _, tag := range tags(ContainerInfo{}) {
		line := fmt.Sprintf(`{"container":{%q:%s}}`, tag, map[bool]string{true: "true", false: `"x"`}[tag == "rootless"])
		var u processLine
		if !parseProcessLine([]byte(line), &u) {
			t.Errorf("container field %q not read by parseProcessLine", tag)
		}
	}
}
