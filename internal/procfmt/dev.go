package procfmt

import (
	"strconv"
	"strings"
)

// Dev is a device number split into its major and minor parts.
type Dev struct {
	Major, Minor uint32
}

// String formats d as "major:minor" in decimal, as mountinfo does.
func (d Dev) String() string {
	return strconv.FormatUint(uint64(d.Major), 10) + ":" + strconv.FormatUint(uint64(d.Minor), 10)
}

// ParseDev parses "major:minor" in the given base: 10 in mountinfo, 16
// in maps.
func ParseDev(s string, base int) (Dev, bool) {
	maj, min, ok := strings.Cut(s, ":")
	if !ok {
		return Dev{}, false
	}
	a, err1 := strconv.ParseUint(maj, base, 32)
	b, err2 := strconv.ParseUint(min, base, 32)
	if err1 != nil || err2 != nil {
		return Dev{}, false
	}
	return Dev{uint32(a), uint32(b)}, true
}
