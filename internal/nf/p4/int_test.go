package p4

import (
	"fmt"
	"testing"
)

// Digests with switch_id and hop_latency_us are INT hop reports, kept as
// histograms per switch; other digests are not; switch ids are bounded.
func TestINTReports(t *testing.T) {
	ctl := controller{ints: &intStats{}}
	ctl.ints.observe(map[string]string{"mac": "02:00:00:00:00:01", "port": "1"}) // a learning digest
	for i := range 3 {
		ctl.ints.observe(map[string]string{"switch_id": "7", "hop_latency_us": fmt.Sprint(i), "path_latency_us": "100"})
	}
	ctl.ints.observe(map[string]string{"switch_id": "8", "hop_latency_us": "2000"})
	ms := ctl.Metrics(nil, nil)
	if len(ms) != 3 {
		t.Fatalf("metrics %+v", ms)
	}
	hop7, path7, hop8 := ms[0].Histogram, ms[1].Histogram, ms[2].Histogram
	if ms[0].Labels["switch_id"] != "7" || hop7.Count != 3 || hop7.Counts[0] != 2 || hop7.Sum != 3e-6 {
		t.Errorf("switch 7 hop latency: %+v", hop7)
	}
	if ms[1].Name != "int_path_latency_seconds" || path7.Count != 3 || path7.Counts[6] != 3 || path7.Counts[5] != 0 {
		t.Errorf("switch 7 path latency: %s %+v", ms[1].Name, path7)
	}
	if ms[2].Labels["switch_id"] != "8" || hop8.Count != 1 || hop8.Counts[9] != 0 || hop8.Counts[10] != 1 {
		t.Errorf("switch 8 hop latency (2 ms): %+v", hop8)
	}
	for i := range intMaxSwitches {
		ctl.ints.observe(map[string]string{"switch_id": fmt.Sprint(1000 + i), "hop_latency_us": "1"})
	}
	ms = ctl.Metrics(nil, nil)
	if last := ms[len(ms)-1]; last.Name != "int_reports_dropped_total" || last.Value != 2 {
		t.Errorf("past the bound on switch ids: %+v", last)
	}
}
