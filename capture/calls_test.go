package capture

import (
	"bytes"
	"strings"
	"testing"
)

func TestCallsRoundTrip(t *testing.T) {
	in := []Call{
		{PID: 7, TID: 9, Time: 123, Callee: 0x401000, Site: 0x402345, Count: 1000000, Total: 5e6, Self: 4e6, Timed: true},
		{PID: 7, TID: 9, Time: 124, Callee: 0x7f0000001234, Site: 0x7f0000005678, Count: 600},
	}
	var b []byte
	for _, r := range in {
		b = AppendCall(b, r)
	}
	if len(b) != len(in)*CallRecordSize {
		t.Fatalf("%d bytes for %d records", len(b), len(in))
	}
	out, err := DecodeCalls(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(in) {
		t.Fatalf("decoded %d records, want %d", len(out), len(in))
	}
	for i := range in {
		if out[i] != in[i] {
			t.Errorf("record %d: %+v, want %+v", i, out[i], in[i])
		}
	}
	// Cut short: the whole records, and an error naming the rest.
	out, err = DecodeCalls(b[:len(b)-3])
	if len(out) != 1 || err == nil || !strings.Contains(err.Error(), "at offset 64") {
		t.Errorf("cut file: %d records, %v", len(out), err)
	}
	// A bad record stops the decoding there.
	bad := AppendCall(nil, Call{Count: 1, Total: 5, Self: 9, Timed: true})
	out, err = DecodeCalls(append(b[:CallRecordSize:CallRecordSize], bad...))
	if len(out) != 1 || err == nil || !strings.Contains(err.Error(), "self time 9 above the total 5") {
		t.Errorf("bad record: %d records, %v", len(out), err)
	}
}

// FuzzDecodeCalls checks that the records DecodeCalls returns encode back
// to the start of its input, and that it stops with an error exactly
// where they end short of the input.
func FuzzDecodeCalls(f *testing.F) {
	f.Add(AppendCall(nil, Call{PID: 1, TID: 2, Time: 3, Callee: 4, Site: 5, Count: 6, Total: 7, Self: 7, Timed: true}))
	f.Add(AppendCall(AppendCall(nil, Call{Count: 1}), Call{Count: -1}))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := DecodeCalls(data)
		var b []byte
		for _, r := range out {
			b = AppendCall(b, r)
		}
		if !bytes.Equal(b, data[:len(b)]) {
			t.Fatalf("records do not encode back to the input")
		}
		if (err == nil) != (len(b) == len(data)) {
			t.Fatalf("%d of %d bytes decoded, error %v", len(b), len(data), err)
		}
	})
}
