// Questions a running turn asks its user before it can go on (an MCP
// server asking to use the model, or asking for input). While a message
// request is in flight, GET /v1/questions lists the user's open questions,
// oldest first; POST /v1/questions/{id} answers one with {"choice": value}
// or {"text": "..."}. This module polls the list and draws a question as a
// card; chat.js keeps the cards in the conversation and sends the answers.

import {call, ApiError} from './api.js';
import {h, vh, fmtClock, parseTime} from './dom.js';
import {t} from './i18n.js';

const pollEvery = 1000; // ms between polls while a message is in flight
const maxBackoff = 15000; // ms: the longest wait after failed polls
const maxAnswerLength = 4000; // the server's bound, in bytes; it says when more is sent

let inFlight = null; // the poll on its way, whichever watcher sent it

// parseQuestions keeps the well-formed questions of a GET /v1/questions
// answer as {id, at, text, choices: [{label, value}], freeText}.
export function parseQuestions(res) {
  const list = res && Array.isArray(res.questions) ? res.questions : [];
  const out = [];
  for (const item of list) {
    const q = item && item.question;
    if (!item || typeof item.id !== 'string' || !item.id || !q || typeof q !== 'object' || typeof q.text !== 'string') continue;
    const choices = (Array.isArray(q.choices) ? q.choices : [])
      .filter((c) => c && typeof c.value === 'string' && c.value !== '')
      .map((c) => ({label: typeof c.label === 'string' && c.label ? c.label : c.value, value: c.value}));
    const freeText = q.free_text === true;
    if (!choices.length && !freeText) continue; // nothing could answer it
    out.push({id: item.id, at: typeof item.asked_at === 'string' ? item.asked_at : '', text: q.text, choices, freeText});
  }
  return out;
}

// watchQuestions polls the open questions of conversationID until the
// returned function is called. There is never more than one poll in
// flight, even when a new message starts while the last one's poll is
// still out: the next poll is timed from the end of the last. onList
// gets each list. A 401 ends the polling and calls unauthorized; a server
// without the endpoint ends it quietly; any other failure makes the polls
// back off, up to maxBackoff.
export function watchQuestions(key, conversationID, onList, unauthorized) {
  let stopped = false;
  let timer = 0;
  let wait = pollEvery;
  const schedule = (ms) => {
    if (!stopped) timer = setTimeout(poll, ms);
  };
  async function poll() {
    timer = 0;
    while (inFlight) await inFlight;
    const k = key();
    if (stopped || !k) return;
    const req = call(k, 'GET', '/v1/questions?conversation_id=' + encodeURIComponent(conversationID));
    const done = req.then(() => {}, () => {}).then(() => {
      if (inFlight === done) inFlight = null;
    });
    inFlight = done;
    let res;
    try {
      res = await req;
    } catch (e) {
      if (stopped) return;
      const status = e instanceof ApiError ? e.status : 0;
      if (status === 401) {
        stopped = true;
        unauthorized();
        return;
      }
      if (status === 404 || status === 405 || status === 501) {
        stopped = true; // this server does not ask questions
        return;
      }
      wait = Math.min(maxBackoff, wait * 2);
      schedule(Math.min(maxBackoff, Math.max(wait, (e.retryAfter || 0) * 1000)));
      return;
    }
    if (stopped) return;
    wait = pollEvery;
    try {
      onList(parseQuestions(res));
    } finally {
      schedule(pollEvery);
    }
  }
  schedule(pollEvery);
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

// questionMessage is the conversation's record of a listed question. Its
// state is open, sending (an answer is on its way), answered or closed.
export function questionMessage(q) {
  const at = parseTime(q.at);
  return {
    id: 'q-' + q.id,
    role: 'question',
    qid: q.id,
    at: Number.isNaN(at) ? Date.now() : at,
    text: q.text,
    choices: q.choices,
    freeText: q.freeText,
    state: 'open',
  };
}

// isWaiting tells whether the question still waits for this page.
export function isWaiting(m) {
  return m.state === 'open' || m.state === 'sending';
}

// renderQuestion draws the card of m. on.choose(m, choice) answers with a
// choice, on.type(m, text) with typed text, on.draft(m, text) keeps what is
// being typed across redraws.
export function renderQuestion(m, on) {
  const base = 'question-' + String(m.qid).replace(/[^A-Za-z0-9_-]/g, '_');
  const open = isWaiting(m);
  const sending = m.state === 'sending';
  const errorID = base + '-error';
  const textError = open && m.error && m.errorOn === 'text';
  let form = null;
  if (open && m.freeText) {
    const input = h('input', {
      id: base + '-input',
      type: 'text',
      name: 'answer',
      maxlength: String(maxAnswerLength),
      autocomplete: 'off',
      disabled: sending,
      'aria-invalid': textError ? 'true' : undefined,
      'aria-describedby': textError ? errorID : undefined,
      oninput: () => on.draft(m, input.value),
    });
    input.value = m.draft || '';
    form = h('form', {
      class: 'question-form',
      novalidate: true,
      onsubmit: (e) => {
        e.preventDefault();
        on.type(m, input.value);
      },
    },
    h('label', {for: input.id}, m.choices.length ? t('q.orType') : t('q.yourAnswer')),
    h('div', {class: 'question-row'},
      input,
      h('button', {type: 'submit', disabled: sending}, t('q.send'), vh(t('q.sendHidden')))));
  }
  return h('div', {
    class: 'message question state-' + m.state,
    role: 'group',
    tabindex: '-1',
    'aria-labelledby': base + '-label ' + base + '-text',
    'aria-busy': sending ? 'true' : undefined,
    dataset: {message: m.id, question: m.qid},
  },
  h('p', {class: 'meta'},
    h('span', {class: 'who question-label', id: base + '-label'}, t('q.asks')), ' ',
    h('time', {datetime: new Date(m.at).toISOString()}, fmtClock(m.at))),
  h('p', {class: 'text', id: base + '-text'}, m.text),
  open && m.choices.length ? h('div', {class: 'choices', role: 'group', 'aria-label': t('q.answers')},
    m.choices.map((c) => h('button', {
      type: 'button',
      class: 'choice',
      disabled: sending,
      dataset: {value: c.value},
      onclick: () => on.choose(m, c),
    }, c.label))) : null,
  form,
  open && m.error ? h('p', {class: 'error', id: errorID, role: 'alert'}, m.error) : null,
  outcome(m));
}

function outcome(m) {
  switch (m.state) {
    case 'sending':
      return h('p', {class: 'question-outcome'}, t('q.sending'));
    case 'answered':
      return h('p', {class: 'question-outcome answered'}, t('q.answered'), h('strong', null, m.answer || ''));
    case 'closed':
      return h('p', {class: 'question-outcome closed'}, m.closed === 'late'
        ? t('q.late')
        : t('q.gone'));
    default:
      return null;
  }
}
