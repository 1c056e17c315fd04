package state

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzLoad feeds arbitrary state files and journals to what Load reads
// them with: it must never panic, and what it loads must save and load
// back to the same topology (a state the daemon accepted is one it can
// persist).
func FuzzLoad(f *testing.F) {
	snap := `{"version":1,"gen":3,"topology":{"cubes":{"dd":{"name":"dd","type":"ddos","hook":"xdp","tables":{"blacklist_src":{"198.18.0.1/32":{"prefix":"198.18.0.1/32"}}}}}},"slots":{"dd":0}}`
	rec := `{"gen":3,"cube":"dd","table":"blacklist_src","key":"198.18.0.2/32","value":{"prefix":"198.18.0.2/32"},"tx":1,"end":true}` + "\n"
	del := `{"gen":3,"cube":"dd","table":"blacklist_src","key":"198.18.0.1/32","value":null,"was":{"prefix":"198.18.0.1/32"},"tx":2,"end":true}` + "\n"
	f.Add([]byte(snap), []byte(rec+del))
	f.Add([]byte(snap), []byte(rec+`{"gen":3,"cube":"dd","tab`))
	f.Add([]byte(snap), []byte(`{"gen":3,"cube":"dd","tab`+rec))
	f.Add([]byte(`{"version":1}`), []byte(""))
	f.Add([]byte(`{"version":1,"topology":null,"slots":null}`), []byte(`{"gen":0,"cube":"x","intent":true,"value":{}}`+"\n"))
	f.Add([]byte(snap), []byte(`{"gen":3,"cube":"nope","table":"t","key":"k","value":1}`+"\n"))
	f.Fuzz(func(t *testing.T, state, journal []byte) {
		got, err := decode("state.json", state, journal)
		if err != nil {
			return
		}
		saved, err := json.Marshal(got)
		if err != nil {
			t.Fatalf("a loaded state does not save: %v", err)
		}
		back, err := decode("again.json", saved, nil)
		if err != nil {
			t.Fatalf("a saved state does not load: %v\n%s", err, saved)
		}
		a, _ := json.Marshal(got.Topology)
		b, _ := json.Marshal(back.Topology)
		if !bytes.Equal(a, b) {
			t.Fatalf("round trip changed the topology:\n%s\n%s", a, b)
		}
	})
}
