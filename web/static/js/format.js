// Numbers for people: rates with SI prefixes, totals with separators.

const prefixes = ['', 'k', 'M', 'G', 'T', 'P'];

export function si(v, unit) {
  if (v == null || !isFinite(v)) return '–';
  let i = 0;
  while (Math.abs(v) >= 1000 && i < prefixes.length - 1) {
    v /= 1000;
    i++;
  }
  const digits = i === 0 || Math.abs(v) >= 100 ? 0 : Math.abs(v) >= 10 ? 1 : 2;
  return `${v.toFixed(digits)} ${prefixes[i]}${unit}`;
}

export const pps = (v) => si(v, 'pps');
export const bps = (v) => si(v, 'bit/s');
export const total = (v) => (v == null ? '–' : Number(v).toLocaleString('en-US'));

// rates computes, for every cube port, its rates between two /v1/stats
// snapshots: key "cube:port" → {rx_pps, rx_bps, tx_pps, tx_bps, drop_pps,
// punt_pps} and the counters of the later one. Counters that went down
// (reset) have no rate.
export function rates(prev, cur) {
  const out = new Map();
  if (!cur) return out;
  const before = new Map();
  let dt = 0;
  if (prev) {
    dt = (Date.parse(cur.time) - Date.parse(prev.time)) / 1000;
    for (const c of prev.cubes) for (const p of c.ports) before.set(c.cube + ':' + p.port, p);
  }
  // (a counter past 2^53 comes as its digits: see api.js)
  const r = (a, b, k, scale) => {
    if (!b || dt <= 0) return null;
    const d = Number(a[k]) - Number(b[k]);
    return d < 0 ? null : (d * scale) / dt;
  };
  for (const c of cur.cubes) {
    for (const p of c.ports) {
      const key = c.cube + ':' + p.port;
      const b = before.get(key);
      out.set(key, {
        counters: p,
        rx_pps: r(p, b, 'rx_packets', 1),
        rx_bps: r(p, b, 'rx_bytes', 8),
        tx_pps: r(p, b, 'tx_packets', 1),
        tx_bps: r(p, b, 'tx_bytes', 8),
        drop_pps: r(p, b, 'drop_packets', 1),
        punt_pps: r(p, b, 'punt_packets', 1),
      });
    }
  }
  return out;
}

// tenantColor gives each tenant a stable hue; the administrator's cubes
// are grey.
export function tenantColor(tenant) {
  if (!tenant) return 'hsl(215 16% 47%)';
  let h = 0;
  for (const ch of tenant) h = (h * 31 + ch.codePointAt(0)) % 360;
  return `hsl(${h} 65% 42%)`;
}
