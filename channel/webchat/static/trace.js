// One turn's trace, from GET /v1/turns/{id}: the pipeline as a timeline
// scaled to the turn, the lock wait, live-context sources, every model call
// and what the policy did with it, the decision, its repair, the vetoes,
// the confirmation, the executions and the evidence as the model saw it.

import {call, ApiError} from './api.js';
import {$, h, vh, pretty, setText, parseTime, fmtTime, fmtMs, fmtCost, fmtInt} from './dom.js';

let ctx; // {key(), unauthorized(message)}
let els;
let seq = 0;

export function initTrace(context) {
  ctx = context;
  els = {
    title: $('trace-title'),
    status: $('trace-status'),
    error: $('trace-error'),
    body: $('trace-body'),
  };
}

export async function showTrace(id) {
  const mine = ++seq;
  setText(els.title, 'Turn ' + id);
  setText(els.status, 'Loading the trace…');
  els.error.replaceChildren();
  els.body.replaceChildren();
  let t;
  try {
    t = await call(ctx.key(), 'GET', '/v1/turns/' + encodeURIComponent(id));
  } catch (e) {
    if (mine !== seq) return;
    setText(els.status, '');
    if (e instanceof ApiError && e.status === 401) {
      ctx.unauthorized('The server did not accept the API key. Sign in again.');
      return;
    }
    const text = e instanceof ApiError && e.status === 404 ? 'There is no turn ' + id + ' in your tenant.' : 'The trace could not be loaded: ' + e.message;
    els.error.replaceChildren(h('p', null, text));
    return;
  }
  if (mine !== seq) return;
  setText(els.status, '');
  if (!t || typeof t !== 'object') {
    els.error.replaceChildren(h('p', null, 'The server sent an empty trace.'));
    return;
  }
  els.body.replaceChildren(...render(t));
}

function section(id, title, ...content) {
  return h('section', {class: 'trace-section', 'aria-labelledby': id},
    h('h2', {id}, title), ...content);
}

function list(v) {
  return Array.isArray(v) ? v.filter((x) => x && typeof x === 'object') : [];
}

function dl(pairs) {
  return h('dl', {class: 'facts'},
    pairs.filter(([, v]) => v !== undefined && v !== null && v !== '').map(([k, v]) => [h('dt', null, k), h('dd', null, v)]));
}

function badge(status) {
  const s = String(status || '');
  const cls = s === 'ok' ? 'status-ok' : s.startsWith('failed') || s === 'error' ? 'status-failed' : 'status-other';
  return h('span', {class: 'badge ' + cls}, s || '—');
}

function empty(text) {
  return h('p', {class: 'empty'}, text);
}

