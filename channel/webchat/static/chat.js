// The chat view: the conversations of this tab, the message log and the
// composer. A message goes to POST /v1/messages with an id made here, so a
// retry after a 503 is the same message to the server and runs at most once.
// While it is in flight, the questions its turn asks are polled and shown
// as cards in its conversation (questions.js).

import {call, stream, ApiError, StreamCut} from './api.js';
import {$, h, vh, pretty, setText, fmtClock, fmtZoned, richText, randomID, sleep} from './dom.js';
import {t, fmtNumber} from './i18n.js';
import {loadConversations, saveConversations, getProfile} from './session.js';
import {watchQuestions, questionMessage, renderQuestion, isWaiting} from './questions.js';

const maxRetryWait = 10; // seconds the one automatic retry may wait

let ctx; // {key(), unauthorized(), isAppPath(pathname)}
let data = {current: '', list: []};
let loadedFor = '';
let busy = false;
let asking = null; // while a message is in flight: {conv, ids, stop}
let typingShows = ''; // what the typing line says now
let stepShows = ''; // the chip of the step running now (a tool's «Ищу…»), or ''
let els;

export function initChat(context) {
  ctx = context;
  els = {
    list: $('conversation-list'),
    newConv: $('new-conversation'),
    title: $('thread-title'),
    turns: $('thread-turns'),
    log: $('messages'),
    typing: $('typing'),
    status: $('chat-status'),
    error: $('chat-error'),
    form: $('composer'),
    input: $('message-input'),
    send: $('send'),
    skill: $('skill-badge'),
    skillOff: $('skill-off'),
  };
  // The × on a skill's badge leaves it: a decision like entering.
  els.skillOff.addEventListener('click', () => send({button: 'skill:none'}, t('chat.leaveSkill')));
  els.newConv.addEventListener('click', () => {
    startConversation();
    els.input.focus();
  });
  els.form.addEventListener('submit', (e) => {
    e.preventDefault();
    const text = els.input.value;
    if (text.trim() === '' || busy || !fits(text, true)) return;
    els.input.value = '';
    send({text}, text);
  });
  els.input.addEventListener('input', () => fits(els.input.value, false));
  els.input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      els.form.requestSubmit();
    }
  });
  // Some input methods deliver Enter's character apart from its keydown;
  // it must not leave a new line in the emptied box.
  els.input.addEventListener('keypress', (e) => {
    if (e.key === 'Enter' && !e.shiftKey) e.preventDefault();
  });
}

// conversationIDs lists this key's conversations, newest first.
export function conversationIDs() {
  ensureLoaded();
  return data.list.map((c) => c.id);
}

// showChat renders the view for the current key.
export function showChat() {
  ensureLoaded();
  if (!current()) startConversation();
  renderList();
  renderThread();
}

// forget drops what was loaded, on sign-out.
export function forgetChat() {
  if (asking) {
    asking.stop();
    asking = null;
  }
  data = {current: '', list: []};
  loadedFor = '';
  replaceLog([]);
  renderList();
  clearNotices();
}

export function focusComposer() {
  els.input.focus();
}

function ensureLoaded() {
  const key = ctx.key();
  if (loadedFor !== key) {
    data = loadConversations(key);
    loadedFor = key;
    // No turn of this page waits on a question kept from before: the
    // request that ran it is gone.
    for (const c of data.list) {
      for (const m of c.messages) {
        if (m.role === 'question' && isWaiting(m)) {
          m.state = 'closed';
          m.closed = 'gone';
        }
      }
    }
  }
}

function save() {
  if (loadedFor) saveConversations(loadedFor, data);
}

function current() {
  return data.list.find((c) => c.id === data.current);
}

function startConversation() {
  const conv = {id: randomID('web'), title: '', updated: Date.now(), messages: []};
  data.list.unshift(conv);
  data.current = conv.id;
  save();
  renderList();
  renderThread();
  return conv;
}

function selectConversation(id) {
  if (data.current === id) return;
  data.current = id;
  save();
  clearNotices();
  renderList();
  renderThread();
}

function conversationTitle(c) {
  return c.title || t('chat.newConversation');
}

