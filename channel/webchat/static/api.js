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
  return answerOf(resp);
}

// answerOf is the parsed JSON body of a 2xx answer, or its ApiError.
async function answerOf(resp) {
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

// StreamCut: a streamed answer ended before its reply; the message may
// still have been processed, so the caller asks again with the same
// message_id for the JSON reply.
export class StreamCut extends Error {
  constructor() {
    super('the stream ended before the reply');
    this.name = 'StreamCut';
  }
}

// stream posts body to path asking for server-sent events and calls
// onEvent(name, data) for each progress and text event as it arrives; it
// returns the reply event's data, the same as call's answer. An answer
// that is not a stream (an error, an older server) is read as call reads
// it; an error event throws an ApiError, a cut stream StreamCut.
export async function stream(key, path, body, onEvent) {
  const headers = {Accept: 'text/event-stream', Authorization: 'Bearer ' + key, 'Content-Type': 'application/json'};
  let resp;
  try {
    resp = await fetch(path, {method: 'POST', headers, body: JSON.stringify(body), cache: 'no-store', credentials: 'omit', redirect: 'error'});
  } catch (e) {
    throw new ApiError(0, 'network', t('api.unreachable', {message: e && e.message ? e.message : String(e)}), 0);
  }
  if (!resp.ok || !resp.body || !(resp.headers.get('Content-Type') || '').startsWith('text/event-stream')) return answerOf(resp);
  const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    let chunk;
    try {
      chunk = await reader.read();
    } catch {
      throw new StreamCut();
    }
    if (chunk.done) throw new StreamCut();
    buf += chunk.value;
    for (let end = buf.indexOf('\n\n'); end >= 0; end = buf.indexOf('\n\n')) {
      const ev = parseEvent(buf.slice(0, end));
      buf = buf.slice(end + 2);
      if (!ev) continue;
      if (ev.name === 'reply') {
        reader.cancel().catch(() => {});
        return ev.data;
      }
      if (ev.name === 'error') {
        const err = (ev.data && ev.data.error) || {};
        throw new ApiError(err.code === 'case_conflict' ? 409 : 503, String(err.code || 'unavailable'), String(err.message || ''), 1);
      }
      onEvent(ev.name, ev.data);
    }
  }
}

// parseEvent reads one server-sent event's name and JSON data, or null.
function parseEvent(block) {
  let name = 'message';
  let data = '';
  for (const line of block.split('\n')) {
    if (line.startsWith('event:')) name = line.slice(6).trim();
    else if (line.startsWith('data:')) data += line.slice(5).trimStart();
  }
  try {
    const parsed = JSON.parse(data);
    return parsed && typeof parsed === 'object' ? {name, data: parsed} : null;
  } catch {
    return null;
  }
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
    max_body_bytes: Number.isSafeInteger(me.max_body_bytes) && me.max_body_bytes > 0 ? me.max_body_bytes : 0,
  };
}
