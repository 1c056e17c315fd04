// The topology graph: interfaces and cubes in columns (layers of a breadth
// first walk from the interfaces), their ports on the side facing their
// peers, links between peers, and the transparent cubes stacked on the
// link at their attachment point. Nodes are coloured by tenant; a slice
// (the chain entry of a tenant's share of an interface) will be a frame
// around its units, drawn from the same layout.

import { html } from '../vendor/htm/standalone.module.js';
import { pps, bps, total, tenantColor } from './format.js';

const CUBE_W = 160;
const HEAD_H = 40; // name and type, above the ports
const PORT_H = 22;
const IFACE_W = 124;
const IFACE_H = 34;
const BADGE_W = 92;
const BADGE_H = 22;
const GAP_Y = 34;
const MARGIN = 28;

// layout places a /v1/graph answer. It depends only on the graph, so it
// is computed once per topology revision.
export function layout(graph) {
  const cubes = new Map(graph.cubes.filter((c) => !c.transparent).map((c) => [c.name, c]));
  const units = new Map();
  const unit = (key, init) => {
    let u = units.get(key);
    if (!u) {
      u = { key, neighbors: new Set(), ...init };
      units.set(key, u);
    }
    return u;
  };
  for (const c of cubes.values()) unit('c:' + c.name, { kind: 'cube', name: c.name, cube: c });

  // links: a cube port and its peer, once (both ends of a cube-cube link
  // name each other)
  const links = [];
  const seen = new Set();
  for (const c of cubes.values()) {
    for (const p of c.ports) {
      if (!p.peer) continue;
      const from = { unit: 'c:' + c.name, port: p.name };
      const i = p.peer.indexOf(':');
      let to;
      if (i > 0 && cubes.has(p.peer.slice(0, i))) {
        to = { unit: 'c:' + p.peer.slice(0, i), port: p.peer.slice(i + 1) };
      } else {
        // a Linux interface (or the port of a cube this identity cannot see)
        to = { unit: 'i:' + p.peer };
        unit(to.unit, { kind: 'iface', name: p.peer });
      }
      const id = [from.unit + '/' + from.port, to.unit + '/' + (to.port || '')].sort().join(' ');
      if (seen.has(id)) continue;
      seen.add(id);
      links.push({ from, to, ref: c.name + ':' + p.name, peer: p.peer });
      units.get(from.unit).neighbors.add(to.unit);
      units.get(to.unit).neighbors.add(from.unit);
    }
  }

  // stacks of transparent cubes by attachment point, outermost first
  const transparent = new Map(graph.cubes.filter((c) => c.transparent).map((c) => [c.name, c]));
  const stacks = new Map();
  for (const a of graph.attachments) {
    if (!stacks.has(a.point)) stacks.set(a.point, []);
    stacks.get(a.point).push(a);
  }
  for (const [point, list] of stacks) {
    list.sort((a, b) => Number(a.position) - Number(b.position));
    if (!point.includes(':')) unit('i:' + point, { kind: 'iface', name: point });
  }
  const maxStack = Math.max(0, ...[...stacks.values()].map((l) => l.length));
  const colW = CUBE_W + 90 + maxStack * (BADGE_W + 8);

  // layers: breadth first from each component's first interface (or cube)
  const layer = new Map();
  const comps = [];
  const order = [...units.keys()].sort((a, b) => (a[0] === b[0] ? a.localeCompare(b) : a[0] === 'i' ? -1 : 1));
  for (const k of order) {
    if (layer.has(k)) continue;
    const comp = [];
    const queue = [k];
    layer.set(k, 0);
    while (queue.length) {
      const u = queue.shift();
      comp.push(u);
      for (const n of [...units.get(u).neighbors].sort()) {
        if (!layer.has(n)) {
          layer.set(n, layer.get(u) + 1);
          queue.push(n);
        }
      }
    }
    comps.push(comp);
  }

  // ports on the side facing their peer; unpeered ones where there are fewer
  for (const u of units.values()) {
    if (u.kind !== 'cube') continue;
    u.left = [];
    u.right = [];
    const spare = [];
    for (const p of u.cube.ports) {
      const l = links.find((k) => (k.from.unit === u.key && k.from.port === p.name) || (k.to.unit === u.key && k.to.port === p.name));
      if (!l) {
        spare.push(p);
        continue;
      }
      const other = l.from.unit === u.key && l.from.port === p.name ? l.to.unit : l.from.unit;
      (layer.get(other) < layer.get(u.key) ? u.left : u.right).push(p);
    }
    for (const p of spare) (u.left.length <= u.right.length ? u.left : u.right).push(p);
    u.w = CUBE_W;
    u.h = HEAD_H + PORT_H * Math.max(1, u.left.length, u.right.length) + 6;
  }
  for (const u of units.values()) {
    if (u.kind === 'iface') {
      u.w = IFACE_W;
      u.h = IFACE_H;
    }
  }

  // order within a layer by the mean position of the neighbours in the
  // layer before (fewer crossings), then place each component below the
  // previous one, its layers centred on each other
  let top = MARGIN;
  let width = 0;
  for (const comp of comps) {
    const byLayer = [];
    for (const k of comp) (byLayer[layer.get(k)] ||= []).push(units.get(k));
    const pos = new Map();
    byLayer.forEach((list, L) => {
      if (L > 0) {
        const bary = (u) => {
          const ns = [...u.neighbors].filter((n) => layer.get(n) === L - 1).map((n) => pos.get(n));
          return ns.length ? ns.reduce((a, b) => a + b, 0) / ns.length : Infinity;
        };
        const b = new Map(list.map((u) => [u, bary(u)]));
        list.sort((x, y) => b.get(x) - b.get(y) || x.key.localeCompare(y.key));
      }
      list.forEach((u, i) => pos.set(u.key, i));
    });
    const heights = byLayer.map((list) => list.reduce((s, u) => s + u.h, 0) + GAP_Y * (list.length - 1));
    const compH = Math.max(...heights);
    byLayer.forEach((list, L) => {
      let y = top + (compH - heights[L]) / 2;
      for (const u of list) {
        u.x = MARGIN + L * colW + (CUBE_W - u.w) / 2;
        u.y = y;
        y += u.h + GAP_Y;
        width = Math.max(width, u.x + u.w);
      }
    });
    top += compH + 2 * GAP_Y;
  }

  // anchors: where a link meets a port or an interface
  const portAnchor = (u, name) => {
    let i = u.left.findIndex((p) => p.name === name);
    if (i >= 0) return { x: u.x, y: u.y + HEAD_H + PORT_H * i + PORT_H / 2, side: -1 };
    i = u.right.findIndex((p) => p.name === name);
    return { x: u.x + u.w, y: u.y + HEAD_H + PORT_H * i + PORT_H / 2, side: 1 };
  };
  const ifaceAnchor = (u, towards) => {
    const side = towards && towards.x + towards.w / 2 < u.x + u.w / 2 ? -1 : 1;
    return { x: side < 0 ? u.x : u.x + u.w, y: u.y + u.h / 2, side };
  };
  const anchor = (end, other) => {
    const u = units.get(end.unit);
    return end.port ? portAnchor(u, end.port) : ifaceAnchor(u, units.get(other.unit));
  };
  for (const l of links) {
    l.a = anchor(l.from, l.to);
    l.b = anchor(l.to, l.from);
  }

  // transparent cubes on the link, outermost farthest from the point
  const badges = [];
  for (const [point, list] of stacks) {
    let a;
    if (point.includes(':')) {
      const [c, p] = [point.slice(0, point.indexOf(':')), point.slice(point.indexOf(':') + 1)];
      const u = units.get('c:' + c);
      if (!u) continue;
      a = portAnchor(u, p);
    } else {
      const u = units.get('i:' + point);
      const n = [...u.neighbors][0];
      a = ifaceAnchor(u, n && units.get(n));
    }
    list.forEach((att, j) => {
      const k = list.length - 1 - j;
      const x = a.side > 0 ? a.x + 10 + k * (BADGE_W + 8) : a.x - 10 - BADGE_W - k * (BADGE_W + 8);
      badges.push({ x, y: a.y - BADGE_H / 2, name: att.cube, point, cube: transparent.get(att.cube) });
      width = Math.max(width, x + BADGE_W);
    });
  }
  return { units: [...units.values()], links, badges, width: width + MARGIN, height: Math.max(top - GAP_Y, 120) };
}

