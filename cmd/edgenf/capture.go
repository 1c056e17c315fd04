package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/edgenf/edgenf/internal/capture"
	"github.com/spf13/cobra"
)

func captureCmd() *cobra.Command {
	var (
		dir, filter, file, format, duration string
		count, snaplen                      int
		rate                                int64
	)
	c := &cobra.Command{
		Use:   "capture POINT [FILTER...] -w FILE|-",
		Short: "Capture packets at a cube port (cube:port), a Linux interface or a slice (slice/NAME), in the kernel, to pcapng or pcap",
		Long: "The daemon attaches a transparent capture cube at POINT (innermost: it sees what the cube receives on\n" +
			"that port and what it sends out of it) and streams what it copies: at most --snaplen bytes of each\n" +
			"frame that matches the filter (tcpdump syntax, compiled by libpcap; given as --filter or as the words\n" +
			"after POINT), at most --rate frames per second per CPU. The capture ends after -c frames, after\n" +
			"--duration, or on Ctrl-C, and its cube is removed. pcapng names the point in the interface's name\n" +
			"and description and gives each frame's direction (in: towards the point's cube or host).\n" +
			"POINT slice/NAME (or slice/SLICER/NAME) is a slice's entry and exit, the slicer port leading into its\n" +
			"chain: out is what enters the slice's chain, in what leaves it.\n" +
			"A tenant captures only at its own points, and its own slices.",
		Example: "  edgenf capture c1:p0 -w - | tshark -r -\n" +
			"  edgenf capture r1:p1 --direction in -c 100 -w r1.pcapng udp port 53\n" +
			"  edgenf capture veth0 --duration 10s --snaplen 128 -w veth0.pcap\n" +
			"  edgenf capture slice/rail --direction out -c 50 -w rail.pcapng",
		Args: cobra.MinimumNArgs(1), ValidArgsFunction: completeCubes,
		RunE: func(cmd *cobra.Command, args []string) error {
			if file == "" {
				return errors.New("give -w FILE, or -w - for standard output")
			}
			if len(args) > 1 {
				if filter != "" {
					return errors.New("give the filter either with --filter or after the point, not both")
				}
				filter = strings.Join(args[1:], " ")
			}
			if format == "" {
				format = "pcapng"
				if strings.HasSuffix(file, ".pcap") {
					format = "pcap"
				}
			}
			if format != "pcapng" && format != "pcap" {
				return fmt.Errorf("--format %q: give pcapng or pcap", format)
			}
			req := map[string]any{"direction": dir, "filter": filter, "snaplen": snaplen,
				"rate": rate, "count": count, "duration": duration}
			if sl, ok := strings.CutPrefix(args[0], "slice/"); ok {
				req["slice"] = sl
			} else {
				req["point"] = args[0]
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			body, err := api().Stream(ctx, "/v1/captures", req)
			if err != nil {
				return err
			}
			defer body.Close()
			out := io.Writer(os.Stdout)
			if file != "-" {
				f, err := os.Create(file)
				if err != nil {
					return err
				}
				defer f.Close()
				out = f
			}
			write := func(_ uint32, block []byte) error { _, err := out.Write(block); return err }
			if format == "pcap" {
				write = capture.NewPcapWriter(out).Block
			}
			var (
				packets uint64
				stats   *capture.Stats
			)
			err = capture.ReadBlocks(body, func(typ uint32, block []byte) error {
				if capture.IsPacket(typ) {
					packets++
				} else if capture.IsStats(typ) {
					s := capture.ParseStats(block)
					stats = &s
				}
				return write(typ, block)
			})
			if err != nil && ctx.Err() == nil {
				if errors.Is(err, syscall.EPIPE) {
					return nil // the reader (tshark, head) is gone
				}
				return err
			}
			fmt.Fprintf(os.Stderr, "%d packets captured at %s\n", packets, args[0])
			if stats != nil {
				fmt.Fprintf(os.Stderr, "%d seen in the directions asked, %d matched the filter, %d dropped (rate bound or full ring)\n",
					stats.Seen, stats.Matched, stats.RingDrop)
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVarP(&file, "write", "w", "", "file to write, - for standard output (streamed as captured)")
	f.StringVar(&dir, "direction", "both", "in (towards the point's cube or host), out or both")
	f.StringVar(&filter, "filter", "", "tcpdump filter expression (also accepted after POINT)")
	f.IntVarP(&count, "count", "c", 0, "stop after this many packets (0: no limit)")
	f.StringVar(&duration, "duration", "", "stop after this long (e.g. 30s)")
	f.IntVarP(&snaplen, "snaplen", "s", 0, "bytes of each frame to keep (0: 16384, the most)")
	f.Int64Var(&rate, "rate", 0, "at most this many frames per second per CPU (0: 100000; -1: no bound)")
	f.StringVar(&format, "format", "", "pcapng (default) or pcap (default for a FILE ending in .pcap)")
	c.RegisterFlagCompletionFunc("direction", fixedCompletion("in", "out", "both"))
	c.RegisterFlagCompletionFunc("format", fixedCompletion("pcapng", "pcap"))
	return c
}