function renderList() {
  const items = data.list.map((c) => {
    const selected = c.id === data.current;
    return h('li', null,
      h('button', {
        type: 'button',
        class: 'conversation',
        'aria-current': selected ? 'true' : undefined,
        dataset: {conversation: c.id},
        onclick: () => {
          selectConversation(c.id);
          els.input.focus();
        },
      },
      h('span', {class: 'conversation-title'}, conversationTitle(c)),
      h('span', {class: 'conversation-id'}, c.id)));
  });
  els.list.replaceChildren(...items);
}

function renderThread() {
  const conv = current();
  if (!conv) return;
  setText(els.title, conversationTitle(conv));
  els.turns.setAttribute('href', '/turns?conversation_id=' + encodeURIComponent(conv.id));
  replaceLog(conv.messages.map(renderMessage));
  renderSkill(conv);
}

// renderSkill shows the chat's active skill over the message box, with a
// × that leaves it; none, no badge.
function renderSkill(conv) {
  const skill = conv && conv.skill;
  els.skill.hidden = !skill;
  setText(els.skill.querySelector('.skill-name'), skill ? t('chat.skill', {name: skill.label || skill.id}) : '');
}

// replaceLog swaps in a new log element: a live region announces changes
// made after it is in the page, so switching conversations does not read
// the whole history aloud, while each new message is announced.
function replaceLog(children) {
  const log = els.log.cloneNode(false);
  log.append(...children);
  els.log.replaceWith(log);
  els.log = log;
  scrollToEnd();
}

function scrollToEnd() {
  els.log.scrollTop = els.log.scrollHeight;
}

function append(conv, msg) {
  conv.messages.push(msg);
  conv.updated = Date.now();
  if (!conv.title && msg.role === 'user' && msg.text) {
    conv.title = msg.text.length > 48 ? msg.text.slice(0, 47) + '…' : msg.text;
  }
  save();
  if (conv.id === data.current) {
    els.log.append(renderMessage(msg));
    scrollToEnd();
    setText(els.title, conversationTitle(conv));
  }
  renderList();
}

// update re-renders one message in place (delivery state, used buttons)
// and returns the new element, if it is on screen.
function update(conv, msg) {
  save();
  if (conv.id !== data.current) return null;
  const old = els.log.querySelector('[data-message="' + CSS.escape(msg.id) + '"]');
  if (!old) return null;
  const el = renderMessage(msg);
  old.replaceWith(el);
  return el;
}

function renderMessage(m) {
  if (m.role === 'question') return renderQuestion(m, questionHandlers);
  if (m.role === 'user') {
    return h('div', {class: 'message user' + (m.failed ? ' failed' : ''), dataset: {message: m.id}},
      h('p', {class: 'meta'}, h('span', {class: 'who'}, t('chat.you')), ' ', h('time', {datetime: new Date(m.at).toISOString()}, fmtClock(m.at))),
      h('p', {class: 'text'}, m.text),
      m.failed ? h('p', {class: 'delivery'}, t('chat.notDelivered')) : null);
  }
  const confirmButtons = (m.buttons || []).filter((b) => isConfirm(b.value) || isCancel(b.value));
  const chips = (m.buttons || []).filter((b) => !isConfirm(b.value) && !isCancel(b.value));
  return h('div', {class: 'message assistant', dataset: {message: m.id, turn: m.turnId || ''}},
    h('p', {class: 'meta'},
      h('span', {class: 'who'}, t('chat.assistant')), ' ',
      h('time', {datetime: new Date(m.at).toISOString()}, fmtClock(m.at)),
      m.duplicate ? h('span', {class: 'badge'}, t('chat.repeated')) : null,
      m.final ? h('span', {class: 'badge final'}, m.final.confidence === null ? t('chat.result') : t('chat.resultConfidence', {percent: Math.round(m.final.confidence * 100)})) : null),
    h('p', {class: 'text'}, richText(m.text || '', ctx.isAppPath)),
    m.executed && m.executed.length ? renderExecuted(m.executed) : null,
    m.pending || confirmButtons.length ? renderPending(m, confirmButtons) : null,
    chips.length ? h('div', {class: 'chips', role: 'group', 'aria-label': t('chat.suggested')},
      chips.map((b) => h('button', {
        type: 'button',
        class: 'chip',
        disabled: m.used,
        dataset: {value: b.value},
        onclick: () => press(m, b.value, b.label || b.value),
      }, labelNodes(b.label || b.value)))) : null,
    m.turnId ? h('p', {class: 'trace-link'},
      h('a', {href: '/turns/' + encodeURIComponent(m.turnId)}, t('chat.trace'), vh(t('chat.traceHidden')))) : null);
}

