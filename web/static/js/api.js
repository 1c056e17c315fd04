// The dashboard's API client. The token is kept in sessionStorage (this
// tab only, gone when it closes) and sent in an Authorization header, like
// any API client: never in a URL or a cookie, so no other site can make
// the browser use it, and no link or log carries it. A client certificate,
// if the browser has one the daemon accepts, works without a token.

const KEY = 'edgenf-token';

// The API is served beside /ui/, under whatever prefix a proxy adds.
export const base = location.pathname.replace(/\/ui(\/.*)?$/, '');

export class AuthError extends Error {}

export function getToken() {
  try {
    return sessionStorage.getItem(KEY) || '';
  } catch {
    return '';
  }
}

export function setToken(t) {
  if (t) sessionStorage.setItem(KEY, t);
  else sessionStorage.removeItem(KEY);
}

// exact keeps integers a double cannot hold (a UPF's 64-bit SEIDs, say) as
// their digits, from the JSON text itself (JSON.parse's source access):
// shown exactly, where a number would be rounded.
function exact(key, value, context) {
  if (typeof value === 'number' && !Number.isSafeInteger(value) && context && /^-?\d+$/.test(context.source)) {
    return context.source;
  }
  return value;
}

// get fetches a JSON resource; it throws AuthError on 401 and Error with
// the API's message otherwise.
export async function get(path) {
  const headers = { Accept: 'application/json' };
  const t = getToken();
  if (t) headers.Authorization = 'Bearer ' + t;
  const r = await fetch(base + path, { headers, cache: 'no-store' });
  let body = null;
  try {
    body = JSON.parse(await r.text(), exact);
  } catch {
    body = null;
  }
  const msg = (body && body.error && body.error.message) || `HTTP ${r.status}`;
  if (r.status === 401) throw new AuthError(msg);
  if (!r.ok) throw new Error(msg);
  return body;
}

export const enc = encodeURIComponent;
