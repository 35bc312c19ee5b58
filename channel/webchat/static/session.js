// What the app keeps in the browser: the API key, what the server said of
// its user (language and time zone, so a reload speaks the same language at
// once) and, per key, the conversations of this tab. Everything is in
// sessionStorage, which lives as long as the tab; nothing goes to
// localStorage or cookies.

const keySlot = 'arbiter.webchat.key';
const profileSlot = 'arbiter.webchat.profile';
const maxMessages = 200; // per conversation
const maxConversations = 50;

// memory stands in when sessionStorage is unavailable (a privacy mode).
const memory = new Map();

function get(name) {
  try {
    return sessionStorage.getItem(name);
  } catch {
    return memory.has(name) ? memory.get(name) : null;
  }
}

function put(name, value) {
  try {
    sessionStorage.setItem(name, value);
  } catch {
    memory.set(name, value);
  }
}

function drop(name) {
  try {
    sessionStorage.removeItem(name);
  } catch {
    // nothing stored there
  }
  memory.delete(name);
}

export function getKey() {
  return get(keySlot) || '';
}

export function setKey(key) {
  put(keySlot, key);
}

export function clearKey() {
  drop(keySlot);
  drop(profileSlot);
}

// getProfile returns what was kept of the key's user: {language, timezone,
// name}, or null.
export function getProfile() {
  const raw = get(profileSlot);
  if (!raw) return null;
  try {
    const v = JSON.parse(raw);
    return v && typeof v === 'object' ? v : null;
  } catch {
    return null;
  }
}

export function setProfile(p) {
  put(profileSlot, JSON.stringify(p));
}

// slot names a key's conversations by a hash, so the key itself is stored
// once.
function slot(key) {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return 'arbiter.webchat.conversations.' + h.toString(16).padStart(8, '0');
}

// loadConversations returns {current, list} for key; list items are
// {id, title, updated, messages}.
export function loadConversations(key) {
  const raw = get(slot(key));
  if (raw) {
    try {
      const v = JSON.parse(raw);
      if (v && Array.isArray(v.list)) {
        v.list = v.list.filter((c) => c && typeof c.id === 'string' && Array.isArray(c.messages));
        return {current: typeof v.current === 'string' ? v.current : '', list: v.list};
      }
    } catch {
      // a broken entry starts afresh
    }
  }
  return {current: '', list: []};
}

export function saveConversations(key, data) {
  data.list.sort((a, b) => (b.updated || 0) - (a.updated || 0));
  data.list.length = Math.min(data.list.length, maxConversations);
  for (const c of data.list) {
    if (c.messages.length > maxMessages) c.messages.splice(0, c.messages.length - maxMessages);
  }
  put(slot(key), JSON.stringify(data));
}
