// The app's entry: sign-in, client-side routing between the chat (/), the
// list of turns (/turns) and a turn's trace (/turns/{id}), and focus
// management on every change of view.

import {checkKey, ApiError} from './api.js';
import {$, setText} from './dom.js';
import {getKey, setKey, clearKey} from './session.js';
import {initChat, showChat, forgetChat, focusComposer, conversationIDs} from './chat.js';
import {initTurns, showTurns} from './turns.js';
import {initTrace, showTrace} from './trace.js';

const views = ['login', 'chat', 'turns', 'trace'];

function route(pathname) {
  if (pathname === '/' || pathname === '') return {view: 'chat'};
  if (pathname === '/turns' || pathname === '/turns/') return {view: 'turns'};
  const m = /^\/turns\/([^/]+)$/.exec(pathname);
  if (m) {
    let id;
    try {
      id = decodeURIComponent(m[1]);
    } catch {
      return null;
    }
    return {view: 'trace', id};
  }
  return null;
}

function showView(name) {
  for (const v of views) $('view-' + v).hidden = v !== name;
  const signedIn = name !== 'login';
  $('main-nav').hidden = !signedIn;
  $('logout').hidden = !signedIn;
  for (const a of document.querySelectorAll('#main-nav a')) {
    if (a.dataset.nav === name || (name === 'trace' && a.dataset.nav === 'turns')) {
      a.setAttribute('aria-current', 'page');
    } else {
      a.removeAttribute('aria-current');
    }
  }
}

// render shows the view of the current address. focus says where focus
// goes: 'heading' after a navigation, 'auto' on first load.
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
    document.title = 'Chat — arbiter';
    showChat();
    if (focus !== 'keep') focusComposer();
  } else if (r.view === 'turns') {
    document.title = 'Turns — arbiter';
    showTurns(location.search);
    if (focus === 'heading') $('turns-title').focus();
  } else {
    document.title = 'Turn ' + r.id + ' — arbiter';
    showTrace(r.id);
    if (focus !== 'keep') $('trace-title').focus();
  }
}

function navigate(path, opts) {
  if (path !== location.pathname + location.search) history.pushState(null, '', path);
  render(opts && opts.keepFocus ? 'keep' : 'heading');
}

function showLogin(message) {
  showView('login');
  document.title = 'Sign in — arbiter';
  setText($('login-error'), message);
  const input = $('login-key');
  input.value = '';
  input.setAttribute('aria-invalid', message ? 'true' : 'false');
  input.focus();
}

// unauthorized drops the key the server refused and asks for a new one;
// the address stays, so signing in again returns to the same view.
function unauthorized(message) {
  clearKey();
  forgetChat();
  showLogin(message);
}

async function login(e) {
  e.preventDefault();
  const input = $('login-key');
  const button = $('login-submit');
  const key = input.value.trim();
  if (!key) {
    setText($('login-error'), 'Enter your API key.');
    input.setAttribute('aria-invalid', 'true');
    input.focus();
    return;
  }
  button.disabled = true;
  setText($('login-error'), '');
  try {
    await checkKey(key);
  } catch (err) {
    button.disabled = false;
    const msg = err instanceof ApiError && err.status === 401
      ? 'The server did not accept this API key.'
      : 'Could not sign in: ' + (err && err.message ? err.message : err);
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
  render('auto');
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
  const context = {
    key: getKey,
    unauthorized,
    navigate,
    conversations: conversationIDs,
  };
  initChat(context);
  initTurns(context);
  initTrace(context);
  $('login-form').addEventListener('submit', login);
  $('logout').addEventListener('click', logout);
  document.addEventListener('click', onClick);
  window.addEventListener('popstate', () => render('heading'));
  render('auto');
}

start();
