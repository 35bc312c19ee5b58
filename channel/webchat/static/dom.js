// DOM construction without HTML parsing. Every string given to h() becomes
// a text node or an attribute value; nothing is ever parsed as markup, so
// text from the server cannot turn into elements or scripts.

import {t, fmtNumber, fmtDateTime, fmtClockTime, fmtDay} from './i18n.js';

const safeHref = /^\/(?!\/)/; // same-origin absolute paths only

// h builds an element: h('p', {class: 'x'}, 'text', child, [more]).
// Props: class, text, hidden, disabled, dataset, on<event> (a function),
// href (a same-origin path), anything else as an attribute.
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  if (props) {
    for (const [k, v] of Object.entries(props)) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') {
        el.className = v;
      } else if (k === 'text') {
        el.textContent = String(v);
      } else if (k === 'hidden' || k === 'disabled') {
        el[k] = Boolean(v);
      } else if (k === 'dataset') {
        Object.assign(el.dataset, v);
      } else if (k.startsWith('on')) {
        if (typeof v !== 'function') throw new TypeError('event handler must be a function: ' + k);
        el.addEventListener(k.slice(2), v);
      } else if (k === 'href') {
        const s = String(v);
        if (!safeHref.test(s)) throw new TypeError('refusing a link outside this site');
        el.setAttribute('href', s);
      } else {
        el.setAttribute(k, v === true ? '' : String(v));
      }
    }
  }
  add(el, children);
  return el;
}

function add(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) {
      add(el, c);
    } else if (c instanceof Node) {
      el.append(c);
    } else {
      el.append(document.createTextNode(String(c)));
    }
  }
}

// $ returns the element with the given id; a missing one is a bug.
export function $(id) {
  const el = document.getElementById(id);
  if (!el) throw new Error('missing element #' + id);
  return el;
}

// setText replaces an element's content with plain text.
export function setText(el, text) {
  el.textContent = text == null ? '' : String(text);
}

// vh is text only screen readers see.
export function vh(text) {
  return h('span', {class: 'visually-hidden'}, text);
}

// pretty renders a JSON value as indented text.
export function pretty(v) {
  if (v === undefined) return '';
  try {
    return JSON.stringify(v, null, 2);
  } catch {
    return String(v);
  }
}

// parseTime reads an RFC 3339 time (Go writes up to nanoseconds) as
// milliseconds since the epoch, or NaN.
export function parseTime(s) {
  if (typeof s !== 'string' || s === '') return NaN;
  return Date.parse(s.replace(/(\.\d{3})\d+/, '$1'));
}

// fmtTime is a date and time in the user's zone and language; fmtZoned
// names the zone too, for times a person acts on; fmtClock is the time of
// day of milliseconds since the epoch.
export function fmtTime(s) {
  const t = parseTime(s);
  if (Number.isNaN(t)) return s ? String(s) : '—';
  return fmtDateTime(t, false);
}

export function fmtZoned(s) {
  const t = parseTime(s);
  if (Number.isNaN(t)) return s ? String(s) : '—';
  return fmtDateTime(t, true);
}

export function fmtClock(ms) {
  if (!ms) return '';
  return fmtClockTime(ms);
}

// fmtDue is a due date as a board keeps it: a calendar day (2006-01-02)
// or an RFC 3339 time.
export function fmtDue(s) {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(String(s || ''));
  if (m) return fmtDay(Number(m[1]), Number(m[2]), Number(m[3]));
  return fmtZoned(s);
}

// fmtMs is a duration in milliseconds, readable.
export function fmtMs(ms) {
  const n = Number(ms);
  if (!Number.isFinite(n)) return '—';
  if (Math.abs(n) < 1000) return fmtNumber(Math.round(n)) + ' ' + t('unit.ms');
  if (Math.abs(n) < 60000) return fmtNumber(n / 1000, {minimumFractionDigits: 2, maximumFractionDigits: 2}) + ' ' + t('unit.s');
  return fmtNumber(n / 60000, {minimumFractionDigits: 1, maximumFractionDigits: 1}) + ' ' + t('unit.min');
}

// fmtCost is an amount in US dollars, precise enough for one model call.
export function fmtCost(usd) {
  const n = Number(usd);
  if (!Number.isFinite(n)) return '—';
  if (n === 0) return '$0';
  const digits = Math.abs(n) < 0.01 ? 6 : 4;
  return '$' + fmtNumber(n, {minimumFractionDigits: digits, maximumFractionDigits: digits, useGrouping: false});
}

export function fmtInt(n) {
  const v = Number(n);
  return Number.isFinite(v) ? fmtNumber(v) : '—';
}

// richText is server text with the links to this app's own pages made
// links: a full URL on this origin whose path isAppPath accepts. Anything
// else stays text, so a reply cannot lead off the site.
export function richText(text, isAppPath) {
  const s = String(text == null ? '' : text);
  const out = [];
  let last = 0;
  for (const m of s.matchAll(/https?:\/\/[^\s<>"'«»]+/g)) {
    const raw = m[0].replace(/[.,;:!?)\]]+$/, '');
    let url;
    try {
      url = new URL(raw);
    } catch {
      continue;
    }
    if (url.origin !== location.origin || !safeHref.test(url.pathname) || !isAppPath(url.pathname)) continue;
    if (m.index > last) out.push(s.slice(last, m.index));
    out.push(h('a', {href: url.pathname + url.search + url.hash}, raw));
    last = m.index + raw.length;
  }
  if (last < s.length) out.push(s.slice(last));
  return out;
}

// randomID is an unguessable id for conversations and messages; it uses
// getRandomValues, which works on plain-HTTP origins too.
export function randomID(prefix) {
  const b = new Uint8Array(12);
  crypto.getRandomValues(b);
  return prefix + '-' + Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}

export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
