// The list of turns: GET /v1/turns?conversation_id=&status=&provider=&before=&limit=
// answers the tenant's turns, newest first, each with turn_id,
// conversation_id, user_id, route, status, started_at, duration_ms, cost_usd
// and providers. The filters live in the page's address, so a filtered list
// can be linked to and the back button works.

import {call, ApiError} from './api.js';
import {$, h, setText, fmtTime, fmtMs, fmtCost} from './dom.js';
import {t} from './i18n.js';

const filterNames = ['conversation_id', 'status', 'provider'];
const knownProviders = ['fireworks', 'mistral', 'openai', 'xai', 'openrouter', 'anthropic', 'ollama', 'vllm', 'llamacpp'];

let ctx; // {key(), unauthorized(), navigate(path), conversations()}
let els;
let seq = 0; // ignores answers to superseded requests
let shown = []; // items on screen
let cursor = ''; // before= for the next page
let query = null;

export function initTurns(context) {
  ctx = context;
  els = {
    form: $('turns-filter'),
    conversation: $('filter-conversation'),
    status: $('filter-status'),
    provider: $('filter-provider'),
    limit: $('filter-limit'),
    clear: $('filter-clear'),
    conversations: $('conversation-options'),
    providers: $('provider-options'),
    summary: $('turns-summary'),
    error: $('turns-error'),
    body: $('turns-body'),
    more: $('turns-more'),
  };
  els.form.addEventListener('submit', (e) => {
    e.preventDefault();
    const q = new URLSearchParams();
    for (const [name, input] of [['conversation_id', els.conversation], ['status', els.status], ['provider', els.provider]]) {
      const v = input.value.trim();
      if (v) q.set(name, v);
    }
    if (els.limit.value !== '50') q.set('limit', els.limit.value);
    const s = q.toString();
    ctx.navigate('/turns' + (s ? '?' + s : ''), {keepFocus: true});
  });
  els.clear.addEventListener('click', () => {
    ctx.navigate('/turns', {keepFocus: true});
  });
  els.more.addEventListener('click', () => load(true));
}

// showTurns renders the list for the filters in search (a query string).
export function showTurns(search) {
  const params = new URLSearchParams(search);
  query = new URLSearchParams();
  for (const name of filterNames) {
    const v = (params.get(name) || '').trim();
    if (v) query.set(name, v);
  }
  let limit = Number(params.get('limit'));
  if (!Number.isInteger(limit) || limit < 1 || limit > 500) limit = 50;
  query.set('limit', String(limit));
  els.conversation.value = query.get('conversation_id') || '';
  els.status.value = query.get('status') || '';
  els.provider.value = query.get('provider') || '';
  if (![...els.limit.options].some((o) => o.value === String(limit))) {
    els.limit.append(h('option', {value: String(limit)}, String(limit)));
  }
  els.limit.value = String(limit);
  els.conversations.replaceChildren(...ctx.conversations().map((id) => h('option', {value: id})));
  shown = [];
  cursor = '';
  els.body.replaceChildren();
  load(false);
}

async function load(more) {
  const mine = ++seq;
  const q = new URLSearchParams(query);
  if (more && cursor) q.set('before', cursor);
  els.more.hidden = true;
  els.error.replaceChildren();
  setText(els.summary, t('turns.loading'));
  let res;
  try {
    res = await call(ctx.key(), 'GET', '/v1/turns?' + q.toString());
  } catch (e) {
    if (mine !== seq) return;
    setText(els.summary, '');
    if (e instanceof ApiError && e.status === 401) {
      ctx.unauthorized();
      return;
    }
    const text = e instanceof ApiError && e.status === 404
      ? t('turns.unsupported', {message: e.message})
      : t('turns.failed', {message: e.message});
    els.error.replaceChildren(h('p', null, text));
    return;
  }
  if (mine !== seq) return;
  const items = listItems(res);
  shown = shown.concat(items);
  els.body.append(...items.map(row));
  const limit = Number(query.get('limit'));
  const next = res && typeof res.next_before === 'string' ? res.next_before : '';
  cursor = next || (items.length ? String(items[items.length - 1].started_at || '') : '');
  els.more.hidden = !(next || (items.length >= limit && cursor));
  summarize();
  offerProviders();
}

// listItems accepts {"turns": [...]}, {"items": [...]} or a bare array.
function listItems(res) {
  const list = Array.isArray(res) ? res : res && Array.isArray(res.turns) ? res.turns : res && Array.isArray(res.items) ? res.items : [];
  return list.filter((x) => x && typeof x === 'object' && typeof x.turn_id === 'string');
}

// summarize totals the costs shown; turns of no known price are counted
// apart, not as $0.
function summarize() {
  const cost = shown.reduce((sum, x) => sum + (x.cost_unknown === true ? 0 : Number(x.cost_usd) || 0), 0);
  const unknown = shown.filter((x) => x.cost_unknown === true).length;
  const n = shown.length;
  // None of known price: the total is unknown, not $0 with a remark.
  const total = unknown && unknown === shown.length ? t('cost.unknown')
    : unknown ? t('turns.costWithUnknown', {cost: fmtCost(cost), n: unknown}) : fmtCost(cost);
  setText(els.summary, n === 0
    ? t('turns.none')
    : t('turns.summary', {n, cost: total}));
}

function offerProviders() {
  const seen = new Set(knownProviders);
  for (const x of shown) for (const p of providers(x)) seen.add(p);
  els.providers.replaceChildren(...[...seen].sort().map((p) => h('option', {value: p})));
}

function providers(turn) {
  return Array.isArray(turn.providers) ? turn.providers.filter((p) => typeof p === 'string') : [];
}

function statusClass(s) {
  if (s === 'ok') return 'status-ok';
  if (typeof s === 'string' && s.startsWith('failed')) return 'status-failed';
  return 'status-other';
}

function row(turn) {
  const cell = (label, ...content) => h('td', {dataset: {label}}, ...content);
  const conv = String(turn.conversation_id || '');
  return h('tr', {dataset: {turn: turn.turn_id}},
    cell(t('turns.started'), h('time', {datetime: String(turn.started_at || '')}, fmtTime(turn.started_at))),
    cell(t('turns.turn'), h('a', {href: '/turns/' + encodeURIComponent(turn.turn_id)}, turn.turn_id)),
    cell(t('turns.conversation'), conv
      ? h('a', {href: '/turns?conversation_id=' + encodeURIComponent(conv), title: t('turns.ofConversation')}, conv)
      : '—'),
    cell(t('turns.user'), String(turn.user_id || '—')),
    cell(t('turns.route'), String(turn.route || '—')),
    cell(t('turns.status'), h('span', {class: 'badge ' + statusClass(turn.status)}, String(turn.status || '—'))),
    cell(t('turns.duration'), fmtMs(turn.duration_ms)),
    cell(t('turns.cost'), turn.cost_unknown === true ? t('cost.unknown') : fmtCost(turn.cost_usd)),
    cell(t('turns.providers'), providers(turn).join(', ') || '—'));
}
