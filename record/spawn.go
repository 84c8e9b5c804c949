package record

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"nsprof/capture"
	"nsprof/internal/unix"
)

// holdScript makes the spawned shell wait on fd 3 until the recorder has
// opened its perf events on the shell's pid, then exec the command in the
// same process: with enable_on_exec the events start at that exec. If the
// recorder goes away without releasing it, the shell exits 125.
// NSPROF_MEMPROF_PRELOAD, when set, is moved into LD_PRELOAD only for that
// exec, so the shell is not profiled.
const holdScript = `read _ <&3 || exit 125; exec 3<&-; ` +
	`if [ -n "$NSPROF_MEMPROF_PRELOAD" ]; then LD_PRELOAD="$NSPROF_MEMPROF_PRELOAD${LD_PRELOAD:+:$LD_PRELOAD}"; export LD_PRELOAD; unset NSPROF_MEMPROF_PRELOAD; fi; ` +
	`exec "$@"`

// TraceVar is an environment variable through which a spawned command gets
// a capture file descriptor to write marks, logs and counters into.
type TraceVar struct {
	// Name is the variable, such as SYSPROF_TRACE_FD.
	Name string
	// Extra environment set with it, such as GJS_ENABLE_PROFILER=1.
	Extra []string
	// Header has the recorder write the capture's file header before
	// the command starts, so that the command's processes, which share
	// the descriptor's offset, only append frames.
	Header bool
}

// passFile is a descriptor handed to the command as variable name, with
// extra environment set with it.
type passFile struct {
	name  string
	file  *os.File
	extra []string
}

// child is a spawned command held before its exec.
type child struct {
	cmd     *exec.Cmd
	release *os.File
	traces  []traceFD
	done    chan struct{}
	state   *os.ProcessState
	waitErr error
}

// traceFD is the profiler's copy of a memfd handed to the child.
type traceFD struct {
	name string
	file *os.File
}

// spawn starts argv held before exec (see holdScript), with env added to
// the recorder's environment, one memfd per trace variable and the pass
// descriptors.
func spawn(argv, env []string, traces []TraceVar, pass []passFile) (c *child, err error) {
	if len(argv) == 0 {
		return nil, errors.New("no command to run")
	}
	if _, err := exec.LookPath(argv[0]); err != nil {
		return nil, fmt.Errorf("command %q: %w", argv[0], err)
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		return nil, fmt.Errorf("spawn %q: %w", argv[0], err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	c = &child{release: w, done: make(chan struct{})}
	defer func() {
		if err != nil {
			r.Close()
			w.Close()
			for _, t := range c.traces {
				t.file.Close()
			}
		}
	}()
	extra := []*os.File{r}
	var vars []string
	for _, tv := range traces {
		fd, err := unix.MemfdCreate("[sysprof-tracefd:"+tv.Name+"]", unix.MFD_CLOEXEC)
		if err != nil {
			return nil, fmt.Errorf("create trace fd for %s: %w", tv.Name, err)
		}
		f := os.NewFile(uintptr(fd), tv.Name)
		c.traces = append(c.traces, traceFD{name: tv.Name, file: f})
		if tv.Header {
			// A plain io.Writer: the Writer must not patch the header
			// later, it is dropped unclosed.
			if _, err := capture.NewWriter(struct{ io.Writer }{f}); err != nil {
				return nil, fmt.Errorf("trace fd for %s: %w", tv.Name, err)
			}
		}
		vars = append(vars, fmt.Sprintf("%s=%d", tv.Name, 3+len(extra)))
		vars = append(vars, tv.Extra...)
		extra = append(extra, f)
	}
	for _, p := range pass {
		vars = append(vars, fmt.Sprintf("%s=%d", p.name, 3+len(extra)))
		vars = append(vars, p.extra...)
		extra = append(extra, p.file)
	}
	cmd := exec.Command(sh, append([]string{"-c", holdScript, "nsprof-hold"}, argv...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(append(cleanEnv(os.Environ(), traces), vars...), env...)
	cmd.ExtraFiles = extra
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("spawn %q: %w", argv[0], err)
	}
	r.Close()
	c.cmd = cmd
	go func() {
		c.waitErr = cmd.Wait()
		c.state = cmd.ProcessState
		close(c.done)
	}()
	return c, nil
}

// cleanEnv drops inherited trace variables that we set ourselves, so a
// recorder started under another profiler does not hand the child the
// outer profiler's fd.
func cleanEnv(env []string, traces []TraceVar) []string {
	out := env[:0:0]
	for _, kv := range env {
		drop := false
		for _, tv := range traces {
			if strings.HasPrefix(kv, tv.Name+"=") {
				drop = true
			}
		}
		if !drop {
			out = append(out, kv)
		}
	}
	return out
}

// pid returns the child's pid, which stays the same across the exec.
func (c *child) pid() int { return c.cmd.Process.Pid }

// start lets the held shell exec the command.
func (c *child) start() error {
	_, err := c.release.Write([]byte("go\n"))
	c.release.Close()
	if err != nil {
		return fmt.Errorf("release command: %w", err)
	}
	return nil
}

// abort kills a child that was never started.
func (c *child) abort() {
	c.release.Close()
	c.cmd.Process.Kill()
	<-c.done
}

// exitStatus converts the child's end into nsprof's exit status, as a shell
// does: the exit code, or 128 + signal number.
func (c *child) exitStatus() (code int, desc string) {
	st := c.state
	if st == nil {
		return 1, "unknown"
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), "terminated by signal " + unix.SignalName(ws.Signal())
	}
	return st.ExitCode(), fmt.Sprintf("exited with status %d", st.ExitCode())
}
