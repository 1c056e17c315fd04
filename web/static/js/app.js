// The edgenf dashboard: sign in with a token, then the topology, live
// per-port rates and drops (polled from /v1/stats), and any cube in detail.
// What it shows is what the identity may see: a tenant's token shows its
// own cubes only, as everywhere in the API.

import { html, render, useState, useEffect, useMemo, useRef } from '../vendor/htm/standalone.module.js';
import { get, getToken, setToken, AuthError } from './api.js';
import { rates as ratesOf, pps, bps, total, tenantColor } from './format.js';
import { layout, Graph } from './graph.js';
import { CubeDetail } from './detail.js';

const INTERVALS = [
  [1000, '1 s'],
  [2000, '2 s'],
  [5000, '5 s'],
  [10000, '10 s'],
  [0, 'paused'],
];

function App() {
  const [who, setWho] = useState(null);
  const [message, setMessage] = useState('');
  const [checking, setChecking] = useState(true);

  const check = async () => {
    setChecking(true);
    try {
      setWho(await get('/v1/whoami'));
      setMessage('');
    } catch (e) {
      setWho(null);
      if (e instanceof AuthError) setMessage(getToken() ? 'The daemon refused this token.' : '');
      else setMessage(`The daemon did not answer: ${e.message}`);
    }
    setChecking(false);
  };
  useEffect(() => {
    check();
  }, []);

  if (checking && !who) return html`<div class="splash">edgenf</div>`;
  if (!who) {
    return html`<${Login} message=${message} onToken=${(t) => {
      setToken(t);
      check();
    }} />`;
  }
  const signOut = (msg) => {
    setToken('');
    setWho(null);
    setMessage(msg);
  };
  return html`<${Dashboard} who=${who} onSignOut=${() => signOut('Signed out.')} onAuthLost=${(m) => signOut(`Signed out: ${m}`)} />`;
}

function Login({ message, onToken }) {
  const input = useRef(null);
  useEffect(() => input.current && input.current.focus(), []);
  const submit = (e) => {
    e.preventDefault();
    const t = input.current.value.trim();
    if (t) onToken(t);
  };
  return html`<main class="login">
    <form onSubmit=${submit} id="login">
      <h1>edgenf</h1>
      <p>Sign in with an API token: the administrator's, or a tenant's to see that tenant's cubes.</p>
      <label for="token">Token</label>
      <input id="token" type="password" autocomplete="off" spellcheck="false" ref=${input} />
      ${message && html`<p class="error" id="login-message">${message}</p>`}
      <button type="submit">Sign in</button>
      <p class="hint">The token stays in this tab (session storage) and goes to the daemon only, in an Authorization header.</p>
    </form>
  </main>`;
}

