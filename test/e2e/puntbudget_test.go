package e2e

import (
	"net"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/testenv"
)

// TestPuntFloodLeavesOtherCubesSlowPath: tenant red's cube punts every
// frame and its host floods it (bounded: 300,000 datagrams or 5 s);
// meanwhile tenant blue's cube punts the 30 datagrams its host sends.
// Every one of blue's punts reaches its controller, and red's punts
// beyond its budget (punts_per_second 2,000, punt_burst 200 by default)
// are dropped in the kernel and counted on red's cube, not on blue's.
func TestPuntFloodLeavesOtherCubesSlowPath(t *testing.T) {
	testenv.E2E(t)
	d := startDaemon(t)
	lab, a, _, ra, rb := twoHosts(t)
	c, err := lab.Host("c")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Sysctl("net.ipv6.conf.default.disable_ipv6", "1"); err != nil {
		t.Fatal(err)
	}
	rc, err := lab.Veth(c, "eth0", "c", "198.18.1.1/24")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetNeigh("eth0", "198.18.1.2", "02:00:00:00:01:02"); err != nil {
		t.Fatal(err)
	}

	d.cli("cube", "add", "red1", "portfwd", "--tenant", "red")
	d.cli("port", "add", "red1", "p0", "--peer", ra)
	d.cli("port", "add", "red1", "p1", "--peer", rb)
	d.cli("table", "add", "red1", "rules", "in_port=p0", "action=punt")
	d.cli("cube", "add", "blue1", "portfwd", "--tenant", "blue")
	d.cli("port", "add", "blue1", "p0", "--peer", rc)
	d.cli("table", "add", "blue1", "rules", "in_port=p0", "action=punt")

	dial := func(h nsHost, dst string, port int) *net.UDPConn {
		var conn *net.UDPConn
		if err := h.Do(func() error {
			var err error
			conn, err = net.DialUDP("udp", nil, &net.UDPAddr{IP: net.ParseIP(dst), Port: port})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return conn
	}
	flood, blue := dial(a, "198.18.0.2", 7300), dial(c, "198.18.1.2", 7301)
	defer flood.Close()
	defer blue.Close()
	flooded := make(chan int)
	go func() {
		n, payload, end := 0, make([]byte, 64), time.Now().Add(5*time.Second)
		for ; n < 300_000 && time.Now().Before(end); n++ {
			flood.Write(payload)
		}
		flooded <- n
	}()
	time.Sleep(200 * time.Millisecond) // red's burst is spent
	for i := 0; i < 30; i++ {
		if _, err := blue.Write([]byte("blue's punt")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	sent := <-flooded
	var punted []struct {
		Length int `json:"length"`
	}
	if !poll(func() bool {
		d.json(&punted, "view", "blue1", "punted")
		return len(punted) >= 30
	}) {
		t.Errorf("blue's controller got %d of its 30 punts while red flooded its own cube with %d datagrams", len(punted), sent)
	}
	var stats []struct {
		Cube  string `json:"cube"`
		Ports []struct {
			Port          string `json:"port"`
			RxPackets     uint64 `json:"rx_packets"`
			PuntPackets   uint64 `json:"punt_packets"`
			PuntRateDrops uint64 `json:"punt_rate_drops"`
		} `json:"ports"`
	}
	d.json(&stats, "stats", "red1", "blue1")
	for _, s := range stats {
		for _, p := range s.Ports {
			if p.Port != "p0" {
				continue
			}
			t.Logf("%s: %d frames in, %d punted, %d over the punt budget (red sent %d)", s.Cube, p.RxPackets, p.PuntPackets, p.PuntRateDrops, sent)
			switch s.Cube {
			case "red1":
				// 5 s at 2,000 a second and a burst of 200, with room
				if p.PuntRateDrops == 0 || p.PuntPackets > 200+2000*7 || p.PuntPackets+p.PuntRateDrops != p.RxPackets {
					t.Errorf("red's flood: %d frames in, %d punted, %d over its budget: want at most %d punted and the rest counted", p.RxPackets, p.PuntPackets, p.PuntRateDrops, 200+2000*7)
				}
			case "blue1":
				if p.PuntPackets != 30 || p.PuntRateDrops != 0 {
					t.Errorf("blue: %d punted, %d over its budget; want 30 and 0", p.PuntPackets, p.PuntRateDrops)
				}
			}
		}
	}
}