function render(t) {
  const out = [];
  out.push(section('trace-summary', 'Summary', dl([
    ['Turn', String(t.turn_id || '')],
    ['Conversation', t.conversation_id ? h('a', {href: '/turns?conversation_id=' + encodeURIComponent(t.conversation_id)}, String(t.conversation_id)) : ''],
    ['User', String(t.user_id || '')],
    ['Tenant', String(t.tenant || '')],
    ['Channel', String(t.channel || '')],
    ['Message id', String(t.message_id || '')],
    ['Route', String(t.route || '')],
    ['Status', badge(t.status)],
    ['Started', h('time', {datetime: String(t.started_at || '')}, fmtTime(t.started_at))],
    ['Duration', fmtMs(t.duration_ms)],
    ['Lock wait', fmtMs(t.lock_wait_ms)],
    ['Cost', t.cost_unknown === true ? 'unknown (a model without a known price)' : fmtCost(t.cost_usd)],
    ['Decided by', t.decided_by ? String(t.decided_by.provider || '?') + ' / ' + String(t.decided_by.model || '?') : 'no model'],
    ['Error', t.error ? h('span', {class: 'error'}, String(t.error)) : ''],
  ]), t.say ? h('div', {class: 'say'}, h('h3', null, 'Reply'), h('p', {class: 'text'}, String(t.say))) : null));
  out.push(section('trace-timeline', 'Timeline', timeline(t)));
  out.push(section('trace-context', 'Context sources', contextSources(t)));
  out.push(section('trace-llm', 'Model calls', llmCalls(t)));
  out.push(section('trace-prompt', 'Prompt', dl([
    ['Remembered messages', fmtInt(t.memory_messages)],
    ['Prompt messages', fmtInt(t.prompt_messages)],
    ['Prompt size', fmtInt(t.prompt_bytes) + ' bytes'],
    ['Stable prefix', fmtInt(t.stable_prefix_bytes) + ' bytes (' + Math.round((Number(t.stable_prefix_ratio) || 0) * 100) + '%)'],
  ])));
  out.push(section('trace-decision', 'Decision',
    t.decision === null || t.decision === undefined ? empty('No decision: no model was asked.') : h('pre', {class: 'json', tabindex: '0'}, pretty(t.decision))));
  if (t.repair) out.push(section('trace-repair', 'Repair', repair(t.repair)));
  if (t.loop && typeof t.loop === 'object') {
    out.push(section('trace-loop', 'Agent loop', dl([
      ['Model calls', fmtInt(t.loop.model_calls)],
      ['Tool calls', fmtInt(t.loop.tool_calls)],
      ['Result bytes', fmtInt(t.loop.result_bytes)],
      ['Ended', badge(t.loop.ended)],
    ])));
  }
  if (t.review && typeof t.review === 'object') {
    out.push(section('trace-review', 'Needs review', dl([
      ['Reason', badge(t.review.reason)],
      ['Detail', String(t.review.detail || '')],
    ]), t.review.draft ? h('pre', {class: 'json', tabindex: '0'}, String(t.review.draft)) : empty('The model left no draft.')));
  }
  out.push(section('trace-vetoes', 'Vetoes', vetoes(t)));
  out.push(section('trace-confirmation', 'Confirmation', t.confirmation ? dl([
    ['Pending action', String(t.confirmation.id || '')],
    ['Tool', String(t.confirmation.tool || '')],
    ['Outcome', badge(t.confirmation.outcome)],
    ['Reason', String(t.confirmation.reason || '')],
  ]) : empty('No confirmation in this turn.')));
  out.push(section('trace-executed', 'Executions', executions(t)));
  if (list(t.questions).length || list(t.progress).length) {
    out.push(section('trace-questions', 'Questions and progress', questions(t), progress(t)));
  }
  out.push(section('trace-evidence', 'Evidence', evidence(t)));
  const notes = Array.isArray(t.notes) ? t.notes.filter((n) => typeof n === 'string') : [];
  if (notes.length) out.push(section('trace-notes', 'Notes', h('ul', null, notes.map((n) => h('li', null, String(n))))));
  out.push(h('details', {class: 'raw'}, h('summary', null, 'The whole record as JSON'), h('pre', {class: 'json', tabindex: '0'}, pretty(t))));
  return out;
}