function Dashboard({ who, onSignOut, onAuthLost }) {
  const [graph, setGraph] = useState(null);
  const [types, setTypes] = useState(new Map());
  const [snaps, setSnaps] = useState({ prev: null, cur: null });
  const [every, setEvery] = useState(1000);
  const [selected, setSelected] = useState(null);
  const [filter, setFilter] = useState('');
  const [error, setError] = useState('');
  const revision = useRef(null);

  useEffect(() => {
    get('/v1/types')
      .then((ts) => setTypes(new Map(ts.map((t) => [t.name, t]))))
      .catch((e) => (e instanceof AuthError ? onAuthLost(e.message) : setError(e.message)));
  }, []);

  // poll the counters; refetch the graph when the configuration changed
  useEffect(() => {
    let stop = false;
    let timer = null;
    const tick = async () => {
      if (stop) return;
      if (!document.hidden) {
        try {
          const st = await get('/v1/stats');
          if (revision.current !== st.revision) {
            const g = await get('/v1/graph');
            revision.current = st.revision;
            if (!stop) setGraph(g);
          }
          if (!stop) {
            setSnaps((s) => ({ prev: s.cur, cur: st }));
            setError('');
          }
        } catch (e) {
          if (e instanceof AuthError) {
            onAuthLost(e.message);
            return;
          }
          if (!stop) setError(`The daemon did not answer: ${e.message}`);
        }
      }
      if (every > 0 && !stop) timer = setTimeout(tick, every);
    };
    tick();
    return () => {
      stop = true;
      clearTimeout(timer);
    };
  }, [every]);

  const shown = useMemo(() => {
    if (!graph) return null;
    const f = filter.trim().toLowerCase();
    if (!f) return graph;
    const match = (c) => [c.name, c.type, c.tenant || ''].some((s) => s.toLowerCase().includes(f));
    const cubes = graph.cubes.filter(match);
    const names = new Set(cubes.map((c) => c.name));
    return { ...graph, cubes, attachments: graph.attachments.filter((a) => names.has(a.cube)) };
  }, [graph, filter]);
  const lay = useMemo(() => shown && layout(shown), [shown]);
  const rates = useMemo(() => ratesOf(snaps.prev, snaps.cur), [snaps]);
  const cube = graph && selected && graph.cubes.find((c) => c.name === selected);
  const tenants = graph ? [...new Set(graph.cubes.map((c) => c.tenant || ''))].sort() : [];

  return html`<div class="dashboard">
    <header class="top">
      <h1>edgenf</h1>
      <span class="who" id="identity">${who.admin ? 'administrator' : 'tenant ' + who.tenant}</span>
      ${graph && html`<span class="counts">${graph.cubes.length} cubes</span>`}
      <input class="filter" type="search" placeholder="filter: name, type, tenant" value=${filter}
        onInput=${(e) => setFilter(e.target.value)} />
      <label class="every">refresh
        <select value=${every} onChange=${(e) => setEvery(Number(e.target.value))}>
          ${INTERVALS.map(([ms, label]) => html`<option value=${ms}>${label}</option>`)}
        </select>
      </label>
      <button onClick=${onSignOut} id="signout">Sign out</button>
    </header>
    ${error && html`<p class="banner error">${error}</p>`}
    <main class=${cube ? 'with-detail' : ''}>
      <section class="card graph">
        <h2>Topology ${tenants.length > 0 && html`<span class="legend">${tenants.map((t) => html`<span class="tenant" style=${'--tenant:' + tenantColor(t)}>${t || 'administrator'}</span>`)}</span>`}</h2>
        <div class="scroll">
          ${!lay ? html`<p class="empty">loading…</p>` : lay.units.length === 0 && lay.badges.length === 0
            ? html`<p class="empty">no cubes${filter ? ' match the filter' : ''}</p>`
            : html`<${Graph} lay=${lay} rates=${rates} selected=${selected} onSelect=${setSelected} />`}
        </div>
      </section>
      <section class="card ports">
        <h2>Ports</h2>
        <${PortTable} graph=${shown} rates=${rates} onSelect=${setSelected} />
      </section>
      ${cube && html`<${CubeDetail} key=${cube.name} cube=${cube} type=${types.get(cube.type)} rates=${rates}
        revision=${graph.revision} onClose=${() => setSelected(null)} onAuthLost=${onAuthLost} />`}
    </main>
  </div>`;
}

function PortTable({ graph, rates, onSelect }) {
  if (!graph) return null;
  const rows = [];
  const points = new Map(graph.attachments.map((a) => [a.cube, a.point]));
  for (const c of graph.cubes) {
    const ports = c.transparent ? [{ name: 'ingress' }, { name: 'egress' }] : c.ports;
    for (const p of ports) rows.push({ c, p, r: rates.get(c.name + ':' + p.name) });
  }
  if (!rows.length) return html`<p class="empty">no ports</p>`;
  return html`<div class="scroll"><table class="data num" id="ports">
    <thead><tr>
      <th>cube</th><th>port</th><th>peer</th><th>in</th><th>in bit/s</th><th>out</th><th>out bit/s</th><th>drops</th>
      <th>received</th><th>sent</th><th>dropped</th>
    </tr></thead>
    <tbody>${rows.map(({ c, p, r }) => html`<tr data-port=${c.name + ':' + p.name} onClick=${() => onSelect(c.name)}
        class=${r && r.drop_pps > 0 ? 'dropping' : ''}>
      <th>${c.name}</th><td>${p.name}</td><td>${p.peer || (c.transparent && points.has(c.name) ? 'on ' + points.get(c.name) : '')}</td>
      <td class="rx-pps">${r ? pps(r.rx_pps) : '–'}</td><td>${r ? bps(r.rx_bps) : '–'}</td>
      <td class="tx-pps">${r ? pps(r.tx_pps) : '–'}</td><td>${r ? bps(r.tx_bps) : '–'}</td>
      <td class="drop-pps">${r ? pps(r.drop_pps) : '–'}</td>
      <td class="rx-packets">${r ? total(r.counters.rx_packets) : '–'}</td>
      <td class="tx-packets">${r ? total(r.counters.tx_packets) : '–'}</td>
      <td class="drop-packets">${r ? total(r.counters.drop_packets) : '–'}</td>
    </tr>`)}</tbody>
  </table></div>`;
}

render(html`<${App} />`, document.getElementById('app'));
