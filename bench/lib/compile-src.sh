# compile-src.sh, sourced by the benches whose workload compiles Go in a
# loop (record-system.sh, record-soak.sh): write_compile_src DIR writes
# DIR/main.go, 200 small types and functions with no imports, for `go
# tool compile` (short-lived processes of the same toolchain binaries).
write_compile_src() {
	mkdir -p "$1"
	{
		echo "package main"
		for i in $(seq 0 199); do
			echo "type T$i struct{ a, b int; s string }"
			echo "func (t *T$i) M(x int) int { s := 0; for j := 0; j < x; j++ { s += j*t.a + t.b; if s > 1000 { s -= len(t.s) } }; return s }"
			echo "func f$i(m map[int]string, xs []int) (r int) { for k, v := range m { r += k + len(v) }; for _, x := range xs { r ^= x }; return }"
		done
		echo "func main() { var t T0; println(t.M(3), f0(nil, nil)) }"
	} >"$1/main.go"
}
