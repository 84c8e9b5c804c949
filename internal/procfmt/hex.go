package procfmt

// ParseHex parses 1 to 16 hexadecimal digits of either case, without a
// prefix, as /proc/kallsyms and /proc/PID/maps write addresses (and
// nsprof's lines file too), without the string strconv.ParseUint needs:
// parsers of hundreds of thousands of lines spent much of their time
// making those.
func ParseHex(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 16 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		v = v<<4 | uint64(c)
	}
	return v, true
}
