// The task board, read only: GET /v1/board answers its columns with their
// cards ({columns: [{name, cards: [{id, title, assignee, due, status}]}]}),
// GET /v1/board/cards/{id} one card with its history. These are the pages
// the board's own links (/board/c/{id}) point at.

import {call, ApiError} from './api.js';
import {$, h, setText, fmtZoned, fmtDue} from './dom.js';
import {t} from './i18n.js';

let ctx; // {key(), unauthorized()}
let els;
let seq = 0; // ignores answers to superseded requests

export function initBoard(context) {
  ctx = context;
  els = {
    boardStatus: $('board-status'),
    boardError: $('board-error'),
    columns: $('board-columns'),
    cardTitle: $('card-title'),
    cardStatus: $('card-status'),
    cardError: $('card-error'),
    cardBody: $('card-body'),
  };
}

function str(v) {
  return typeof v === 'string' ? v : '';
}

function list(v) {
  return Array.isArray(v) ? v.filter((x) => x && typeof x === 'object') : [];
}

// statusWord names a card's status in the user's language; one the app
// does not know is shown as the server sent it.
function statusWord(s) {
  return s === 'open' || s === 'done' ? t('status.' + s) : s;
}

function cardPath(id) {
  return '/board/c/' + encodeURIComponent(id);
}

// failure is what a failed read says; 401 has sent the user to sign in.
function failure(e, notFound) {
  if (e instanceof ApiError && e.status === 401) {
    ctx.unauthorized();
    return '';
  }
  if (e instanceof ApiError && e.code === 'no_board') return t('board.none');
  if (e instanceof ApiError && e.status === 403) return t('board.forbidden');
  if (e instanceof ApiError && e.status === 404 && notFound) return notFound;
  return null;
}

export async function showBoard() {
  const mine = ++seq;
  setText(els.boardStatus, t('board.loading'));
  els.boardError.replaceChildren();
  els.columns.replaceChildren();
  let res;
  try {
    res = await call(ctx.key(), 'GET', '/v1/board');
  } catch (e) {
    if (mine !== seq) return;
    setText(els.boardStatus, '');
    const text = failure(e, '') ?? t('board.failed', {message: e.message});
    if (text) els.boardError.replaceChildren(h('p', null, text));
    return;
  }
  if (mine !== seq) return;
  setText(els.boardStatus, '');
  const columns = list(res && res.columns);
  if (columns.length === 0) {
    els.columns.replaceChildren(h('p', {class: 'empty'}, t('board.noColumns')));
    return;
  }
  els.columns.replaceChildren(...columns.map(renderColumn));
}

function renderColumn(col, i) {
  const id = 'board-column-' + i;
  const cards = list(col.cards).filter((c) => str(c.id));
  return h('section', {class: 'board-column', 'aria-labelledby': id},
    h('h2', {id}, str(col.name), ' ', h('span', {class: 'count'}, '(' + t('board.count', {n: cards.length}) + ')')),
    cards.length
      ? h('ul', {class: 'board-cards'}, cards.map(renderCardLine))
      : h('p', {class: 'empty'}, t('board.noCards')));
}

function renderCardLine(c) {
  const facts = [];
  if (str(c.assignee)) facts.push([t('board.assignee'), str(c.assignee)]);
  if (str(c.due)) facts.push([t('board.due'), h('time', {datetime: str(c.due)}, fmtDue(c.due))]);
  if (str(c.status)) facts.push([t('board.status'), statusWord(str(c.status))]);
  return h('li', {class: 'board-card' + (c.status === 'done' ? ' done' : ''), dataset: {card: str(c.id)}},
    h('a', {class: 'board-card-title', href: cardPath(str(c.id))}, str(c.title) || str(c.id)),
    facts.length ? h('dl', {class: 'facts compact'}, facts.map(([k, v]) => [h('dt', null, k), h('dd', null, v)])) : null);
}

export async function showCard(id) {
  const mine = ++seq;
  setText(els.cardTitle, t('card.heading', {id}));
  setText(els.cardStatus, t('card.loading'));
  els.cardError.replaceChildren();
  els.cardBody.replaceChildren();
  let res;
  try {
    res = await call(ctx.key(), 'GET', '/v1/board/cards/' + encodeURIComponent(id));
  } catch (e) {
    if (mine !== seq) return;
    setText(els.cardStatus, '');
    const text = failure(e, t('card.notFound', {id})) ?? t('card.failed', {message: e.message});
    if (text) els.cardError.replaceChildren(h('p', null, text));
    return;
  }
  if (mine !== seq) return;
  setText(els.cardStatus, '');
  const c = res && res.card && typeof res.card === 'object' ? res.card : {};
  const title = str(c.title) || t('card.heading', {id});
  setText(els.cardTitle, title);
  document.title = title + ' — arbiter';
  els.cardBody.replaceChildren(...renderCard(c, list(res && res.history)));
}

function time(s) {
  return h('time', {datetime: s}, fmtZoned(s));
}

function renderCard(c, history) {
  const pairs = [
    [t('card.id'), str(c.id)],
    [t('card.column'), str(c.column)],
    [t('board.status'), str(c.status) ? h('span', {class: 'badge ' + (c.status === 'done' ? 'status-ok' : 'status-other')}, statusWord(str(c.status))) : ''],
    [t('board.assignee'), str(c.assignee)],
    [t('board.due'), str(c.due) ? h('time', {datetime: str(c.due)}, fmtDue(c.due)) : ''],
    [t('card.createdBy'), str(c.created_by)],
    [t('card.createdAt'), str(c.created_at) ? time(str(c.created_at)) : ''],
    [t('card.updatedAt'), str(c.updated_at) ? time(str(c.updated_at)) : ''],
    [t('card.doneAt'), str(c.done_at) ? time(str(c.done_at)) : ''],
  ].filter(([, v]) => v !== '');
  const out = [h('dl', {class: 'facts'}, pairs.map(([k, v]) => [h('dt', null, k), h('dd', null, v)]))];
  if (str(c.description)) {
    out.push(h('section', {class: 'card-section', 'aria-labelledby': 'card-description'},
      h('h2', {id: 'card-description'}, t('card.description')),
      h('p', {class: 'text'}, str(c.description))));
  }
  out.push(h('section', {class: 'card-section', 'aria-labelledby': 'card-history'},
    h('h2', {id: 'card-history'}, t('card.history')),
    history.length
      ? h('ol', {class: 'history'}, history.map(renderEvent))
      : h('p', {class: 'empty'}, t('card.noHistory'))));
  return out;
}

function renderEvent(e) {
  const kind = str(e.kind);
  const known = kind === 'created' || kind === 'comment' || kind === 'done';
  return h('li', {class: 'history-entry', dataset: {kind}},
    h('p', {class: 'meta'},
      h('span', {class: 'kind'}, known ? t('history.' + kind) : kind),
      str(e.author) ? [' · ', h('span', {class: 'author'}, str(e.author))] : null,
      str(e.at) ? [' · ', time(str(e.at))] : null),
    str(e.text) ? h('p', {class: 'text'}, str(e.text)) : null);
}
