package main

import (
	"github.com/spf13/cobra"

	"nsprof/record"
)

// newFillCmd is the hidden command a recording starts in the background
// to fill its symbol cache's entries whole (record.SymbolFill): it parses
// the flags the recording gives it and calls record.FillSymbolCache.
func newFillCmd() *cobra.Command {
	var opts record.FillOptions
	cmd := &cobra.Command{
		Use:    record.FillCommand,
		Short:  "Fill symbol cache entries whole (started by record)",
		Hidden: true,
		Args:   usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return record.FillSymbolCache(opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Dir, "dir", "", "the symbol cache directory")
	f.Int64Var(&opts.MaxBytes, "max-bytes", 0, "the cache's size bound")
	f.StringArrayVar(&opts.Files, "file", nil, "a file to fill, as JSON naming its inherited descriptors")
	f.DurationVar(&opts.Budget, "budget", 0, "how long to take at most (default record.DefaultFillBudget)")
	cmd.MarkFlagRequired("dir")
	return cmd
}
