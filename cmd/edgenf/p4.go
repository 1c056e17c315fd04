package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/edgenf/edgenf/internal/p4"
	"github.com/edgenf/edgenf/internal/p4/stf"
	"github.com/spf13/cobra"
)

// p4Flags are the compiler options shared by p4 compile and p4 test.
type p4Flags struct {
	includes []string
	defines  []string
	arch     string
	debug    bool
}

func (f *p4Flags) add(c *cobra.Command) {
	c.Flags().StringArrayVarP(&f.includes, "include", "I", nil, "directory searched by #include (repeatable)")
	c.Flags().StringArrayVarP(&f.defines, "define", "D", nil, "preprocessor macro NAME[=value] (repeatable)")
	c.Flags().StringVar(&f.arch, "arch", "", "P4 architecture the program must be written for: v1model or psa (default: the one its main package names)")
	c.Flags().BoolVar(&f.debug, "debug", false, "check assert/assume at run time (a failure drops the packet, counts and logs)")
}

// options reads the program (a local file: the CLI compiles for its user)
// and sets the flags; -I directories come after the program's own.
func (f *p4Flags) options(path string) (p4.Options, error) {
	opt, err := p4.FromFile(path)
	if err != nil {
		return opt, err
	}
	opt.Defines = map[string]string{}
	for _, d := range f.defines {
		k, v, _ := strings.Cut(d, "=")
		opt.Defines[k] = v
	}
	opt.IncludeDirs = append(opt.IncludeDirs, f.includes...)
	opt.Arch, opt.Debug = f.arch, f.debug
	return opt, nil
}

func p4Cmd() *cobra.Command {
	c := &cobra.Command{Use: "p4", Short: "Compile and test P4-16 programs; manage p4 cubes' tables BMv2-style",
		Long: "compile and test run locally (no daemon). The table-* and counter-read verbs work on a p4 cube\n" +
			"of the daemon like BMv2's simple_switch_CLI: positional match values and action parameters."}
	var pf p4Flags
	var out string
	var emitC bool
	var p4infoFiles []string
	compile := &cobra.Command{
		Use:   "compile PROGRAM.p4",
		Short: "Compile a P4 program to eBPF objects (XDP and TC) and a P4Info model",
		Example: "  edgenf p4 compile examples/p4/l3router.p4 -o build/ --emit-c\n" +
			"  edgenf p4 compile examples/p4/l3router.p4 --p4info l3router.p4info.txt   # for p4runtime-shell, ONOS, ...\n" +
			"  edgenf cube add r1 p4 --program examples/p4/l3router.p4   # run it as a cube",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			start := time.Now()
			for _, f := range p4infoFiles {
				if _, err := p4infoFormat(f); err != nil {
					return err
				}
			}
			opt, err := pf.options(args[0])
			if err != nil {
				return err
			}
			res, err := p4.Compile(context.Background(), opt)
			if err != nil {
				return err
			}
			for _, w := range res.Warnings() {
				fmt.Fprintln(os.Stderr, w)
			}
			// `-o DIR` as with p4c: the global -o names an output format
			// elsewhere, so a value that is none is the directory here.
			dir := out
			if cmd.Flags().Changed("output") && g.output != "table" && g.output != "json" && g.output != "yaml" {
				dir = g.output
			}
			base := strings.TrimSuffix(filepath.Base(args[0]), filepath.Ext(args[0]))
			files, err := res.WriteFiles(dir, base, emitC)
			if err != nil {
				return err
			}
			for _, f := range p4infoFiles {
				if err := writeP4Info(res.Info, f); err != nil {
					return err
				}
				files = append(files, f)
			}
			fmt.Printf("compiled %s in %v\n", args[0], time.Since(start).Round(time.Millisecond))
			for _, f := range files {
				fmt.Println("  " + f)
			}
			return nil
		},
	}
	pf.add(compile)
	compile.Flags().StringVarP(&out, "out-dir", "O", ".", "output directory (also -o DIR, as with p4c)")
	compile.Flags().BoolVar(&emitC, "emit-c", false, "also write the generated C")
	compile.Flags().StringSliceVar(&p4infoFiles, "p4info", nil,
		"also write the P4Info to FILE: protobuf text format (.txt), binary (.bin) or JSON (.json), as p4c's --p4runtime-files; repeat or separate with commas")

	var tf p4Flags
	var hook string
	var live bool
	test := &cobra.Command{
		Use:   "test PROGRAM.p4 TEST.stf",
		Short: "Run an STF test (p4c's format) against a P4 program in the kernel (BPF_PROG_TEST_RUN)",
		Example: "  edgenf p4 test examples/p4/l3router.p4 examples/p4/l3router.stf\n" +
			"  edgenf p4 test examples/p4/upf.p4 examples/p4/upf.stf --hook tc\n" +
			"  edgenf p4 test examples/p4/l3router.p4 examples/p4/l3router.stf --live",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opt, err := tf.options(args[0])
			if err != nil {
				return err
			}
			res, err := stf.RunFileMode(context.Background(), opt, args[1], hook, live)
			if err != nil {
				return err
			}
			for _, w := range res.Warnings {
				fmt.Fprintln(os.Stderr, w)
			}
			if !res.OK() {
				return fmt.Errorf("%d check(s) failed:\n%s", len(res.Failures), res.Error())
			}
			fmt.Printf("PASS %s (%d packets out)\n", args[1], len(res.Outputs))
			return nil
		},
	}
	tf.add(test)
	test.Flags().StringVar(&hook, "hook", "xdp", "run the program at xdp or tc")
	test.Flags().BoolVar(&live, "live", false, "send the packets through real veths in a namespace instead of BPF_PROG_TEST_RUN")
	test.RegisterFlagCompletionFunc("hook", fixedCompletion("xdp", "tc"))
	c.AddCommand(compile, test)
	c.AddCommand(p4RuntimeCmds()...)
	c.AddCommand(p4SlowPathCmds()...)
	c.AddCommand(p4ReplicationCmds()...) // p4replication.go
	c.AddCommand(p4ActProfCmds()...)     // p4actprof.go
	return c
}