// timeline draws each step as a bar placed and sized within the turn.
function timeline(t) {
  const steps = list(t.steps);
  const start = parseTime(t.started_at);
  const rows = steps.map((s) => {
    const at = parseTime(s.at);
    const offset = Number.isNaN(at) || Number.isNaN(start) ? 0 : Math.max(0, at - start);
    return {name: String(s.name || '?'), offset, duration: Math.max(0, Number(s.duration_ms) || 0), note: String(s.note || '')};
  });
  const lockWait = Number(t.lock_wait_ms) || 0;
  if (lockWait > 0 && !rows.some((r) => r.name === 'lock')) {
    rows.unshift({name: 'lock', offset: 0, duration: lockWait, note: 'waiting for the conversation'});
  }
  if (rows.length === 0) return empty('No steps were recorded.');
  const total = Math.max(Number(t.duration_ms) || 0, ...rows.map((r) => r.offset + r.duration), 1);
  return h('div', null,
    h('p', {class: 'help'}, 'Bars are scaled to the whole turn (' + fmtMs(total) + '). The lock wait is ' + fmtMs(lockWait) + '.'),
    h('ol', {class: 'timeline'}, rows.map((r) => {
      const bar = h('span', {class: 'bar ' + stepKind(r.name)});
      // CSSOM properties, not a style attribute: allowed under the policy.
      bar.style.left = (100 * r.offset / total).toFixed(2) + '%';
      bar.style.width = Math.max(0.4, 100 * r.duration / total).toFixed(2) + '%';
      return h('li', {class: 'step', dataset: {step: r.name}},
        h('span', {class: 'step-name'}, r.name),
        h('span', {class: 'step-time'}, fmtMs(r.duration), vh(', starting at '), h('span', {'aria-hidden': 'true'}, ' @ '), '+' + fmtMs(r.offset)),
        r.note ? h('span', {class: 'step-note'}, r.note) : null,
        h('span', {class: 'track', 'aria-hidden': 'true'}, bar));
    })));
}

function stepKind(name) {
  if (name === 'lock') return 'bar-lock';
  if (name.startsWith('decide')) return 'bar-model';
  if (name.startsWith('execute')) return 'bar-tool';
  return 'bar-step';
}

function table(caption, columns, rows, cls) {
  return h('div', {class: 'table-wrap', role: 'region', 'aria-label': caption, tabindex: '0'},
    h('table', {class: 'data ' + (cls || '')},
      h('caption', {class: 'visually-hidden'}, caption),
      h('thead', null, h('tr', null, columns.map((c) => h('th', {scope: 'col'}, c)))),
      h('tbody', null, rows.map((cells) => h('tr', null, cells.map((c, i) => h('td', {dataset: {label: columns[i]}}, c)))))));
}

function contextSources(t) {
  const srcs = list(t.context_sources);
  if (srcs.length === 0) return empty('No live context was fetched.');
  return table('Context sources', ['Source', 'Duration', 'Sections', 'Error'],
    srcs.map((s) => [String(s.name || ''), fmtMs(s.duration_ms), fmtInt(s.sections), s.error ? h('span', {class: 'error'}, String(s.error)) : '—']));
}

function llmCalls(t) {
  const calls = list(t.llm_calls);
  if (calls.length === 0) return empty('No model was called.');
  return table('Model calls', ['#', 'Attempt', 'Provider', 'Model', 'Operation', 'Tokens in / cached / out', 'Cost', 'Duration', 'Status', 'Error', 'Note'],
    calls.map((c, i) => [
      String(i + 1),
      String(c.attempt || ''),
      String(c.provider || ''),
      String(c.model || ''),
      [String(c.operation || ''), c.strategy ? ' (' + c.strategy + ')' : ''].join(''),
      fmtInt(c.input_tokens) + ' / ' + fmtInt(c.cached_input_tokens) + ' / ' + fmtInt(c.output_tokens),
      c.cost_unknown === true ? 'unknown' : fmtCost(c.cost_usd),
      fmtMs(c.duration_ms),
      badge(c.status),
      c.error ? h('span', {class: 'error'}, String(c.error)) : '—',
      c.note ? String(c.note) : '—',
    ]), 'llm-calls');
}

function problems(ps) {
  const items = list(ps);
  if (items.length === 0) return empty('No problems listed.');
  return h('ul', {class: 'problems'}, items.map((p) => h('li', null, h('code', null, String(p.location || '(root)')), ': ', String(p.message || ''))));
}

function repair(r) {
  return h('div', null,
    h('p', null, r.repaired ? 'The model repaired its output.' : 'The output was not repaired.'),
    h('h3', null, 'Problems in the first output'), problems(r.problems),
    h('h3', null, 'First output'), h('pre', {class: 'json', tabindex: '0'}, String(r.output || '')),
    r.second_output ? [h('h3', null, 'Second output'), h('pre', {class: 'json', tabindex: '0'}, String(r.second_output))] : null,
    list(r.second_problems).length ? [h('h3', null, 'Problems in the second output'), problems(r.second_problems)] : null);
}

