// Command isolation measures slice isolation under attack (issue 15): what
// a victim flow keeps of its delivered rate and its p99 one-way delay
// through a contended egress link, alone and while an aggressor floods the
// same link at three times its rate. Three setups carry the same two UDP
// flows from one sender to one receiver:
//
//   - edgenf: a slicer at TC classifies the flows into two slices by UDP
//     port, each leading straight into its entry of a portfwd cube (chain
//     slices), which sends both out of the receiver's link; the slicer owns
//     that link's HTB tree, and the victim's slice has a guaranteed minimum
//     and priority 0;
//   - Linux tc: a router namespace forwards the flows (no edgenf), with htb
//     classes of the same rates and priorities on its egress and u32
//     filters on the UDP port, what an operator builds by hand;
//   - Linux, no classes: the same router with its default qdisc: what the
//     attack does when nothing keeps the slices apart.
//
// It writes a markdown table (-o, included in docs/performance.md by the
// bench report) and a figure (-img). Bounded: every flow runs -dur (3 s; 1 s
// with -quick), -reps times.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"image/color"
	"io"
	"log"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/engine"
	"github.com/edgenf/edgenf/internal/netlab"
	_ "github.com/edgenf/edgenf/internal/nf/portfwd"
	"github.com/edgenf/edgenf/internal/nf/slicer"
)

const (
	linkBps     = 20e6 // the contended egress link
	victimMin   = 8e6  // the victim's guaranteed minimum
	victimBps   = 6e6  // what the victim offers: under its guarantee
	attackBps   = 3 * linkBps
	payload     = 1000
	frameBits   = (payload + 42) * 8 // UDP payload + UDP, IPv4, Ethernet headers
	victimPort  = 6002
	attackPort  = 6001
	victimClass = "1:10"
	attackClass = "1:20"
)

func pps(bps float64) int { return int(bps / frameBits) }

// result is the victim's median figures over the repetitions of one case.
type result struct {
	Setup, Load     string
	VictimMbps      float64 // delivered
	VictimDelivered float64 // share of what it sent
	VictimP99ms     float64
	AttackMbps      float64 // the aggressor's delivered rate (under attack)
}

// setup is one way of carrying the flows: sender and receiver hosts, and
// the receiver's address.
type setup struct {
	name     string
	src, dst *netlab.Host
	dstIP    net.IP
}

func main() {
	out := flag.String("o", "bench/results/slice-isolation.md", "markdown table path")
	img := flag.String("img", "docs/img", "directory for the figure (the markdown links it as img/<name>, from docs/)")
	quick := flag.Bool("quick", false, "1 s flows, one repetition")
	dur := flag.Duration("dur", 3*time.Second, "length of each measured flow")
	reps := flag.Int("reps", 3, "repetitions of each case (the median is reported)")
	flag.Parse()
	if *quick {
		*dur, *reps = time.Second, 1
	}
	log.SetFlags(0)
	lab, err := netlab.New(netlab.UniquePrefix())
	if err != nil {
		log.Fatal(err)
	}
	stateDir, err := os.MkdirTemp("", "edgenf-isolation-")
	if err != nil {
		log.Fatal(err)
	}
	var eng *engine.Engine
	cleanup := func() {
		if eng != nil {
			eng.Destroy()
		}
		lab.Close()
		os.RemoveAll(stateDir)
	}
	fail := func(err error) {
		cleanup()
		log.Fatal(err)
	}
	edge, e, err := edgenfSetup(lab, stateDir)
	eng = e
	if err != nil {
		fail(fmt.Errorf("edgenf setup: %w", err))
	}
	plain, router, err := linuxSetup(lab)
	if err != nil {
		fail(fmt.Errorf("linux setup: %w", err))
	}
	var results []result
	measure := func(s setup, label string) error {
		for _, load := range []string{"alone", "under attack"} {
			r, err := run(s, load, *dur, *reps)
			if err != nil {
				return fmt.Errorf("%s, %s: %w", label, load, err)
			}
			r.Setup = label
			results = append(results, r)
			log.Printf("%-20s %-13s victim %6.2f Mbit/s (%5.1f%% delivered), p99 %7.2f ms; aggressor %6.2f Mbit/s",
				label, load, r.VictimMbps, 100*r.VictimDelivered, r.VictimP99ms, r.AttackMbps)
		}
		return nil
	}
	if err := measure(edge, "edgenf slicer"); err != nil {
		fail(err)
	}
	if err := measure(plain, "Linux, no classes"); err != nil {
		fail(err)
	}
	if err := tcClasses(router); err != nil {
		fail(fmt.Errorf("tc: %w", err))
	}
	if err := measure(plain, "Linux tc htb + u32"); err != nil {
		fail(err)
	}
	cleanup()
	if err := write(*out, *img, results, *dur, *reps); err != nil {
		log.Fatal(err)
	}
}

