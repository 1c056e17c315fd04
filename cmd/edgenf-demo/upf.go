package main

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"github.com/edgenf/edgenf/internal/gnbsim"
	"github.com/edgenf/edgenf/internal/netlab"
	"github.com/edgenf/edgenf/internal/pfcp"
	"github.com/edgenf/edgenf/internal/pfcp/client"
)

// The 5G edge demo (make demo): the use case edgenf exists for.
//
//	UE1, UE2 ── gNB ──N3── [ u1: upf ] ──N6── fw1, nat1 ── data network
//	(TUN)     198.18.1.2  .1.1      .2.1  (attached to u1:n6)  198.18.2.2
//
// An SMF (this command, on loopback) associates with the upf over PFCP and
// establishes one session per UE, the upf choosing the tunnel endpoints
// and the UE addresses. The simulated gNB (this command too) carries the
// UEs' packets in GTP-U. On N6 a firewall lets in only what the UEs
// started and a NAT hides the UE addresses behind the upf's N6 address.

const (
	pfcpAddr = "127.0.0.88" // the upf's N4 address: loopback only
	pfcpPort = 8805
	gnbAddr  = "198.18.1.2"
	n3Addr   = "198.18.1.1"
	dnAddr   = "198.18.2.2"
)

const upfTopology = `# The 5G edge: gNB ── n3 [u1: upf] n6 ── fw1, nat1 ── data network.
# Apply edits with: edgenf apply -f %s
cubes:
  - name: u1
    type: upf
    config:
      pfcp: {address: %s, port: %d, heartbeat_seconds: -1}
      node_id: upf.demo
      teid_range: "0x1000-0xffff"
      ue_pools: [{prefix: 10.45.0.0/16}]
    ports:
      - {name: n3, peer: %s, addresses: [%s/24]}
      - {name: n6, peer: %s, addresses: [198.18.2.1/24], config: {gateway: %s}}
  - name: fw1
    type: firewall
    config: {ingress_policy: drop, accept_established: true}
    tables:
      ingress:
        - {id: 10, proto: icmp, action: accept}
  - name: nat1
    type: nat
    tables:
      snat:
        - {id: 1, internal: 10.45.0.0/16, external: 198.18.2.1}
attachments:
  - {cube: fw1, point: "u1:n6"}
  - {cube: nat1, point: "u1:n6"}
`