// finalOf keeps an interview's result mark: the model's confidence, or
// null when it gave none.
function finalOf(reply) {
  const f = reply.final;
  if (!f || typeof f !== 'object') return null;
  const c = f.confidence_score;
  return {confidence: typeof c === 'number' && c >= 0 && c <= 1 ? c : null};
}

function isConfirm(v) {
  return typeof v === 'string' && v.startsWith('confirm:');
}

function isCancel(v) {
  return typeof v === 'string' && v.startsWith('cancel:');
}

function renderExecuted(list) {
  return h('ul', {class: 'executed', 'aria-label': t('chat.actionsRun')},
    list.map((x) => h('li', {class: 'execution status-' + String(x.status || '').replace(/[^a-z_]/gi, '')},
      h('span', {class: 'tool'}, x.tool || '?'), ' — ', h('span', {class: 'status'}, x.status || ''),
      x.error ? h('p', {class: 'error'}, x.error) : null,
      x.result !== undefined && x.result !== null ? h('details', null, h('summary', null, t('chat.result')), h('pre', {class: 'json'}, pretty(x.result))) : null)));
}

// fits reports whether text, sent as a message of the current
// conversation, is within the server's body limit (GET /v1/me's
// max_body_bytes), counted as the server counts it: bytes of the JSON
// body in UTF-8. Over it, the box is marked invalid and the error says by
// how much — on send (loud) or while typing; the text stays in the box.
function fits(text, onSend) {
  const p = getProfile();
  const limit = p && Number(p.max_body_bytes) > 0 ? Number(p.max_body_bytes) : 0;
  if (!limit) return true;
  // Before the first message there is no conversation yet: an id of the
  // length a new one gets stands in for it.
  const conv = current();
  const body = JSON.stringify({conversation_id: conv ? conv.id : randomID('web'), message_id: randomID('m'), text});
  const bytes = new TextEncoder().encode(body).length;
  const over = bytes > limit;
  const was = els.input.getAttribute('aria-invalid') === 'true';
  els.input.setAttribute('aria-invalid', over ? 'true' : 'false');
  if (over && (onSend || !was)) {
    showError(t('chat.tooLong', {bytes: fmtNumber(bytes), limit: fmtNumber(limit)}));
  } else if (!over && was) {
    clearNotices();
  }
  return !over;
}

// labelNodes is a button's label with its words first and the emoji that
// begin or end it after them, as decoration screen readers skip: where no
// emoji font is installed the box it becomes follows "Yes", it does not
// stand in front of it.
const emojiRun = /^[\p{Extended_Pictographic}\p{Regional_Indicator}\uFE0F\u200D\u20E3\s]+|[\p{Extended_Pictographic}\p{Regional_Indicator}\uFE0F\u200D\u20E3\s]+$/gu;

function labelNodes(label) {
  const emoji = [];
  const words = label.replace(emojiRun, (run) => {
    if (run.trim()) emoji.push(run.trim());
    return ' ';
  }).trim();
  if (!words || emoji.length === 0) return [label];
  return [h('span', {class: 'label-text'}, words), ' ', h('span', {class: 'label-emoji', 'aria-hidden': 'true'}, emoji.join(' '))];
}

// renderPending shows an action that waits for the user's yes. The
// server's text above already says what it is; here are its expiry, the
// server's own confirm and cancel buttons with the server's labels, and
// the raw arguments behind a toggle for who wants to check them.
function renderPending(m, buttons) {
  const p = m.pending;
  return h('div', {class: 'pending', role: 'group', 'aria-label': t('chat.confirmation')},
    p && p.expires_at ? h('p', {class: 'help expires'}, t('chat.expires', {time: fmtZoned(p.expires_at)})) : null,
    buttons.length ? h('div', {class: 'confirm-buttons'}, buttons.map((b) => h('button', {
      type: 'button',
      class: isConfirm(b.value) ? 'yes' : 'no',
      disabled: m.used,
      dataset: {value: b.value},
      onclick: () => press(m, b.value, b.label || b.value),
    }, labelNodes(b.label || b.value)))) : null,
    p && p.args !== undefined && p.args !== null ? h('details', {class: 'pending-details'},
      h('summary', null, t('chat.details')),
      p.tool ? h('p', {class: 'help'}, t('chat.tool', {tool: p.tool})) : null,
      h('pre', {class: 'json'}, pretty(p.args))) : null);
}

