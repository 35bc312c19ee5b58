// The chat view: the conversations of this tab, the message log and the
// composer. A message goes to POST /v1/messages with an id made here, so a
// retry after a 503 is the same message to the server and runs at most once.

import {call, ApiError} from './api.js';
import {$, h, vh, pretty, setText, fmtClock, fmtTime, randomID, sleep} from './dom.js';
import {loadConversations, saveConversations} from './session.js';

const maxRetryWait = 10; // seconds the one automatic retry may wait

let ctx; // {key(), unauthorized(message), route()}
let data = {current: '', list: []};
let loadedFor = '';
let busy = false;
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
  };
  els.newConv.addEventListener('click', () => {
    startConversation();
    els.input.focus();
  });
  els.form.addEventListener('submit', (e) => {
    e.preventDefault();
    const text = els.input.value;
    if (text.trim() === '' || busy) return;
    els.input.value = '';
    send({text}, text);
  });
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
  return c.title || 'New conversation';
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

// update re-renders one message in place (delivery state, used buttons).
function update(conv, msg) {
  save();
  if (conv.id !== data.current) return;
  const old = els.log.querySelector('[data-message="' + CSS.escape(msg.id) + '"]');
  if (old) old.replaceWith(renderMessage(msg));
}

function renderMessage(m) {
  if (m.role === 'user') {
    return h('div', {class: 'message user' + (m.failed ? ' failed' : ''), dataset: {message: m.id}},
      h('p', {class: 'meta'}, h('span', {class: 'who'}, 'You'), ' ', h('time', {datetime: new Date(m.at).toISOString()}, fmtClock(m.at))),
      h('p', {class: 'text'}, m.text),
      m.failed ? h('p', {class: 'delivery'}, 'Not delivered.') : null);
  }
  const confirmButtons = (m.buttons || []).filter((b) => isConfirm(b.value) || isCancel(b.value));
  const chips = (m.buttons || []).filter((b) => !isConfirm(b.value) && !isCancel(b.value));
  return h('div', {class: 'message assistant', dataset: {message: m.id, turn: m.turnId || ''}},
    h('p', {class: 'meta'},
      h('span', {class: 'who'}, 'Assistant'), ' ',
      h('time', {datetime: new Date(m.at).toISOString()}, fmtClock(m.at)),
      m.duplicate ? h('span', {class: 'badge'}, 'repeated reply') : null),
    h('p', {class: 'text'}, m.text || ''),
    m.executed && m.executed.length ? renderExecuted(m.executed) : null,
    m.pending || confirmButtons.length ? renderPending(m, confirmButtons) : null,
    chips.length ? h('div', {class: 'chips', role: 'group', 'aria-label': 'Suggested replies'},
      chips.map((b) => h('button', {
        type: 'button',
        class: 'chip',
        disabled: m.used,
        dataset: {value: b.value},
        onclick: () => press(m, b.value, b.label || b.value),
      }, b.label || b.value))) : null,
    m.turnId ? h('p', {class: 'trace-link'},
      h('a', {href: '/turns/' + encodeURIComponent(m.turnId)}, 'Trace', vh(' of this reply'))) : null);
}

function isConfirm(v) {
  return typeof v === 'string' && v.startsWith('confirm:');
}

function isCancel(v) {
  return typeof v === 'string' && v.startsWith('cancel:');
}

function renderExecuted(list) {
  return h('ul', {class: 'executed', 'aria-label': 'Actions run'},
    list.map((x) => h('li', {class: 'execution status-' + String(x.status || '').replace(/[^a-z_]/gi, '')},
      h('span', {class: 'tool'}, x.tool || '?'), ' — ', h('span', {class: 'status'}, x.status || ''),
      x.error ? h('p', {class: 'error'}, x.error) : null,
      x.result !== undefined && x.result !== null ? h('details', null, h('summary', null, 'Result'), h('pre', {class: 'json'}, pretty(x.result))) : null)));
}

// renderPending shows an action that waits for the user's yes, with the
// server's own confirm/cancel buttons as Да and Нет.
function renderPending(m, buttons) {
  const p = m.pending;
  const yes = buttons.find((b) => isConfirm(b.value));
  const no = buttons.find((b) => isCancel(b.value));
  const tool = p && p.tool ? p.tool : 'the action';
  return h('div', {class: 'pending', role: 'group', 'aria-label': 'Confirmation for ' + tool},
    h('p', {class: 'pending-title'}, 'Waiting for your confirmation: ', h('strong', null, tool)),
    p && p.args !== undefined ? h('pre', {class: 'json'}, pretty(p.args)) : null,
    p && p.expires_at ? h('p', {class: 'help'}, 'Expires ' + fmtTime(p.expires_at)) : null,
    h('div', {class: 'confirm-buttons'},
      h('button', {
        type: 'button', class: 'yes', lang: 'ru', disabled: m.used,
        'aria-label': 'Да — confirm ' + tool,
        onclick: () => yes ? press(m, yes.value, 'Да') : send({text: 'да'}, 'Да', m),
      }, 'Да'),
      h('button', {
        type: 'button', class: 'no', lang: 'ru', disabled: m.used,
        'aria-label': 'Нет — cancel ' + tool,
        onclick: () => no ? press(m, no.value, 'Нет') : send({text: 'нет'}, 'Нет', m),
      }, 'Нет')));
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
}

// deliver posts body; on 503 it waits and retries once with the same
// message_id, which the server processes at most once.
async function deliver(conv, msg, body) {
  busy = true;
  clearNotices();
  setBusy(true);
  try {
    let reply;
    try {
      reply = await call(ctx.key(), 'POST', '/v1/messages', body);
    } catch (e) {
      if (!(e instanceof ApiError) || e.status !== 503) throw e;
      const wait = Math.min(maxRetryWait, Math.max(1, Math.ceil(e.retryAfter || 1)));
      setText(els.status, 'The assistant is busy, retrying in ' + wait + ' s…');
      await sleep(wait * 1000);
      setText(els.status, 'The assistant is busy, retrying…');
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
    });
    return true;
  } catch (e) {
    setText(els.status, '');
    msg.failed = true;
    update(conv, msg);
    if (e instanceof ApiError && e.status === 401) {
      ctx.unauthorized('The server did not accept the API key. Sign in again.');
      return false;
    }
    if (e instanceof ApiError && e.status === 503) {
      showError('The assistant is still busy; the message was not processed.', conv, msg, body);
    } else if (e instanceof ApiError && e.status === 0) {
      showError(e.message, conv, msg, body);
    } else {
      showError('The message was refused: ' + e.message + (e.status ? ' (HTTP ' + e.status + ')' : ''));
    }
    return false;
  } finally {
    busy = false;
    setBusy(false);
  }
}

function setBusy(on) {
  els.send.disabled = on;
  els.form.setAttribute('aria-busy', on ? 'true' : 'false');
  if (on) {
    els.typing.replaceChildren(
      h('span', {class: 'dots', 'aria-hidden': 'true'}, h('span'), h('span'), h('span')),
      ' Assistant is typing…');
    els.typing.classList.add('active');
  } else {
    els.typing.replaceChildren();
    els.typing.classList.remove('active');
  }
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
    }, 'Send again'));
  }
  els.error.replaceChildren(...parts);
}

function clearNotices() {
  setText(els.status, '');
  els.error.replaceChildren();
}