func upfUp() error {
	if err := begin(); err != nil {
		return err
	}
	step("1. A gNB, two UEs and a data network, in network namespaces")
	lab, err := netlab.New(prefix)
	if err != nil {
		return err
	}
	gnbHost, err := lab.Host("gnb")
	if err != nil {
		return err
	}
	dn, err := lab.Host("dn")
	if err != nil {
		return err
	}
	n3, err := lab.Veth(gnbHost, "eth0", "n3", gnbAddr+"/24")
	if err != nil {
		return err
	}
	n6, err := lab.Veth(dn, "eth0", "n6", dnAddr+"/24")
	if err != nil {
		return err
	}
	for _, h := range []*netlab.Host{gnbHost, dn} {
		h.Sysctl("net.ipv6.conf.all.disable_ipv6", "1") // IPv4 only: a quiet N3 and N6
	}
	// The data network's packets must fit a tunnel on a 1500-octet N3.
	if lk, err := dn.Netlink().LinkByName("eth0"); err == nil {
		dn.Netlink().LinkSetMTU(lk, 1400)
	}
	fmt.Printf("  gNB: namespace %s, %s/24 (N3), veth %s in the root namespace\n", gnbHost.Name, gnbAddr, n3)
	fmt.Printf("  data network: namespace %s, %s/24 (N6), veth %s in the root namespace\n", dn.Name, dnAddr, n6)

	step("2. Start the daemon")
	if err := startDaemon(); err != nil {
		return err
	}

	step("3. Apply the edge node: the upf, a firewall and a NAT on N6 (declarative)")
	file := filepath.Join(workDir, "topology.yaml")
	topo := fmt.Sprintf(upfTopology, file, pfcpAddr, pfcpPort, n3, n3Addr, n6, dnAddr)
	if err := os.WriteFile(file, []byte(topo), 0o644); err != nil {
		return err
	}
	fmt.Print(indent(topo))
	if _, err := run("edgenf", "apply", "-f", file); err != nil {
		return err
	}

	step("4. The SMF sets up two PDU sessions over PFCP (N4, %s:%d)", pfcpAddr, pfcpPort)
	smf, err := client.Dial(netip.MustParseAddrPort("127.0.0.1:0"), netip.AddrPortFrom(netip.MustParseAddr(pfcpAddr), pfcpPort))
	if err != nil {
		return err
	}
	defer smf.Close()
	resp, err := smf.Associate()
	if err != nil {
		return fmt.Errorf("PFCP association: %w", err)
	}
	nodeID, _ := pfcp.ParseNodeID(resp.IEs.Find(pfcp.IENodeID).Value)
	fmt.Printf("  Association Setup: %s, UPF node %s\n", client.CauseOf(resp), nodeID)
	gnb, err := gnbsim.New(gnbHost, netip.MustParseAddr(gnbAddr), netip.MustParseAddr(n3Addr))
	if err != nil {
		return err
	}
	defer gnb.Close()
	type ueInfo struct {
		*gnbsim.UE
		s    *client.Session
		addr netip.Addr
	}
	var ues []ueInfo
	for i := 1; i <= 2; i++ {
		dlTEID := uint32(0x9000 + i)
		urr := client.URR{ID: 1, Method: pfcp.MeasureVOLUM | pfcp.MeasureDURAT, Triggers: pfcp.TriggerVOLTH, VolumeThreshold: 4 << 20}
		s, _, err := smf.Establish(uint64(i),
			client.PDR{ID: 1, Precedence: 200, Access: true, ChooseTEID: true, ChooseID: 1, ChooseUE4: true, QFI: 9,
				FAR: 1, URRs: []uint32{1}, QERs: []uint32{1}}.IE(),
			client.PDR{ID: 2, Precedence: 200, ChooseUE4: true, FAR: 2, URRs: []uint32{1}, QERs: []uint32{1}}.IE(),
			client.FAR{ID: 1, Action: pfcp.ActionFORW, Dest: pfcp.InterfaceCore}.IE(),
			client.FAR{ID: 2, Action: pfcp.ActionFORW, Dest: pfcp.InterfaceAccess, TunnelTEID: dlTEID, Tunnel: netip.MustParseAddr(gnbAddr)}.IE(),
			client.QER{ID: 1, QFI: 9, MBRUL: 200_000, MBRDL: 200_000}.IE(),
			urr.IE())
		if err != nil {
			return fmt.Errorf("session of UE%d: %w", i, err)
		}
		f, _ := s.TEIDOf(1)
		ue, _ := s.UEAddrOf(1)
		fmt.Printf("  Session Establishment for UE%d: accepted; the UPF chose tunnel %s TEID %#x and UE address %s\n",
			i, f.IPv4, f.TEID, ue.IPv4)
		fmt.Printf("    rules: uplink PDR on the tunnel, downlink PDR on the UE address, QER 200 Mbit/s both ways (QFI 9),\n"+
			"    URR reporting every 4 MB; downlink to the gNB in TEID %#x\n", dlTEID)
		host, err := lab.Host(fmt.Sprintf("ue%d", i))
		if err != nil {
			return err
		}
		host.Sysctl("net.ipv6.conf.all.disable_ipv6", "1")
		u, err := gnb.AddUE(host, gnbsim.UEConfig{Addresses: []string{ue.IPv4.String() + "/32"}, ULTEID: f.TEID, DLTEID: dlTEID, QFI: 9})
		if err != nil {
			return err
		}
		fmt.Printf("    UE%d: namespace %s, %s on a TUN device behind the gNB\n", i, host.Name, ue.IPv4)
		ues = append(ues, ueInfo{UE: u, s: s, addr: ue.IPv4})
	}

	step("5. Real traffic: UEs ↔ gNB ─GTP-U─ upf ─ firewall ─ NAT ─ data network")
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	for i, u := range ues {
		if _, err := run("ip", "netns", "exec", u.Host.Name, "ping", "-c", "3", "-i", "0.2", dnAddr); err != nil {
			return fmt.Errorf("UE%d: %w", i+1, err)
		}
	}
	fmt.Printf("$ (UE1: 5,000 UDP datagrams of 512 bytes to the data network)\n")
	sent, recv, err := netlab.UDPFlow(ctx, ues[0].Host, dn, dnAddr, 7000, 5000, 512, 5000)
	if err != nil {
		return err
	}
	fmt.Printf("  sent %d, received %d intact (from %s: the NAT's address)\n", sent, recv, "198.18.2.1")
	fmt.Printf("$ (UE2: a 6 MB TCP upload to the data network, content verified)\n")
	start := time.Now()
	if err := netlab.TCPTransfer(ctx, ues[1].Host, dn, dnAddr, 7001, 6<<20); err != nil {
		return err
	}
	fmt.Printf("  6 MB in %v\n", time.Since(start).Round(time.Millisecond))
	fmt.Printf("$ (the data network tries to reach the UPF's N6 address on TCP port 22: the firewall drops it)\n")
	if _, err := dn.Exec(ctx, "timeout", "2", "bash", "-c", "exec 3<>/dev/tcp/198.18.2.1/22"); err != nil {
		fmt.Println("  no connection (the firewall's ingress policy dropped the SYNs: counters row 0 below)")
	}

	step("6. What the UPF says: sessions, per-UE counters, a usage report")
	run("edgenf", "view", "u1", "sessions")
	run("edgenf", "view", "u1", "urrs")
	select {
	case m := <-smf.Reports():
		for _, r := range client.UsageReports(m) {
			fmt.Printf("  Session Report Request from the UPF for the SMF's session %d (UE%d): URR %d, trigger %s,\n"+
				"    uplink %d B, downlink %d B, over %d s\n",
				m.SEID, m.SEID, r.URR, triggerName(r.Trigger), r.Volume.Uplink, r.Volume.Downlink, r.Duration)
		}
	case <-time.After(3 * time.Second):
		fmt.Println("  (no Session Report Request yet)")
	}
	resp, err = smf.Modify(ues[0].s, pfcp.Group(pfcp.IEQueryURR, pfcp.U32IE(pfcp.IEURRID, 1)))
	if err == nil {
		for _, r := range client.UsageReports(resp) {
			fmt.Printf("  UE1's usage on request (Query URR): uplink %d B, downlink %d B, %d s\n", r.Volume.Uplink, r.Volume.Downlink, r.Duration)
		}
	}
	run("edgenf", "view", "fw1", "counters")
	run("edgenf", "view", "nat1", "sessions")
	run("edgenf", "view", "u1", "counters")

	fmt.Printf(`
The edge node is still running (the SMF and the gNB were this command: the UPF keeps the
sessions, it sends no heartbeats in this demo). Explore it:
  edgenf view u1 sessions | pdrs | urrs | associations | counters | neighbours
  edgenf get topology -o yaml      the running state, in the format apply takes
  edgenf describe cube u1          the cube, its ports and counters
  curl --unix-socket %s http://x/metrics | grep edgenf_upf
  edgenf-demo chain                the other demo: a service chain between two hosts
Daemon log: %s/edgenfd.log
Tear it all down with: make demo-clean
`, socket, workDir)
	return nil
}

func triggerName(t uint32) string {
	switch {
	case t&pfcp.TriggerVOLTH != 0:
		return "volume threshold"
	case t&pfcp.TriggerPERIO != 0:
		return "periodic"
	case t&pfcp.TriggerTIMTH != 0:
		return "time threshold"
	}
	return fmt.Sprintf("%#x", t)
}