// press sends a reply button's value in one click.
function press(m, value, label) {
  send({button: value}, label, m);
}

// send posts one new message (text or button) to the current conversation.
async function send(payload, shown, from) {
  if (busy) return;
  const conv = current();
  if (!conv) return;
  const refocus = from && document.activeElement && document.activeElement.closest && document.activeElement.closest('.message');
  if (from) {
    from.used = true;
    update(conv, from);
  }
  if (refocus) els.input.focus();
  const body = Object.assign({conversation_id: conv.id, message_id: randomID('m')}, payload);
  const msg = {id: body.message_id, role: 'user', text: shown, at: Date.now()};
  append(conv, msg);
  const ok = await deliver(conv, msg, body);
  if (!ok && from) {
    from.used = false;
    update(conv, from);
  }
  // A pressed button sat in the log; the message box is where the
  // conversation goes on, so it must be on screen.
  if (from && conv.id === data.current) els.form.scrollIntoView({block: 'nearest'});
}

// httpStatus names the status of a failed call, when there was one.
function httpStatus(e) {
  return e instanceof ApiError && e.status ? ' (HTTP ' + e.status + ')' : '';
}

// deliver posts body; on 503 it waits and retries once with the same
// message_id, which the server processes at most once.
async function deliver(conv, msg, body) {
  busy = true;
  clearNotices();
  setBusy(true);
  startAsking(conv);
  try {
    let reply;
    try {
      reply = await postStreamed(conv, body);
    } catch (e) {
      if (!(e instanceof ApiError) || e.status !== 503) throw e;
      const wait = Math.min(maxRetryWait, Math.max(1, Math.ceil(e.retryAfter || 1)));
      setText(els.status, t('chat.busyRetryIn', {seconds: wait}));
      await sleep(wait * 1000);
      setText(els.status, t('chat.busyRetry'));
      reply = await call(ctx.key(), 'POST', '/v1/messages', body);
    }
    setText(els.status, '');
    if (msg.failed) {
      msg.failed = false;
      update(conv, msg);
    }
    append(conv, {
      id: randomID('r'),
      role: 'assistant',
      at: Date.now(),
      turnId: typeof reply.turn_id === 'string' ? reply.turn_id : '',
      text: typeof reply.say === 'string' ? reply.say : '',
      buttons: Array.isArray(reply.buttons) ? reply.buttons.filter((b) => b && typeof b.value === 'string') : [],
      pending: reply.pending && typeof reply.pending === 'object' ? reply.pending : null,
      executed: Array.isArray(reply.executed) ? reply.executed : [],
      duplicate: reply.duplicate === true,
      final: finalOf(reply),
    });
    conv.skill = typeof reply.skill === 'string' && reply.skill ? {id: reply.skill, label: typeof reply.skill_label === 'string' ? reply.skill_label : ''} : null;
    save();
    if (conv.id === data.current) renderSkill(conv);
    return true;
  } catch (e) {
    setText(els.status, '');
    msg.failed = true;
    update(conv, msg);
    if (e instanceof ApiError && e.status === 401) {
      ctx.unauthorized();
      return false;
    }
    if (e instanceof ApiError && e.status === 503) {
      showError(t('chat.stillBusy'), conv, msg, body);
    } else if (e instanceof ApiError && e.status === 0) {
      showError(e.message, conv, msg, body);
    } else {
      showError(t('chat.refused', {message: e.message + httpStatus(e)}));
    }
    return false;
  } finally {
    stopAsking();
    busy = false;
    setBusy(false);
  }
}

