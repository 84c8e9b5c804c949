package record

import (
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"

	"nsprof/capture"
)

// Redaction says whose command lines a capture keeps. A command line may
// carry secrets (a --password=… argument); in a system-wide recording
// made as root, those of every user's processes would go into a file
// that is then shared.
type Redaction int

const (
	// RedactOthers keeps the command lines of processes run by the user
	// who invoked nsprof (SUDO_UID or PKEXEC_UID when nsprof runs through
	// sudo or pkexec, else its real uid) or by the user nsprof runs as,
	// which the recorded command runs as too; other users' processes keep
	// only the program's name. The default.
	RedactOthers Redaction = iota
	// RedactAll keeps only the program's name of every process.
	RedactAll
	// RedactNone keeps every command line.
	RedactNone
)

// String returns the name ParseRedaction takes.
func (r Redaction) String() string {
	switch r {
	case RedactOthers:
		return "others"
	case RedactAll:
		return "all"
	case RedactNone:
		return "none"
	}
	return fmt.Sprintf("Redaction(%d)", int(r))
}

// ParseRedaction parses "others", "all" or "none".
func ParseRedaction(s string) (Redaction, error) {
	for _, r := range []Redaction{RedactOthers, RedactAll, RedactNone} {
		if s == r.String() {
			return r, nil
		}
	}
	return 0, fmt.Errorf("command line redaction %q: want others, all or none", s)
}

// InvokingUsers returns the users whose command lines RedactOthers keeps:
// nsprof's real uid and, when it runs through sudo or pkexec, the user
// who ran that (SUDO_UID, PKEXEC_UID).
func InvokingUsers() []uint32 {
	users := []uint32{uint32(os.Getuid())}
	for _, v := range []string{"SUDO_UID", "PKEXEC_UID"} {
		if u, err := strconv.ParseUint(os.Getenv(v), 10, 32); err == nil {
			users = append(users, uint32(u))
		}
	}
	return users
}

// redactor cuts the command lines a capture must not keep.
type redactor struct {
	mode  Redaction
	users []uint32
	// cut counts the command lines cut.
	cut int
}

// apply cuts pi's command line to the program's name unless the policy
// keeps it. A process whose owner could not be read counts as another
// user's.
func (r *redactor) apply(pi *capture.ProcessInfo, uidKnown bool) {
	if r == nil || r.mode == RedactNone || len(pi.Cmdline) == 0 {
		return
	}
	if r.mode == RedactOthers && uidKnown {
		for _, u := range r.users {
			if pi.UID == u {
				return
			}
		}
	}
	pi.Cmdline = []string{programName(pi.Cmdline[0], pi.Comm)}
	pi.CmdlineRedacted = true
	r.cut++
}

// programName returns the name of argv0 without its directory, or comm
// when argv0 is no plain name: a process may rewrite its argv into a
// title (setproctitle, "postgres: alice sales [local] idle").
func programName(argv0, comm string) string {
	name := path.Base(argv0)
	if argv0 == "" || strings.ContainsAny(name, " \t\n") {
		return comm
	}
	return name
}