// run measures one case: the victim's flow, alone or beside the
// aggressor's, reps times; the figures are the medians.
func run(s setup, load string, dur time.Duration, reps int) (result, error) {
	flows := []netlab.PacedFlow{{Port: victimPort, PPS: pps(victimBps), Payload: payload}}
	if load != "alone" {
		flows = append(flows, netlab.PacedFlow{Port: attackPort, PPS: pps(attackBps), Payload: payload})
	}
	var rate, share, p99, attack []float64
	for range reps {
		res, err := netlab.PacedUDP(context.Background(), s.src, s.dst, s.dstIP, dur, flows)
		if err != nil {
			return result{}, err
		}
		v := res[0]
		rate = append(rate, float64(v.Recv)*frameBits/v.Elapsed.Seconds()/1e6)
		share = append(share, v.Delivered())
		p99 = append(p99, float64(v.P99())/float64(time.Millisecond))
		if len(res) > 1 {
			attack = append(attack, float64(res[1].Recv)*frameBits/res[1].Elapsed.Seconds()/1e6)
		}
	}
	return result{Load: load, VictimMbps: median(rate), VictimDelivered: median(share), VictimP99ms: median(p99), AttackMbps: median(attack)}, nil
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	v = slices.Clone(v)
	slices.Sort(v)
	return v[len(v)/2]
}

