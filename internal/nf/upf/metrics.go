package upf

import (
	"strings"

	"github.com/edgenf/edgenf/internal/cube"
)

// Metrics exports the UPF's counters to Prometheus (as edgenf_upf_*):
// sessions and associations, GTP-U packets and octets by direction, drops
// by reason, the slow path's work, and PFCP messages by type and cause.
func (ctl *controller) Metrics(h cube.Handle, c *cube.Cube) []cube.Metric {
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	var out []cube.Metric
	add := func(name, help string, gauge bool, v uint64, labels ...string) {
		m := cube.Metric{Name: name, Help: help, Gauge: gauge, Value: float64(v)}
		if len(labels) > 0 {
			m.Labels = map[string]string{}
			for i := 0; i+1 < len(labels); i += 2 {
				m.Labels[labels[i]] = labels[i+1]
			}
		}
		out = append(out, m)
	}
	add("sessions", "PFCP sessions installed.", true, uint64(len(ctl.sessions)))
	add("buffered_packets", "Downlink packets buffered for idle UEs.", true, uint64(ctl.buffers.total))
	for _, ctr := range ctl.counters() {
		switch {
		case ctr.Name == "ul_packets" || ctr.Name == "dl_packets":
			add("gtpu_packets_total", "User packets the fast path forwarded, by direction.", false, ctr.Value,
				"direction", map[string]string{"ul_packets": "uplink", "dl_packets": "downlink"}[ctr.Name])
		case ctr.Name == "ul_bytes" || ctr.Name == "dl_bytes":
			add("gtpu_bytes_total", "Octets of the user packets forwarded (inner IP), by direction.", false, ctr.Value,
				"direction", map[string]string{"ul_bytes": "uplink", "dl_bytes": "downlink"}[ctr.Name])
		case strings.HasPrefix(ctr.Name, "drop_"):
			add("drops_total", "Packets the fast path dropped, by reason.", false, ctr.Value, "reason", strings.TrimPrefix(ctr.Name, "drop_"))
		case strings.HasPrefix(ctr.Name, "pfcp_received "):
			add("pfcp_messages_total", "PFCP messages, by direction and type.", false, ctr.Value,
				"direction", "received", "type", strings.TrimPrefix(ctr.Name, "pfcp_received "))
		case strings.HasPrefix(ctr.Name, "pfcp_sent "):
			add("pfcp_messages_total", "PFCP messages, by direction and type.", false, ctr.Value,
				"direction", "sent", "type", strings.TrimPrefix(ctr.Name, "pfcp_sent "))
		case strings.HasPrefix(ctr.Name, "pfcp_cause "):
			add("pfcp_responses_total", "PFCP responses the UPF sent, by cause.", false, ctr.Value,
				"cause", strings.TrimPrefix(ctr.Name, "pfcp_cause "))
		case ctr.Name == "sessions" || ctr.Name == "buffered":
		default:
			add("events_total", "Slow-path and fast-path events (echo, error indications, reports, neighbours, buffering).",
				false, ctr.Value, "event", strings.TrimPrefix(ctr.Name, "pfcp_"))
		}
	}
	if ctl.agent != nil {
		add("associations", "PFCP associations with SMFs.", true, uint64(len(ctl.agent.Associations())))
	}
	return out
}
