package p4

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf/perf"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/edgenf/edgenf/internal/schema"
	"github.com/edgenf/edgenf/internal/schema/schematest"
)

const learnConfig = `{"program": "../../../examples/p4/l2learn.p4", "learn": [
 {"digest": "learn_t", "table": "smac", "match": {"hdr.ethernet.srcAddr": "$srcAddr"}, "action": "NoAction"},
 {"digest": "learn_t", "table": "dmac", "match": {"hdr.ethernet.dstAddr": "$srcAddr"}, "action": "forward", "params": {"port": "$ingress_port"}}]}`

func learnCube(config string) *cube.Cube {
	return &cube.Cube{Name: "sw", Type: "p4", Hook: datapath.XDP, Config: inline(config),
		Ports: []cube.Port{{Name: "p1", Index: 1}, {Name: "p2", Index: 2}, {Name: "p3", Index: 3}}}
}

// punts reads what the rig's program sent to the slow path.
func punts(t *testing.T, r *nftest.Rig) func() []cube.Punt {
	rd, err := perf.NewReader(r.DP.PuntMap(), 4096)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rd.Close() })
	return func() []cube.Punt {
		var out []cube.Punt
		for {
			rd.SetDeadline(time.Now().Add(50 * time.Millisecond))
			rec, err := rd.Read()
			if err != nil {
				return out
			}
			var hdr datapath.PuntHeader
			if err := binary.Read(bytes.NewReader(rec.RawSample), binary.LittleEndian, &hdr); err != nil || hdr.Magic != datapath.PuntMagic {
				continue
			}
			frame := rec.RawSample[binary.Size(hdr):]
			if l := int(hdr.PktLen); len(frame) > l {
				frame = frame[:l]
			}
			out = append(out, cube.Punt{InPort: int(hdr.InPort), Reason: hdr.Reason, Arg: hdr.Arg, PktLen: int(hdr.PktLen), Frame: frame})
		}
	}
}

func udpFrom(dst, src string) []byte {
	f := nftest.UDP4("198.18.0.1", "198.18.0.2", 1, 2, []byte("learn"))
	copy(f[0:6], nftest.MAC(dst))
	copy(f[6:12], nftest.MAC(src))
	return f
}

func TestP4LearningFromDigests(t *testing.T) {
	r := nftest.New(t, Type, learnCube(learnConfig))
	read := punts(t, r)
	a, b := "02:00:00:00:00:0a", "02:00:00:00:00:0b"

	// A (port 1) -> B: B unknown; A is reported
	r.Run("p1", udpFrom(b, a))
	got := read()
	if len(got) != 1 || got[0].Reason != 2 {
		t.Fatalf("punts %+v", got)
	}
	for _, p := range got {
		r.Ctl.(cube.PuntHandler).HandlePunt(r.Handle(), r.Model, p)
	}
	// B (port 2) -> A: forwarded to port 1; B reported and learned
	res := r.Run("p2", udpFrom(a, b))
	if res.Port != 1 {
		t.Fatalf("B->A: verdict %d port %d, want port 1", res.Verdict, res.Port)
	}
	for _, p := range read() {
		r.Ctl.(cube.PuntHandler).HandlePunt(r.Handle(), r.Model, p)
	}
	if res := r.Run("p1", udpFrom(b, a)); res.Port != 2 {
		t.Fatalf("A->B after learning: port %d", res.Port)
	}
	if p := read(); len(p) != 0 {
		t.Fatalf("learned sources still reported: %+v", p)
	}
	v, err := listLearned(r.Handle(), r.Model)
	if err != nil {
		t.Fatal(err)
	}
	learned := v.([]LearnedEntry)
	if len(learned) != 4 {
		t.Fatalf("learned %+v", learned)
	}
	v, _ = listDigests(r.Handle(), r.Model)
	evs := v.([]Event)
	if len(evs) != 2 || evs[0].Fields["srcAddr"] != a || evs[0].Fields["ingress_port"] != "1" || evs[0].Port != 1 {
		t.Fatalf("digests %+v", evs)
	}
	v, _ = slowPathStats(r.Handle(), r.Model)
	st := v.(SlowPathStats)
	if st.Digests != 2 || st.Learned != 4 || st.DigestsSent != 2 || st.LearnedEntries != 4 {
		t.Fatalf("stats %+v", st)
	}
	// a program swap keeps what was learned
	if err := r.Ctl.Sync(r.Handle(), r.Model); err != nil {
		t.Fatal(err)
	}

	// poll: from the start, then nothing new before the timeout
	w, err := pollAction(r.Handle(), r.Model, &PollArgs{TimeoutMs: 1})
	if err != nil {
		t.Fatal(err)
	}
	pr, err := w.(cube.Waiter).Wait(context.Background())
	if err != nil || len(pr.(PollResult).Events) != 2 || pr.(PollResult).Next != 2 {
		t.Fatalf("poll %+v %v", pr, err)
	}
	w, _ = pollAction(r.Handle(), r.Model, &PollArgs{After: 2, TimeoutMs: 1})
	pr, err = w.(cube.Waiter).Wait(context.Background())
	if err != nil || len(pr.(PollResult).Events) != 0 {
		t.Fatalf("empty poll %+v %v", pr, err)
	}
	// a poll that waits is woken by the next digest
	w, _ = pollAction(r.Handle(), r.Model, &PollArgs{After: 2, TimeoutMs: 60000})
	done := make(chan PollResult)
	go func() {
		pr, _ := w.(cube.Waiter).Wait(context.Background())
		done <- pr.(PollResult)
	}()
	c := "02:00:00:00:00:0c"
	r.Run("p3", udpFrom(a, c))
	for _, p := range read() {
		r.Ctl.(cube.PuntHandler).HandlePunt(r.Handle(), r.Model, p)
	}
	if pr := <-done; len(pr.Events) != 1 || pr.Events[0].Fields["srcAddr"] != c || pr.Next != 3 {
		t.Fatalf("woken poll %+v", pr)
	}
}

