package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// genDocsCmd writes the man pages and shell completions that `make install`
// and `make deb` install; hidden, since users get them installed.
func genDocsCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "gen-docs DIR",
		Short:  "Write man pages (DIR/man) and shell completions (DIR/completions)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			root := cmd.Root()
			man, comp := filepath.Join(args[0], "man"), filepath.Join(args[0], "completions")
			for _, d := range []string{man, comp} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					return err
				}
			}
			root.DisableAutoGenTag = true // reproducible pages
			hdr := &doc.GenManHeader{Title: "EDGENF", Section: "1", Source: "edgenf", Manual: "edgenf manual"}
			if err := doc.GenManTree(root, hdr, man); err != nil {
				return fmt.Errorf("man pages: %w", err)
			}
			for name, gen := range map[string]func(string) error{
				"edgenf.bash": func(f string) error { return root.GenBashCompletionFileV2(f, true) },
				"_edgenf":     root.GenZshCompletionFile,
				"edgenf.fish": func(f string) error { return root.GenFishCompletionFile(f, true) },
			} {
				if err := gen(filepath.Join(comp, name)); err != nil {
					return fmt.Errorf("completion %s: %w", name, err)
				}
			}
			return nil
		},
	}
}
