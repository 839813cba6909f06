// The public API, as the console reads it: every call with the investigator's token
// (when the service has authentication on) and errors in words.

export class AuthRequired extends Error {}
export class Unreachable extends Error {}
export class APIError extends Error {
  constructor(status, body) {
    super(body?.error?.message || `the server answered ${status}`);
    this.status = status;
    this.code = body?.error?.code;
  }
}

const TOKEN_KEY = 'roboscope-console-token';

export const api = {
  get token() { return sessionStorage.getItem(TOKEN_KEY); },
  set token(value) {
    if (value) sessionStorage.setItem(TOKEN_KEY, value); else sessionStorage.removeItem(TOKEN_KEY);
  },

  /** GET /api/v1 + path; the parsed body, or null for an empty one (`text`: the body as text). */
  async get(path, { signal, text: asText = false } = {}) {
    const headers = { Accept: 'application/json' };
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    let response;
    try {
      response = await fetch(`/api/v1${path}`, { headers, signal });
    } catch (error) {
      if (error.name === 'AbortError') throw error;
      throw new Unreachable('The server cannot be reached. Check the network; the console retries what it was doing.');
    }
    const text = await response.text();
    let body = null;
    try { body = text ? JSON.parse(text) : null; } catch { body = null; }
    if (response.status === 401) throw new AuthRequired(body?.error?.message || 'a token is needed');
    if (response.status === 503) throw new Unreachable('The service cannot reach its database right now; it retries by itself.');
    if (!response.ok) throw new APIError(response.status, body);
    return asText ? text : body;
  },
};

/** Every page of an audit listing (`next_after` / `next_before` cursors). */
export async function allAuditPages(path, params) {
  const entries = [];
  const query = new URLSearchParams(params);
  query.set('limit', '1000');
  for (;;) {
    const page = await api.get(`${path}?${query}`);
    entries.push(...page.data);
    const next = params.order === 'desc' ? page.next_before : page.next_after;
    if (next === null || next === undefined) return entries;
    query.set(params.order === 'desc' ? 'before' : 'after', String(next));
  }
}

export const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
