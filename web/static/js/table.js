// Generic rendering of what the API returns for tables and views: a list
// of objects is a table whose columns are their keys; an object is a list
// of its fields; anything nested is shown as JSON.

import { html } from '../vendor/htm/standalone.module.js';

const MAX_ROWS = 200;

function cell(v) {
  if (v == null) return '';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

// columns are the keys of the rows, in the order they first appear
export function columnsOf(rows) {
  const cols = [];
  const seen = new Set();
  for (const r of rows) {
    if (r && typeof r === 'object' && !Array.isArray(r)) {
      for (const k of Object.keys(r)) {
        if (!seen.has(k)) {
          seen.add(k);
          cols.push(k);
        }
      }
    }
  }
  return cols;
}

export function Rows({ rows, columns, empty }) {
  if (!rows.length) return html`<p class="empty">${empty || 'none'}</p>`;
  const cols = columns || columnsOf(rows);
  if (!cols.length) return html`<pre>${JSON.stringify(rows, null, 2)}</pre>`;
  const shown = rows.slice(0, MAX_ROWS);
  return html`<div class="scroll">
    <table class="data">
      <thead><tr>${cols.map((c) => html`<th>${c}</th>`)}</tr></thead>
      <tbody>${shown.map((r) => html`<tr>${cols.map((c) => html`<td>${cell(r[c])}</td>`)}</tr>`)}</tbody>
    </table>
    ${rows.length > MAX_ROWS && html`<p class="more">${MAX_ROWS} of ${rows.length} shown (the API and the CLI have them all)</p>`}
  </div>`;
}

// Data renders any JSON answer.
export function Data({ value, empty }) {
  if (Array.isArray(value)) return html`<${Rows} rows=${value} empty=${empty} />`;
  if (value && typeof value === 'object') {
    const keys = Object.keys(value);
    if (!keys.length) return html`<p class="empty">${empty || 'none'}</p>`;
    return html`<table class="data fields"><tbody>
      ${keys.map((k) => html`<tr><th>${k}</th><td>${cell(value[k])}</td></tr>`)}
    </tbody></table>`;
  }
  return html`<pre>${cell(value)}</pre>`;
}