function linkPath(a, b) {
  const dx = Math.max(40, Math.abs(b.x - a.x) / 2);
  return `M${a.x},${a.y} C${a.x + a.side * dx},${a.y} ${b.x + b.side * dx},${b.y} ${b.x},${b.y}`;
}

// width of a link by its packet rate: a hairline idle, thicker on a log
// scale as traffic grows
const strokeFor = (r) => (r > 0 ? 1.5 + Math.min(6, Math.log10(1 + r)) : 1.2);

function Link({ l, rate }) {
  const sum = rate && rate.rx_pps != null ? rate.rx_pps + rate.tx_pps : null;
  const mid = { x: (l.a.x + l.b.x) / 2, y: (l.a.y + l.b.y) / 2 };
  const title = rate
    ? `${l.ref} ↔ ${l.peer}\nin ${pps(rate.rx_pps)}, ${bps(rate.rx_bps)}\nout ${pps(rate.tx_pps)}, ${bps(rate.tx_bps)}`
    : `${l.ref} ↔ ${l.peer}`;
  return html`<g class=${'link' + (sum > 0 ? ' busy' : '')} data-link=${l.ref + ' ' + l.peer}>
    <title>${title}</title>
    <path d=${linkPath(l.a, l.b)} stroke-width=${strokeFor(sum)} />
    ${sum != null && html`<text class="rate" x=${mid.x} y=${mid.y - 6} text-anchor="middle">${pps(sum)}</text>`}
  </g>`;
}

