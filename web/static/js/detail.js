// One cube in detail: its ports and counters, its settings, every table
// and view its NF type declares (read generically, so a new NF type's
// tables and views, the upf's sessions say, show without a line here), and
// a P4 cube's tables laid out by its P4Info.

import { html, useState, useEffect } from '../vendor/htm/standalone.module.js';
import { get, enc, AuthError } from './api.js';
import { Rows, Data } from './table.js';
import { pps, bps, total } from './format.js';

const REFRESH_MS = 10000;

export function CubeDetail({ cube, type, rates, revision, onClose, onAuthLost }) {
  const [data, setData] = useState(null);
  const [tick, setTick] = useState(0);

  useEffect(() => {
    const t = setInterval(() => !document.hidden && setTick((n) => n + 1), REFRESH_MS);
    return () => clearInterval(t);
  }, []);

  useEffect(() => {
    let gone = false;
    const base = `/v1/cubes/${enc(cube.name)}`;
    const out = {};
    const req = async (key, path) => {
      try {
        out[key] = { value: await get(path) };
      } catch (e) {
        if (e instanceof AuthError) throw e;
        out[key] = { error: e.message };
      }
    };
    Promise.all([
      req('config', base + '/config'),
      ...(type ? type.tables || [] : []).map((t) => req('table:' + t.name, `${base}/tables/${enc(t.name)}`)),
      ...(type ? type.views || [] : []).map((v) => req('view:' + v.name, `${base}/views/${enc(v.name)}`)),
    ])
      .then(() => !gone && setData(out))
      .catch((e) => !gone && onAuthLost(e.message));
    return () => {
      gone = true;
    };
  }, [cube.name, type, revision, tick]);

  const ports = cube.transparent ? ['ingress', 'egress'] : cube.ports.map((p) => p.name);
  const peers = new Map(cube.ports.map((p) => [p.name, p.peer]));
  const section = (key, title, body, open = true) => {
    const d = data && data[key];
    return html`<details open=${open} class="section" data-section=${key}>
      <summary>${title}${d && Array.isArray(d.value) ? ` (${d.value.length})` : ''}</summary>
      ${!data ? html`<p class="empty">loading…</p>` : d && d.error ? html`<p class="error">${d.error}</p>` : body(d && d.value)}
    </details>`;
  };
  const p4 = cube.type === 'p4' && data && data['view:p4info'] && data['view:p4info'].value;
  const tables = ((type && type.tables) || []).filter((t) => !(p4 && (t.name === 'entries' || t.name === 'defaults')));

  return html`<aside class="detail" data-detail=${cube.name}>
    <header>
      <div>
        <h2>${cube.name}</h2>
        <p class="kind">${cube.type} at ${cube.hook}${cube.tenant ? ', tenant ' + cube.tenant : ''}${cube.transparent ? ', transparent' : ''}</p>
        ${type && html`<p class="doc">${type.description}</p>`}
        ${cube.down && html`<p class="error">down: ${cube.down}</p>`}
      </div>
      <button class="close" title="close" onClick=${onClose}>×</button>
    </header>
    <details open class="section" data-section="counters">
      <summary>Counters</summary>
      <table class="data num">
        <thead><tr><th>${cube.transparent ? 'direction' : 'port'}</th><th>in</th><th>out</th><th>dropped</th><th>received</th><th>sent</th><th>dropped (total)</th></tr></thead>
        <tbody>${ports.map((p) => {
          const r = rates.get(cube.name + ':' + p);
          return html`<tr data-port=${cube.name + ':' + p}>
            <th title=${peers.get(p) ? 'peer: ' + peers.get(p) : ''}>${p}</th>
            <td>${r ? pps(r.rx_pps) : '–'}<br /><small>${r ? bps(r.rx_bps) : ''}</small></td>
            <td>${r ? pps(r.tx_pps) : '–'}<br /><small>${r ? bps(r.tx_bps) : ''}</small></td>
            <td>${r ? pps(r.drop_pps) : '–'}</td>
            <td>${r ? total(r.counters.rx_packets) : '–'}</td><td>${r ? total(r.counters.tx_packets) : '–'}</td>
            <td>${r ? total(r.counters.drop_packets) : '–'}</td>
          </tr>`;
        })}</tbody>
      </table>
    </details>
    ${section('config', 'Settings', (v) => html`<${Data} value=${v} empty="defaults" />`)}
    ${p4 && html`<${P4Tables} info=${p4} entries=${data['table:entries']} defaults=${data['table:defaults']} />`}
    ${tables.map((t) => section('table:' + t.name, 'Table ' + t.name, (v) => html`<${Rows} rows=${v || []} empty="no entries" />`))}
    ${((type && type.views) || []).map((v) =>
      section('view:' + v.name, 'View ' + v.name, (val) => html`<${Data} value=${val} empty="nothing" />`, v.name !== 'p4info'),
    )}
  </aside>`;
}

// P4Tables shows each table of a P4 program with its entries: a column per
// match field, the action and its parameters, the priority; and the
// default action the control plane set.
function P4Tables({ info, entries, defaults }) {
  const rows = (entries && entries.value) || [];
  const defs = (defaults && defaults.value) || [];
  const named = (t, x) => x === t.preamble.name || x === t.preamble.alias;
  return html`${(info.tables || []).map((t) => {
    const mine = rows.filter((e) => named(t, e.table));
    const fields = (t.matchFields || []).map((f) => f.name);
    const cols = [...fields, 'action', 'priority'];
    const flat = mine.map((e) => {
      const r = { action: e.action + (e.params ? '(' + Object.entries(e.params).map(([k, v]) => `${k}=${v}`).join(', ') + ')' : '') };
      for (const f of fields) r[f] = (e.match && (e.match[f] ?? e.match[f.split('.').pop()])) || '*';
      r.priority = e.priority || '';
      return r;
    });
    const d = defs.find((x) => named(t, x.table));
    return html`<details open class="section p4table" data-p4table=${t.preamble.name}>
      <summary>P4 table ${t.preamble.name} (${mine.length} of ${t.size})</summary>
      <p class="kind">match: ${(t.matchFields || []).map((f) => `${f.name} (${f.matchType.toLowerCase()}, ${f.bitwidth} bits)`).join(', ') || 'none'}</p>
      ${d && html`<p class="kind">default action: ${d.action}${d.params ? ' ' + JSON.stringify(d.params) : ''}</p>`}
      <${Rows} rows=${flat} columns=${cols} empty="no entries" />
    </details>`;
  })}`;
}