// postStreamed posts body as a stream: the reply's text shows in a draft
// as it is written and the running step's chip in the typing line; the
// reply replaces them. When the stream is cut, the JSON reply of the same
// message_id is asked for instead (the server runs a message once).
async function postStreamed(conv, body) {
  let draft = null;
  const onEvent = (name, ev) => {
    if (name === 'text' && typeof ev.text === 'string' && ev.text) {
      if (!draft) draft = startDraft(conv);
      draft.add(ev.text);
    } else if (name === 'progress' && typeof ev.text === 'string') {
      showStep(ev.done === true ? '' : ev.text);
    }
  };
  try {
    return await stream(ctx.key(), '/v1/messages', body, onEvent);
  } catch (e) {
    if (!(e instanceof StreamCut)) throw e;
    return await call(ctx.key(), 'POST', '/v1/messages', body);
  } finally {
    if (draft) draft.remove();
    showStep('');
  }
}

// startDraft shows the reply being written, below the log's last message;
// it is hidden from screen readers, which read the reply once it is whole.
function startDraft(conv) {
  const text = h('p', {class: 'text'});
  const el = h('div', {class: 'message assistant draft', 'aria-hidden': 'true'},
    h('p', {class: 'meta'}, h('span', {class: 'who'}, t('chat.assistant'))), text);
  let shown = '';
  if (conv.id === data.current) {
    els.log.append(el);
    scrollToEnd();
  }
  return {
    add(piece) {
      shown += piece;
      setText(text, shown);
      if (el.isConnected) scrollToEnd();
    },
    remove() {
      el.remove();
    },
  };
}

// showStep puts the running step's chip in the typing line ('' clears it).
function showStep(text) {
  stepShows = text;
  showTyping();
}

function setBusy(on) {
  els.send.disabled = on;
  els.form.setAttribute('aria-busy', on ? 'true' : 'false');
  showTyping();
}

// showTyping says what the assistant is doing while a message is in
// flight: typing, or waiting for the answer to a question. The line is a
// live region, so it is rewritten only when its text changes.
function showTyping() {
  let says = '';
  if (busy) {
    const waiting = asking && asking.conv.messages.find((m) => m.role === 'question' && asking.ids.has(m.qid) && isWaiting(m));
    if (!waiting) {
      says = stepShows ? 'step:' + stepShows : 'typing';
    } else if (asking.conv.id === data.current) {
      says = t('chat.waiting');
    } else {
      says = t('chat.waitingIn', {title: conversationTitle(asking.conv)});
    }
  }
  if (says === typingShows) return;
  typingShows = says;
  if (says === 'typing') {
    els.typing.replaceChildren(
      h('span', {class: 'dots', 'aria-hidden': 'true'}, h('span'), h('span'), h('span')),
      ' ' + t('chat.typing'));
  } else if (says.startsWith('step:')) {
    els.typing.replaceChildren(h('span', {class: 'step-chip'}, says.slice('step:'.length)));
  } else {
    setText(els.typing, says);
  }
  els.typing.classList.toggle('active', says !== '');
}

// startAsking polls the questions of the turn that conv's message runs.
function startAsking(conv) {
  stopAsking();
  const ids = new Set();
  const stop = watchQuestions(ctx.key, conv.id,
    (list) => showQuestions(conv, ids, list),
    () => ctx.unauthorized());
  asking = {conv, ids, stop};
}

// stopAsking ends the polling when the reply has come: the turn is over,
// so what it asked and was not answered has closed.
function stopAsking() {
  if (!asking) return;
  const {conv, ids, stop} = asking;
  asking = null;
  stop();
  for (const id of ids) {
    const m = findQuestion(conv, id);
    if (m && m.state === 'open') closeQuestion(conv, m, 'gone');
  }
}

function findQuestion(conv, qid) {
  return conv.messages.find((m) => m.role === 'question' && m.qid === qid);
}

function conversationOf(m) {
  return data.list.find((c) => c.messages.includes(m));
}