function vetoes(t) {
  const vs = list(t.vetoes);
  if (vs.length === 0) return empty('Nothing was vetoed.');
  return h('ul', {class: 'vetoes'}, vs.map((v) => h('li', null,
    h('strong', null, String(v.guard || '?')), v.tool ? ' on ' + v.tool : '', ': ', String(v.reason || ''))));
}

// questions lists what tools asked the user during the turn (an MCP
// server's sampling or elicitation) and what came of it.
function questions(t) {
  const qs = list(t.questions);
  if (qs.length === 0) return empty('Nothing was asked.');
  return table('Questions', ['Tool', 'Question', 'Answer'],
    qs.map((q) => [
      String(q.step || ''),
      String(q.text || ''),
      q.error ? h('span', {class: 'error'}, String(q.error)) : (q.typed ? 'typed an answer' : String(q.choice || '—')),
    ]), 'questions');
}

function progress(t) {
  const ps = list(t.progress);
  if (ps.length === 0) return null;
  return table('Progress', ['Tool', 'Done', 'Message'],
    ps.map((p) => [
      String(p.step || ''),
      Number(p.total) > 0 ? fmtInt(p.done) + ' / ' + fmtInt(p.total) : fmtInt(p.done),
      p.message ? String(p.message) : '—',
    ]), 'progress');
}

function executions(t) {
  const xs = list(t.executed);
  if (xs.length === 0) return empty('No tool ran.');
  return h('ol', {class: 'executions'}, xs.map((x) => {
    const r = x.result && typeof x.result === 'object' ? x.result : null;
    return h('li', {class: 'execution'},
      h('h3', null, String(x.tool || '?'), ' ', badge(x.status)),
      dl([
        ['Duration', fmtMs(x.duration_ms)],
        ['Idempotency key', String(x.idempotency_key || '')],
        ['Reused', x.reused ? 'yes — the earlier result was reused, the tool was not called again' : ''],
      ]),
      h('h4', null, 'Arguments'), h('pre', {class: 'json', tabindex: '0'}, pretty(x.args)),
      r ? [
        h('h4', null, 'Result'),
        dl([
          ['Status', badge(r.status)],
          ['Text', r.text ? String(r.text) : ''],
          ['Error', r.error ? h('span', {class: 'error'}, String(r.error)) : ''],
          ['Source', String(r.source || '')],
          ['Observed', r.observed_at ? fmtTime(r.observed_at) : ''],
          ['Ambiguous field', String(r.field || '')],
          ['Candidates', Array.isArray(r.candidates) ? r.candidates.join(', ') : ''],
        ]),
        r.data !== undefined && r.data !== null ? h('pre', {class: 'json', tabindex: '0'}, pretty(r.data)) : null,
      ] : null);
  }));
}

// The model sees evidence in labelled blocks whose text cannot close the
// block; this shows the same form.
function attr(s) {
  return String(s).replace(/"/g, '\'').replace(/</g, '‹').replace(/>/g, '›').replace(/\n/g, ' ');
}

function evidenceBlock(e) {
  const text = String(e.text || '').replace(/<\/evidence/g, '<\\/evidence').replace(/<evidence/g, '‹evidence');
  return '<evidence kind="' + attr(e.kind || '') + '"' + (e.source ? ' source="' + attr(e.source) + '"' : '') + '>\n' + text + '\n</evidence>';
}

function evidence(t) {
  const ev = list(t.evidence);
  if (ev.length === 0) return empty('No evidence came with the message.');
  return h('div', null,
    h('p', {class: 'help'}, 'Shown to the model as labelled data; evidence never confirms or requests an action.'),
    ev.map((e) => h('figure', {class: 'evidence'},
      h('figcaption', null, String(e.kind || '?'), e.source ? ' from ' + e.source : ''),
      h('pre', {tabindex: '0'}, evidenceBlock(e)))));
}