function CubeNode({ u, rates, selected, onSelect }) {
  const c = u.cube;
  let drops = 0;
  let dropTotal = 0;
  for (const p of c.ports) {
    const r = rates.get(c.name + ':' + p.name);
    if (r) {
      drops += r.drop_pps || 0;
      dropTotal += r.counters.drop_packets;
    }
  }
  const port = (p, i, side) => {
    const y = u.y + HEAD_H + PORT_H * i;
    const x = side < 0 ? u.x : u.x + u.w - 12;
    const r = rates.get(c.name + ':' + p.name);
    return html`<g class="port" data-port=${c.name + ':' + p.name}>
      <title>${c.name}:${p.name} (index ${p.index})${p.peer ? ' ↔ ' + p.peer : ', not peered'}${r
        ? `\nreceived ${total(r.counters.rx_packets)}, sent ${total(r.counters.tx_packets)}, dropped ${total(r.counters.drop_packets)}`
        : ''}</title>
      <rect x=${x} y=${y + 5} width="12" height="12" rx="2" class=${p.peer ? 'peered' : 'spare'} />
      <text x=${side < 0 ? x + 17 : x - 5} y=${y + 15} text-anchor=${side < 0 ? 'start' : 'end'}>${p.name}</text>
    </g>`;
  };
  return html`<g class=${'cube' + (selected ? ' selected' : '') + (c.down ? ' down' : '')} data-cube=${c.name}
      onClick=${() => onSelect(c.name)} style=${'--tenant:' + tenantColor(c.tenant)}>
    <title>${c.name}: ${c.type} at ${c.hook}${c.tenant ? ', tenant ' + c.tenant : ''}${c.down ? '\ndown: ' + c.down : ''}\ndropped ${total(dropTotal)}</title>
    <rect class="body" x=${u.x} y=${u.y} width=${u.w} height=${u.h} rx="6" />
    <rect class="stripe" x=${u.x} y=${u.y} width=${u.w} height="5" rx="2" />
    <text class="name" x=${u.x + u.w / 2} y=${u.y + 20} text-anchor="middle">${c.name}</text>
    <text class="kind" x=${u.x + u.w / 2} y=${u.y + 34} text-anchor="middle">${c.type} · ${c.hook}${c.tenant ? ' · ' + c.tenant : ''}</text>
    ${u.left.map((p, i) => port(p, i, -1))}
    ${u.right.map((p, i) => port(p, i, 1))}
    ${c.down && html`<text class="alarm" x=${u.x + u.w / 2} y=${u.y + u.h + 14} text-anchor="middle">down</text>`}
    ${drops > 0 && html`<text class="alarm drops" x=${u.x + u.w / 2} y=${u.y + u.h + 14} text-anchor="middle">drops ${pps(drops)}</text>`}
  </g>`;
}

function IfaceNode({ u }) {
  return html`<g class="iface" data-iface=${u.name}>
    <title>interface ${u.name}</title>
    <rect x=${u.x} y=${u.y} width=${u.w} height=${u.h} rx=${u.h / 2} />
    <text x=${u.x + u.w / 2} y=${u.y + u.h / 2 + 4} text-anchor="middle">${u.name}</text>
  </g>`;
}

function Badge({ b, rates, selected, onSelect }) {
  const c = b.cube || { name: b.name, type: '?' };
  const ing = rates.get(c.name + ':ingress');
  const eg = rates.get(c.name + ':egress');
  const drops = (ing && ing.drop_pps) || 0;
  return html`<g class=${'badge' + (selected ? ' selected' : '')} data-attached=${c.name} data-point=${b.point}
      onClick=${() => onSelect(c.name)} style=${'--tenant:' + tenantColor(c.tenant)}>
    <title>${c.name}: ${c.type} attached to ${b.point}${ing
      ? `\ningress ${total(ing.counters.rx_packets)} (dropped ${total(ing.counters.drop_packets)}), egress ${total(eg.counters.rx_packets)}`
      : ''}</title>
    <rect x=${b.x} y=${b.y} width=${BADGE_W} height=${BADGE_H} rx="4" />
    <text x=${b.x + BADGE_W / 2} y=${b.y + 15} text-anchor="middle">${c.name}</text>
    ${drops > 0 && html`<text class="alarm drops" x=${b.x + BADGE_W / 2} y=${b.y - 4} text-anchor="middle">${pps(drops)} dropped</text>`}
  </g>`;
}

export function Graph({ lay, rates, selected, onSelect }) {
  // scaled down to the card's width (viewBox), never up
  return html`<svg class="topology" width=${lay.width} height=${lay.height} viewBox=${`0 0 ${lay.width} ${lay.height}`}
      role="img" aria-label="topology">
    ${lay.links.map((l) => html`<${Link} key=${l.ref} l=${l} rate=${rates.get(l.ref)} />`)}
    ${lay.units.map((u) =>
      u.kind === 'cube'
        ? html`<${CubeNode} key=${u.key} u=${u} rates=${rates} selected=${selected === u.name} onSelect=${onSelect} />`
        : html`<${IfaceNode} key=${u.key} u=${u} />`,
    )}
    ${lay.badges.map((b) => html`<${Badge} key=${b.name} b=${b} rates=${rates} selected=${selected === b.name} onSelect=${onSelect} />`)}
  </svg>`;
}