// showQuestions takes one poll's list: a new question gets a card, and a
// card whose question left the list unanswered (its wait ran out, or it
// was answered elsewhere) shows it has closed.
function showQuestions(conv, ids, list) {
  if (!asking || asking.ids !== ids) return;
  const listed = new Set();
  let first = null;
  for (const q of list) {
    listed.add(q.id);
    if (ids.has(q.id)) continue;
    ids.add(q.id);
    if (findQuestion(conv, q.id)) continue;
    const m = questionMessage(q);
    append(conv, m);
    first = first || m;
  }
  for (const id of ids) {
    const m = findQuestion(conv, id);
    if (m && m.state === 'open' && !listed.has(id)) closeQuestion(conv, m, 'gone');
  }
  showTyping();
  if (first && conv.id === data.current && focusIsFree()) {
    const card = els.log.querySelector('[data-message="' + CSS.escape(first.id) + '"]');
    // The card, not its first button: a key pressed for something else
    // must not answer the question.
    if (card) card.focus();
  }
}

// focusIsFree tells whether a new question may take the focus: nobody is
// typing a message, and focus is not in a question still open.
function focusIsFree() {
  const a = document.activeElement;
  if (!a || a === document.body || a === els.send || a === els.log) return true;
  if (a === els.input) return els.input.value.trim() === '';
  const card = a.closest && a.closest('.message.question');
  return Boolean(card && !card.querySelector('button:not(:disabled), input:not(:disabled)'));
}

function closeQuestion(conv, m, how) {
  m.state = 'closed';
  m.closed = how;
  m.error = '';
  redrawQuestion(conv, m);
}

// redrawQuestion re-renders a card; focus that was in it stays in it: on
// the answer box when the typed answer needs fixing, else on the card.
function redrawQuestion(conv, m) {
  const old = els.log.querySelector('[data-message="' + CSS.escape(m.id) + '"]');
  const hadFocus = Boolean(old && old.contains(document.activeElement));
  const el = update(conv, m);
  if (!el || !hadFocus) return;
  const input = m.state === 'open' && m.errorOn === 'text' ? el.querySelector('input') : null;
  el.scrollIntoView({block: 'nearest'}); // the whole card, with its error or outcome
  (input || el).focus({preventScroll: true});
}

const questionHandlers = {
  choose: (m, choice) => answerQuestion(m, {choice: choice.value}, choice.label),
  type: (m, text) => {
    m.draft = text;
    answerQuestion(m, {text}, text.trim());
  },
  draft: (m, text) => {
    m.draft = text;
  },
};

// answerQuestion posts an answer: 200 shows it, 404 says the question had
// closed, 400 and failures to reach the server leave it answerable.
async function answerQuestion(m, payload, shown) {
  const conv = conversationOf(m);
  if (!conv || m.state !== 'open') return;
  if (payload.text !== undefined && payload.text.trim() === '') {
    m.error = t('chat.typeFirst');
    m.errorOn = 'text';
    redrawQuestion(conv, m);
    return;
  }
  m.state = 'sending';
  m.error = '';
  m.errorOn = '';
  redrawQuestion(conv, m);
  showTyping();
  try {
    await call(ctx.key(), 'POST', '/v1/questions/' + encodeURIComponent(m.qid), payload);
    m.state = 'answered';
    m.answer = shown;
    m.draft = '';
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) {
      ctx.unauthorized();
      return;
    }
    if (e instanceof ApiError && e.status === 404) {
      m.state = 'closed';
      m.closed = 'late';
    } else if (!asking || !asking.ids.has(m.qid)) {
      m.state = 'closed'; // the turn is over while the answer failed
      m.closed = 'gone';
    } else {
      m.state = 'open';
      m.errorOn = payload.text !== undefined ? 'text' : 'choice';
      m.error = e instanceof ApiError && e.status === 400
        ? t('chat.answerRefused', {message: e.message})
        : t('chat.answerFailed', {message: e.message + httpStatus(e)});
    }
  }
  redrawQuestion(conv, m);
  showTyping();
}

// showError states what went wrong; with a message to resend it offers to
// send it again under the same message_id.
function showError(text, conv, msg, body) {
  const parts = [h('p', null, text)];
  if (body) {
    parts.push(h('button', {
      type: 'button',
      class: 'secondary',
      onclick: () => {
        if (!busy) deliver(conv, msg, body);
      },
    }, t('chat.sendAgain')));
  }
  els.error.replaceChildren(...parts);
}

function clearNotices() {
  setText(els.status, '');
  els.error.replaceChildren();
}
