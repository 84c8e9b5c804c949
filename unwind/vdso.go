package unwind

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ReadVDSO returns the image of the vdso mapped into process pid (0: this
// process), read from its memory: the vdso exists in no file. Every
// process on one kernel maps the same image, so the recorder's own serves
// for all.
func ReadVDSO(pid int) ([]byte, error) {
	dir := "/proc/self"
	if pid > 0 {
		dir = "/proc/" + strconv.Itoa(pid)
	}
	f, err := os.Open(dir + "/maps")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasSuffix(line, " [vdso]") {
			continue
		}
		rng, _, _ := strings.Cut(line, " ")
		lo, hi, _ := strings.Cut(rng, "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start || end-start > 1<<20 {
			return nil, fmt.Errorf("%s/maps: bad vdso line %q", dir, line)
		}
		mem, err := os.Open(dir + "/mem")
		if err != nil {
			return nil, err
		}
		defer mem.Close()
		img := make([]byte, end-start)
		if _, err := mem.ReadAt(img, int64(start)); err != nil {
			return nil, fmt.Errorf("%s/mem at %#x: %w", dir, start, err)
		}
		return img, nil
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return nil, errors.New(dir + ": no vdso mapped")
}
