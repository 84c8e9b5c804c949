package proc_test

import (
	"fmt"
	"strings"

	"nsprof/proc"
)

func ExampleParseMaps() {
	const maps = "55b6c83f7000-55b6c83f9000 r-xp 00002000 fe:00 9978298    /opt/app/bin/hot (deleted)\n" +
		"7ffd1000-7ffd3000 r-xp 00000000 00:00 0                      [vdso]\n"
	mappings, err := proc.ParseMaps(strings.NewReader(maps))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range mappings {
		fmt.Printf("%#x %s %s dev=%s ino=%d deleted=%v pseudo=%v\n",
			m.Start, m.Perms, m.Path, m.Dev, m.Inode, m.Deleted, m.IsPseudo())
	}
	_, err = proc.ParseMaps(strings.NewReader("1000-2000 r-xp 0 00:00 x /a\n"))
	fmt.Println(err)
	// Output:
	// 0x55b6c83f7000 r-xp /opt/app/bin/hot dev=254:0 ino=9978298 deleted=true pseudo=false
	// 0x7ffd1000 r-xp [vdso] dev=0:0 ino=0 deleted=false pseudo=true
	// maps:1: bad inode "1000-2000 r-xp 0 00:00 x /a"
}

func ExampleStatus_InnermostPid() {
	st, err := proc.ParseStatus(strings.NewReader("Name:\tsleep\nPid:\t5688\nNSpid:\t5688\t1\n"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(st.NSpid, st.InnermostPid())
	// Output: [5688 1] 1
}

// A container's own view of its processes is read through its proc mount.
func ExampleFS() {
	const hostPID = 5688
	inner := proc.FS{Root: fmt.Sprintf("/proc/%d/root/proc", hostPID)}
	pids, err := inner.PIDs()
	fmt.Println(pids, err)
}
