package main

import (
	"fmt"
	"os"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/doctor"
	"github.com/spf13/cobra"
)

func doctorCmd() *cobra.Command {
	var bpffs string
	c := &cobra.Command{
		Use:   "doctor",
		Short: "Check this machine and the daemon, each problem with its fix; changes nothing",
		Long: `doctor checks what edgenf needs, without changing anything: the kernel (every program
type, map type and helper the built-in NFs use, probed), BTF, the eBPF JIT, bpffs, how TC
programs attach (TCX or classic), the memlock limit, clang for P4, whether the daemon answers,
and native or generic XDP on each interface the daemon's topology uses. Run it as root: the
probes load tiny programs. It exits 1 when something is broken.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var doc cube.Document
			daemonErr := api().Do("GET", "/v1/topology", nil, &doc)
			rs := doctor.Run(doctor.Options{
				BPFFS:      bpffs,
				Interfaces: doctor.Interfaces(&doc),
				Daemon: func() (string, error) {
					if daemonErr != nil {
						return "", daemonErr
					}
					return fmt.Sprintf("%d cubes, %d interfaces", len(doc.Cubes), len(doctor.Interfaces(&doc))), nil
				},
			})
			if g.output == "table" {
				doctor.Print(os.Stdout, rs)
			} else if err := show(os.Stdout, rs, nil); err != nil {
				return err
			}
			if doctor.Failed(rs) {
				return fmt.Errorf("edgenf cannot work fully on this machine: see the FAIL lines and their fixes above")
			}
			return nil
		},
	}
	c.Flags().StringVar(&bpffs, "bpffs", "", "the daemon's bpffs directory (default /sys/fs/bpf/edgenf)")
	return c
}
