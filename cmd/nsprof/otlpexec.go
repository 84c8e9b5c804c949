//go:build !otlp

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
)

func newAgentCmd() *cobra.Command { return otlpCommand(agentUse, agentShort) }

func newPushCmd() *cobra.Command { return otlpCommand(pushUse, pushShort) }

// otlpCommand is a command of nsprof-otlp (see otlpBinary): it executes
// nsprof-otlp, found next to this executable, with the command's name and
// arguments, flags and --help included, as git runs git-NAME.
func otlpCommand(use, short string) *cobra.Command {
	name, _, _ := strings.Cut(use, " ")
	return &cobra.Command{
		Use:   use,
		Short: short,
		Long: short + `.

This command is run by ` + otlpBinary + `, nsprof built with the OTLP client, which
make build puts next to nsprof; its --help gives the flags.`,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			path, err := findOTLPBinary()
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			return execOTLP(path, append([]string{otlpBinary, name}, args...))
		},
	}
}

// execOTLP replaces the process with the program at path, given argv
// and this environment (a variable for the tests).
var execOTLP = func(path string, argv []string) error {
	if err := syscall.Exec(path, argv, os.Environ()); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// executable is os.Executable (a variable for the tests).
var executable = os.Executable

// findOTLPBinary returns the path of nsprof-otlp next to the running
// executable (its links resolved): as trusted as this program, where a
// search of $PATH would run whatever a user's PATH names as root.
func findOTLPBinary() (string, error) {
	exe, err := executable()
	if err != nil {
		return "", err
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	path := filepath.Join(filepath.Dir(exe), otlpBinary)
	st, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("%s not found next to %s: it sends the OTLP profiles (make build puts it there)", otlpBinary, exe)
	}
	if !st.Mode().IsRegular() || st.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%s: not an executable file", path)
	}
	return path, nil
}
