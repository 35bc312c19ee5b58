// The app's entry: sign-in, the user's language, client-side routing
// between the chat (/), the list of turns (/turns), a turn's trace
// (/turns/{id}), the board (/board) and a card (/board/c/{id}), and focus
// management on every change of view.

import {whoAmI, ApiError} from './api.js';
import {$, setText} from './dom.js';
import {t, setLocale, translatePage, browserLanguage, languageOf, language, timeZone} from './i18n.js';
import {getKey, setKey, clearKey, getProfile, setProfile} from './session.js';
import {initChat, showChat, forgetChat, focusComposer, conversationIDs} from './chat.js';
import {initTurns, showTurns} from './turns.js';
import {initTrace, showTrace} from './trace.js';
import {initBoard, showBoard, showCard} from './board.js';

const views = ['login', 'chat', 'turns', 'trace', 'board', 'card'];

// pages are the views over the configured tools' data this server has
// (the board); the others are neither routed nor in the navigation.
const pages = new Set((document.documentElement.dataset.pages || '').split(' ').filter(Boolean));

// navOf is the nav link a view belongs under.
const navOf = {chat: 'chat', turns: 'turns', trace: 'turns', board: 'board', card: 'board'};

function decoded(s) {
  try {
    return decodeURIComponent(s);
  } catch {
    return null;
  }
}

function route(pathname) {
  if (pathname === '/' || pathname === '') return {view: 'chat'};
  if (pathname === '/turns' || pathname === '/turns/') return {view: 'turns'};
  let m = /^\/turns\/([^/]+)$/.exec(pathname);
  if (m) {
    const id = decoded(m[1]);
    return id === null ? null : {view: 'trace', id};
  }
  if (!pages.has('board')) return null;
  if (pathname === '/board' || pathname === '/board/') return {view: 'board'};
  m = /^\/board\/c\/([^/]+)$/.exec(pathname);
  if (m) {
    const id = decoded(m[1]);
    return id === null ? null : {view: 'card', id};
  }
  return null;
}

function showView(name) {
  for (const v of views) $('view-' + v).hidden = v !== name;
  // The chat fits the screen and scrolls only its log; the other views
  // scroll with the page.
  document.documentElement.dataset.view = name;
  const signedIn = name !== 'login';
  $('main-nav').hidden = !signedIn;
  $('logout').hidden = !signedIn;
  for (const a of document.querySelectorAll('#main-nav a')) {
    if (a.dataset.page) a.hidden = !pages.has(a.dataset.page);
    if (a.dataset.nav === navOf[name]) {
      a.setAttribute('aria-current', 'page');
    } else {
      a.removeAttribute('aria-current');
    }
  }
}

// render shows the view of the current address. focus says where focus
// goes: 'heading' after a navigation, 'auto' on first load, 'keep' when
// the view is only redrawn.
function render(focus) {
  const r = route(location.pathname);
  if (!getKey()) {
    showLogin('');
    return;
  }
  if (!r) {
    history.replaceState(null, '', '/');
    render(focus);
    return;
  }
  showView(r.view);
  if (r.view === 'chat') {
    document.title = t('title.chat');
    showChat();
    if (focus !== 'keep') focusComposer();
  } else if (r.view === 'turns') {
    document.title = t('title.turns');
    showTurns(location.search);
    if (focus === 'heading') $('turns-title').focus();
  } else if (r.view === 'trace') {
    document.title = t('title.trace', {id: r.id});
    showTrace(r.id);
    if (focus !== 'keep') $('trace-title').focus();
  } else if (r.view === 'board') {
    document.title = t('title.board');
    showBoard();
    if (focus !== 'keep') $('board-title').focus();
  } else {
    document.title = t('title.card', {id: r.id});
    showCard(r.id);
    if (focus !== 'keep') $('card-title').focus();
  }
}

function navigate(path, opts) {
  if (path !== location.pathname + location.search) history.pushState(null, '', path);
  render(opts && opts.keepFocus ? 'keep' : 'heading');
}

// speak switches the page to the user's language and zone: the stored
// user's while signed in, the browser's language before. It reports
// whether anything changed.
function speak() {
  const before = language() + ' ' + timeZone();
  const p = getKey() ? getProfile() : null;
  setLocale(p && p.language ? languageOf(p.language) : browserLanguage(), p ? p.timezone : '');
  translatePage();
  return language() + ' ' + timeZone() !== before;
}

// showLogin shows the sign-in form; messageKey names the text to show.
function showLogin(messageKey) {
  speak();
  showView('login');
  document.title = t('title.login');
  setText($('login-error'), messageKey ? t(messageKey) : '');
  const input = $('login-key');
  input.value = '';
  input.setAttribute('aria-invalid', messageKey ? 'true' : 'false');
  input.focus();
}

// unauthorized drops the key the server refused and asks for a new one;
// the address stays, so signing in again returns to the same view.
function unauthorized() {
  clearKey();
  forgetChat();
  showLogin('auth.again');
}

function profileOf(me) {
  return {language: me.language, timezone: me.timezone, name: me.name, max_body_bytes: me.max_body_bytes};
}

async function login(e) {
  e.preventDefault();
  const input = $('login-key');
  const button = $('login-submit');
  const key = input.value.trim();
  if (!key) {
    setText($('login-error'), t('login.empty'));
    input.setAttribute('aria-invalid', 'true');
    input.focus();
    return;
  }
  button.disabled = true;
  setText($('login-error'), '');
  let me;
  try {
    me = await whoAmI(key);
  } catch (err) {
    button.disabled = false;
    const msg = err instanceof ApiError && err.status === 401
      ? t('login.refused')
      : t('login.failed', {message: err && err.message ? err.message : String(err)});
    setText($('login-error'), msg);
    input.value = '';
    input.setAttribute('aria-invalid', 'true');
    input.focus();
    return;
  }
  button.disabled = false;
  input.value = '';
  input.setAttribute('aria-invalid', 'false');
  setKey(key);
  setProfile(profileOf(me));
  speak();
  render('auto');
}

// refreshProfile asks the server again on a page load with a kept key: the
// user's language may have changed, or the key been revoked.
async function refreshProfile() {
  const key = getKey();
  let me;
  try {
    me = await whoAmI(key);
  } catch (err) {
    if (err instanceof ApiError && err.status === 401 && getKey() === key) unauthorized();
    return; // anything else: keep what is known
  }
  if (getKey() !== key) return;
  setProfile(profileOf(me));
  if (speak()) render('keep');
}

function logout() {
  clearKey();
  forgetChat();
  showLogin('');
}

// Links within the app change the view without a page load.
function onClick(e) {
  if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const a = e.target instanceof Element ? e.target.closest('a[href]') : null;
  if (!a || a.target || a.hasAttribute('download')) return;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin || !route(url.pathname)) return;
  e.preventDefault();
  navigate(url.pathname + url.search);
}

function start() {
  speak();
  const context = {
    key: getKey,
    unauthorized,
    navigate,
    conversations: conversationIDs,
    isAppPath: (pathname) => route(pathname) !== null,
  };
  initChat(context);
  initTurns(context);
  initTrace(context);
  initBoard(context);
  $('login-form').addEventListener('submit', login);
  $('logout').addEventListener('click', logout);
  document.addEventListener('click', onClick);
  window.addEventListener('popstate', () => render('heading'));
  render('auto');
  if (getKey()) refreshProfile();
}

start();