func TestP4SlowPathBadInput(t *testing.T) {
	r := nftest.New(t, Type, learnCube(learnConfig))
	h := r.Handle()
	ph := r.Ctl.(cube.PuntHandler)
	// unknown digest index, short digest, short packet-in: counted, nothing kept
	ph.HandlePunt(h, r.Model, cube.Punt{Reason: 2, Arg: 7, Frame: make([]byte, 8)})
	ph.HandlePunt(h, r.Model, cube.Punt{Reason: 2, Arg: 0, Frame: make([]byte, 3)})
	ph.HandlePunt(h, r.Model, cube.Punt{Reason: 1, Frame: make([]byte, 1)})
	ph.HandlePunt(h, r.Model, cube.Punt{Reason: 3, Arg: 99})
	v, _ := slowPathStats(h, r.Model)
	if st := v.(SlowPathStats); st.Malformed != 4 || st.Digests != 0 || st.BufferedEvents != 0 {
		t.Fatalf("stats %+v", st)
	}

	frame := hex.EncodeToString(udpFrom("02:00:00:00:00:0b", "02:00:00:00:00:0a"))
	cases := []struct {
		args PacketOutArgs
		want string
	}{
		{PacketOutArgs{}, "required"},
		{PacketOutArgs{Frame: "zz"}, "not hex"},
		{PacketOutArgs{Frame: "0102"}, "2 bytes"},
		{PacketOutArgs{Frame: frame, Metadata: map[string]string{"port": "1"}}, `no field "port"`},
		{PacketOutArgs{Frame: frame, Metadata: map[string]string{"egress_port": "512"}}, "does not fit in 9 bits"},
		{PacketOutArgs{Frame: frame, Metadata: map[string]string{"egress_port": "x"}}, "bad number"},
	}
	for _, c := range cases {
		if _, err := packetOut(h, r.Model, &c.args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.args, err, c.want)
		}
	}
	if len(r.Injected) != 0 {
		t.Fatalf("bad packet-outs injected %d frames", len(r.Injected))
	}
	if _, err := packetOut(h, r.Model, &PacketOutArgs{Frame: frame, Metadata: map[string]string{"egress_port": "2"}}); err != nil {
		t.Fatal(err)
	}
	if len(r.Injected) != 1 || r.Injected[0].Port != 255 || hex.EncodeToString(r.Injected[0].Data[:2]) != "0100" {
		t.Fatalf("injected %+v", r.Injected)
	}
	// the injected frame, run at the CPU port, leaves on port 2 without its header
	res, err := r.DP.Run(r.Prog, 255, r.Injected[0].Data)
	if err != nil || res.Port != 2 || !bytes.Equal(res.Data[:6], nftest.MAC("02:00:00:00:00:0b")) {
		t.Fatalf("packet-out run: %+v %v", res, err)
	}

	if _, err := pollAction(h, r.Model, &PollArgs{Kind: "nope"}); err == nil {
		t.Error("bad kind accepted")
	}
	if _, err := pollAction(h, r.Model, &PollArgs{TimeoutMs: 3600000}); err == nil {
		t.Error("hour-long poll accepted")
	}
}

