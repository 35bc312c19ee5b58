// The HTTP API as the app uses it: every call carries the bearer key,
// sends no cookies, and turns the server's {"error": {code, message}} into
// an ApiError with the HTTP status.

import {t} from './i18n.js';

export class ApiError extends Error {
  constructor(status, code, message, retryAfter) {
    super(message);
    this.name = 'ApiError';
    this.status = status; // 0 when the server was not reached
    this.code = code;
    this.retryAfter = retryAfter; // seconds, or 0
  }
}

function retryAfterSeconds(v) {
  if (!v) return 0;
  const n = Number(v);
  if (Number.isFinite(n)) return Math.max(0, n);
  const t = Date.parse(v);
  return Number.isNaN(t) ? 0 : Math.max(0, (t - Date.now()) / 1000);
}

// call sends one request and returns the parsed JSON body of a 2xx answer.
export async function call(key, method, path, body) {
  const headers = {Accept: 'application/json', Authorization: 'Bearer ' + key};
  const init = {method, headers, cache: 'no-store', credentials: 'omit', redirect: 'error'};
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let resp;
  try {
    resp = await fetch(path, init);
  } catch (e) {
    throw new ApiError(0, 'network', t('api.unreachable', {message: e && e.message ? e.message : String(e)}), 0);
  }
  const text = await resp.text().catch(() => '');
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = null;
    }
  }
  if (!resp.ok) {
    const err = (data && typeof data === 'object' && data.error) || {};
    const message = typeof err.message === 'string' && err.message ? err.message : 'HTTP ' + resp.status + (resp.statusText ? ' ' + resp.statusText : '');
    throw new ApiError(resp.status, typeof err.code === 'string' ? err.code : 'http_' + resp.status, message, retryAfterSeconds(resp.headers.get('Retry-After')));
  }
  if (data === null) {
    throw new ApiError(resp.status, 'bad_response', t('api.notJSON'), 0);
  }
  return data;
}

// whoAmI asks the server who key's user is: 200 with {tenant, user, name,
// language, timezone, scopes} for a key it accepts, 401 for one it does
// not. Reading it changes nothing.
export async function whoAmI(key) {
  const me = await call(key, 'GET', '/v1/me');
  if (!me || typeof me !== 'object') throw new ApiError(200, 'bad_response', t('api.notJSON'), 0);
  const str = (v) => (typeof v === 'string' ? v : '');
  return {
    user: str(me.user),
    name: str(me.name),
    language: str(me.language),
    timezone: str(me.timezone),
    scopes: Array.isArray(me.scopes) ? me.scopes.filter((s) => typeof s === 'string') : [],
  };
}