// edgenfSetup: host s (198.18.0.10) sends to host d (198.18.0.20) through
// slicer sl (TC) and portfwd mg, which sends both slices out of vd, d's
// link; the slicer shapes vd at the link rate.
func edgenfSetup(lab *netlab.Lab, stateDir string) (setup, *engine.Engine, error) {
	s, err := lab.Host("s")
	if err != nil {
		return setup{}, nil, err
	}
	d, err := lab.Host("d")
	if err != nil {
		return setup{}, nil, err
	}
	vs, err := lab.Veth(s, "eth0", "vs", "198.18.0.10/24")
	if err != nil {
		return setup{}, nil, err
	}
	vd, err := lab.Veth(d, "eth0", "vd", "198.18.0.20/24")
	if err != nil {
		return setup{}, nil, err
	}
	mac, err := d.MAC("eth0")
	if err != nil {
		return setup{}, nil, err
	}
	if err := s.SetNeigh("eth0", "198.18.0.20", mac.String()); err != nil {
		return setup{}, nil, err
	}
	eng, err := engine.Open(engine.Config{PinRoot: filepath.Join("/sys/fs/bpf", lab.Prefix()), StateFile: filepath.Join(stateDir, "state.json"),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return setup{}, nil, err
	}
	prio0 := 0
	rows := map[string]json.RawMessage{}
	for _, sl := range []slicer.Slice{
		{Name: "victim", ID: 1, Chain: "mg:ib", MinBps: victimMin, Priority: &prio0, Rules: []slicer.Rule{{Proto: "udp", DPort: victimPort}}},
		{Name: "aggressor", ID: 2, Chain: "mg:ia", Rules: []slicer.Rule{{Proto: "udp", DPort: attackPort}}},
	} {
		rows[sl.Name], _ = json.Marshal(sl)
	}
	cfg, _ := json.Marshal(slicer.Settings{Uplink: "up", Egress: []slicer.Egress{{Interface: vd, RateBps: linkBps}}})
	err = eng.Update(func(tp *cube.Topology) error {
		tp.Put(&cube.Cube{Name: "mg", Type: "portfwd", Hook: "tc",
			Ports: []cube.Port{{Name: "ia", Index: 0}, {Name: "ib", Index: 1}, {Name: "out", Index: 2, Peer: vd}},
			Tables: map[string]map[string]json.RawMessage{"rules": {
				"ia":  json.RawMessage(`{"in_port":"ia","out_port":"out"}`),
				"ib":  json.RawMessage(`{"in_port":"ib","out_port":"out"}`),
				"out": json.RawMessage(`{"in_port":"out","out_port":"ib"}`),
			}}})
		return tp.AddCube(&cube.Cube{Name: "sl", Type: "slicer", Hook: "tc", Config: cfg,
			Tables: map[string]map[string]json.RawMessage{"slices": rows},
			Ports:  []cube.Port{{Name: "up", Index: 0, Peer: vs}}})
	})
	return setup{name: "edgenf", src: s, dst: d, dstIP: net.IPv4(198, 18, 0, 20)}, eng, err
}

// linuxSetup: host s2 (198.18.2.10) sends to host d2 (198.18.3.20) through
// router namespace r, which forwards; its link to d2 (e1) is the contended
// one, limited to the link rate by tcClasses.
func linuxSetup(lab *netlab.Lab) (setup, *netlab.Host, error) {
	var h [3]*netlab.Host
	for i, n := range []string{"s2", "r", "d2"} {
		var err error
		if h[i], err = lab.Host(n); err != nil {
			return setup{}, nil, err
		}
	}
	s, r, d := h[0], h[1], h[2]
	if err := lab.Link(s, "eth0", r, "e0", []string{"198.18.2.10/24"}, []string{"198.18.2.1/24"}); err != nil {
		return setup{}, nil, err
	}
	if err := lab.Link(r, "e1", d, "eth0", []string{"198.18.3.1/24"}, []string{"198.18.3.20/24"}); err != nil {
		return setup{}, nil, err
	}
	if err := r.Sysctl("net.ipv4.ip_forward", "1"); err != nil {
		return setup{}, nil, err
	}
	if err := s.AddRoute("198.18.3.0/24", "198.18.2.1"); err != nil {
		return setup{}, nil, err
	}
	if err := d.AddRoute("198.18.2.0/24", "198.18.3.1"); err != nil {
		return setup{}, nil, err
	}
	// the link's rate alone first (no classes): one htb class for all
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, args := range [][]string{
		{"qdisc", "replace", "dev", "e1", "root", "handle", "1:", "htb", "default", "1"},
		{"class", "add", "dev", "e1", "parent", "1:", "classid", "1:1", "htb", "rate", bits(linkBps), "ceil", bits(linkBps)},
	} {
		if out, err := r.Exec(ctx, "tc", args...); err != nil {
			return setup{}, nil, fmt.Errorf("tc %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	return setup{name: "linux", src: s, dst: d, dstIP: net.IPv4(198, 18, 3, 20)}, r, nil
}

// tcClasses gives r's egress the classes the slicer builds (the victim's
// guaranteed minimum at priority 0; the aggressor borrows, at priority 4)
// and u32 filters that put each flow in its class by UDP port.
func tcClasses(r *netlab.Host) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, args := range [][]string{
		{"qdisc", "del", "dev", "e1", "root"},
		{"qdisc", "add", "dev", "e1", "root", "handle", "1:", "htb", "default", "20"},
		{"class", "add", "dev", "e1", "parent", "1:", "classid", "1:1", "htb", "rate", bits(linkBps), "ceil", bits(linkBps)},
		{"class", "add", "dev", "e1", "parent", "1:1", "classid", victimClass, "htb", "rate", bits(victimMin), "ceil", bits(linkBps), "prio", "0"},
		{"class", "add", "dev", "e1", "parent", "1:1", "classid", attackClass, "htb", "rate", "8kbit", "ceil", bits(linkBps), "prio", "4"},
		{"filter", "add", "dev", "e1", "parent", "1:", "protocol", "ip", "prio", "1", "u32",
			"match", "ip", "protocol", "17", "0xff", "match", "ip", "dport", fmt.Sprint(victimPort), "0xffff", "flowid", victimClass},
		{"filter", "add", "dev", "e1", "parent", "1:", "protocol", "ip", "prio", "1", "u32",
			"match", "ip", "protocol", "17", "0xff", "match", "ip", "dport", fmt.Sprint(attackPort), "0xffff", "flowid", attackClass},
	} {
		if out, err := r.Exec(ctx, "tc", args...); err != nil {
			return fmt.Errorf("tc %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

func bits(bps float64) string { return fmt.Sprintf("%dkbit", int(bps/1000)) }

// write renders the table and the figure.
func write(out, imgDir string, rs []result, dur time.Duration, reps int) error {
	const figure = "slice-isolation.png"
	var b strings.Builder
	fmt.Fprintf(&b, "## Slice isolation under attack\n\n")
	fmt.Fprintf(&b, "`go run ./bench/cmd/isolation` (`make bench`): a victim flow offers %.0f Mbit/s of %d-byte UDP datagrams "+
		"through a %.0f Mbit/s egress link, alone and while an aggressor offers %.0f Mbit/s to the same link. edgenf: a slicer "+
		"at TC (slices by UDP port, chain entries into a portfwd; the victim's slice guaranteed %.0f Mbit/s at priority 0, "+
		"the HTB tree the slicer owns). Linux tc: a router namespace with the same htb classes and u32 filters on its egress, "+
		"no edgenf. Linux, no classes: that router with one htb class of the link rate. Medians of %d runs of %v each; "+
		"a rate is the datagrams received over the sending time (a queue left at the end drains after it, so a flooded "+
		"link shows a little above its rate); delay is one way, sender to receiver socket.\n\n",
		victimBps/1e6, payload, linkBps/1e6, attackBps/1e6, victimMin/1e6, reps, dur)
	fmt.Fprintf(&b, "| setup | load | victim delivered | victim delivered share | victim p99 delay | aggressor delivered |\n|---|---|---:|---:|---:|---:|\n")
	for _, r := range rs {
		atk := "–"
		if r.Load != "alone" {
			atk = fmt.Sprintf("%.2f Mbit/s", r.AttackMbps)
		}
		fmt.Fprintf(&b, "| %s | %s | %.2f Mbit/s | %.1f%% | %.2f ms | %s |\n", r.Setup, r.Load, r.VictimMbps, 100*r.VictimDelivered, r.VictimP99ms, atk)
	}
	fmt.Fprintf(&b, "\n![victim rate and p99 delay, alone and under attack](img/%s)\n", figure)
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
		return err
	}
	if err := os.MkdirAll(imgDir, 0o755); err != nil {
		return err
	}
	return plotFigure(filepath.Join(imgDir, figure), rs)
}

// plotFigure draws the victim's delivered rate and p99 delay per setup,
// alone and under attack side by side.
func plotFigure(path string, rs []result) error {
	var setups []string
	for _, r := range rs {
		if !slices.Contains(setups, r.Setup) {
			setups = append(setups, r.Setup)
		}
	}
	pick := func(load string, f func(result) float64) plotter.Values {
		v := make(plotter.Values, len(setups))
		for _, r := range rs {
			if r.Load == load {
				v[slices.Index(setups, r.Setup)] = f(r)
			}
		}
		return v
	}
	panel := func(title, ylabel string, f func(result) float64) (*plot.Plot, error) {
		p := plot.New()
		p.Title.Text = title
		p.Y.Label.Text = ylabel
		bw := vg.Points(18)
		for i, load := range []string{"alone", "under attack"} {
			bars, err := plotter.NewBarChart(pick(load, f), bw)
			if err != nil {
				return nil, err
			}
			bars.Color = []color.Color{color.RGBA{R: 60, G: 110, B: 180, A: 255}, color.RGBA{R: 200, G: 60, B: 50, A: 255}}[i]
			bars.Offset = vg.Length(2*i-1) * bw / 2
			p.Add(bars)
			p.Legend.Add("victim "+load, bars)
		}
		p.Legend.Top = true
		p.NominalX(setups...)
		p.Y.Min = 0
		top := 0.0
		for _, r := range rs {
			top = max(top, f(r))
		}
		p.Y.Max = top * 1.4 // room for the legend
		return p, nil
	}
	rate, err := panel("victim delivered rate", "Mbit/s", func(r result) float64 { return r.VictimMbps })
	if err != nil {
		return err
	}
	delay, err := panel("victim p99 one-way delay", "ms", func(r result) float64 { return r.VictimP99ms })
	if err != nil {
		return err
	}
	const w, h = 24 * vg.Centimeter, 10 * vg.Centimeter
	c := vgimg.New(w, h)
	tiles := plot.Align([][]*plot.Plot{{rate, delay}}, draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Centimeter}, draw.New(c))
	rate.Draw(tiles[0][0])
	delay.Draw(tiles[0][1])
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