func TestP4LearnRulesAreValidated(t *testing.T) {
	cases := []struct{ config, want string }{
		{`{"program": "../../../examples/p4/l2learn.p4", "learn": [{"digest": "nope", "table": "smac", "action": "NoAction"}]}`, `no digest "nope"`},
		{`{"program": "../../../examples/p4/l2learn.p4", "learn": [{"digest": "learn_t", "table": "nope", "action": "NoAction"}]}`, `no table "nope"`},
		{`{"program": "../../../examples/p4/l2learn.p4", "learn": [{"digest": "learn_t", "table": "smac", "match": {"hdr.ethernet.srcAddr": "$mac"}, "action": "NoAction"}]}`, `no field "mac"`},
		{`{"program": "../../../examples/p4/l2learn.p4", "learn": [{"digest": "learn_t", "table": "dmac", "match": {"hdr.ethernet.dstAddr": "$srcAddr"}, "action": "teleport"}]}`, "teleport"},
		{`{"program": "../../../examples/p4/l2learn.p4", "cpu_port": 3}`, "64..510"},
	}
	for _, c := range cases {
		topo := cube.NewTopology()
		topo.Put(learnCube(c.config))
		if err := topo.Validate(nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.config, err, c.want)
		}
	}
}

func TestP4PacketInDecoded(t *testing.T) {
	c := &cube.Cube{Name: "sp", Type: "p4", Hook: datapath.XDP,
		Config: inline(`{"program": "../../p4/testdata/slowpath.p4"}`),
		Ports:  []cube.Port{{Name: "p1", Index: 1}, {Name: "p2", Index: 2}}}
	r := nftest.New(t, Type, c)
	read := punts(t, r)
	f := udpFrom("02:00:00:00:00:0b", "02:00:00:00:00:0a")
	f[12], f[13] = 0x99, 0x99 // the program sends these to the CPU port
	if res := r.Run("p2", f); res.Sent() {
		t.Fatalf("sent to port %d", res.Port)
	}
	for _, p := range read() {
		r.Ctl.(cube.PuntHandler).HandlePunt(r.Handle(), r.Model, p)
	}
	v, _ := listPacketIns(r.Handle(), r.Model)
	evs := v.([]Event)
	if len(evs) != 1 || evs[0].Fields["ingress_port"] != "2" || evs[0].Frame != hex.EncodeToString(f) || evs[0].Length != len(f) {
		t.Fatalf("packet-ins %+v", evs)
	}
	// a program without slow-path messages: whatever arrives is counted, nothing breaks
	p := &cube.Cube{Name: "pf", Type: "p4", Hook: datapath.XDP,
		Config: inline(`{"program": "../../../examples/p4/portfwd.p4"}`), Ports: []cube.Port{{Name: "p0", Index: 0}}}
	rp := nftest.New(t, Type, p)
	for reason := uint32(0); reason < 5; reason++ {
		rp.Ctl.(cube.PuntHandler).HandlePunt(rp.Handle(), rp.Model, cube.Punt{Reason: reason, Arg: 1, Frame: []byte{1, 2, 3}})
	}
	v, _ = slowPathStats(r.Handle(), r.Model)
	// two digests and a log line per packet; the packet-in itself
	if st := v.(SlowPathStats); st.PacketIns != 1 || st.Digests != 2 || st.LogsSent != 1 || st.Malformed != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// inline fills in the source of the program test settings name by path, as
// the CLI does: the daemon reads no file.
func inline(config string) json.RawMessage {
	var m map[string]any
	if err := json.Unmarshal([]byte(config), &m); err != nil {
		panic(err)
	}
	if path, ok := m["program"].(string); ok && m["source"] == nil {
		src, err := os.ReadFile(path)
		if err != nil {
			panic(err)
		}
		m["program"], m["source"] = filepath.Base(path), string(src)
	}
	b, _ := json.Marshal(m)
	return b
}

// TestPollArgsValidBySchemaAreAccepted: the poll action's arguments that
// the API's document calls valid are accepted (the OpenAPI conformance run
// leaves the long poll out: it waits up to timeout_ms by design).
func TestPollArgsValidBySchemaAreAccepted(t *testing.T) {
	r := nftest.New(t, Type, learnCube(learnConfig))
	g := schematest.New(4)
	s := schema.Of(&PollArgs{})
	for range 300 {
		raw := g.JSON(s)
		v, err := cube.Decode("args", raw, &PollArgs{})
		if err == nil {
			_, err = pollAction(r.Handle(), r.Model, v)
		}
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
	}
}
