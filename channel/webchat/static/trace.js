// One turn's trace, from GET /v1/turns/{id}: the pipeline as a timeline
// scaled to the turn, the lock wait, live-context sources, every model call
// and what the policy did with it, the decision, its repair, the vetoes,
// the confirmation, the executions and the evidence as the model saw it.

import {call, ApiError} from './api.js';
import {$, h, vh, pretty, setText, parseTime, fmtZoned, fmtMs, fmtCost, fmtInt} from './dom.js';
import {t as msg} from './i18n.js';

let ctx; // {key(), unauthorized()}
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
  // The id can be long and unbroken: smaller, and broken anywhere.
  els.title.replaceChildren(msg('trace.heading') + ' ', h('span', {class: 'title-id'}, id));
  setText(els.status, msg('trace.loading'));
  els.error.replaceChildren();
  els.body.replaceChildren();
  let t;
  try {
    t = await call(ctx.key(), 'GET', '/v1/turns/' + encodeURIComponent(id));
  } catch (e) {
    if (mine !== seq) return;
    setText(els.status, '');
    if (e instanceof ApiError && e.status === 401) {
      ctx.unauthorized();
      return;
    }
    const text = e instanceof ApiError && e.status === 404 ? msg('trace.notFound', {id}) : msg('trace.failed', {message: e.message});
    els.error.replaceChildren(h('p', null, text));
    return;
  }
  if (mine !== seq) return;
  setText(els.status, '');
  if (!t || typeof t !== 'object') {
    els.error.replaceChildren(h('p', null, msg('trace.emptyRecord')));
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

// bytes is a size in bytes, in words.
function bytes(n) {
  return msg('trace.bytes', {n: Number(n), text: fmtInt(n)});
}

function empty(text) {
  return h('p', {class: 'empty'}, text);
}

function render(t) {
  const out = [];
  out.push(section('trace-summary', msg('trace.summary'), dl([
    [msg('turns.turn'), String(t.turn_id || '')],
    [msg('trace.conversation'), t.conversation_id ? h('a', {href: '/turns?conversation_id=' + encodeURIComponent(t.conversation_id)}, String(t.conversation_id)) : ''],
    [msg('trace.user'), String(t.user_id || '')],
    [msg('trace.tenant'), String(t.tenant || '')],
    [msg('trace.channel'), String(t.channel || '')],
    [msg('trace.messageID'), String(t.message_id || '')],
    [msg('trace.route'), String(t.route || '')],
    [msg('trace.status'), badge(t.status)],
    [msg('trace.started'), h('time', {datetime: String(t.started_at || '')}, fmtZoned(t.started_at))],
    [msg('trace.duration'), fmtMs(t.duration_ms)],
    [msg('trace.lockWait'), fmtMs(t.lock_wait_ms)],
    [msg('trace.cost'), t.cost_unknown === true ? msg('trace.costUnknown') : fmtCost(t.cost_usd)],
    [msg('trace.decidedBy'), t.decided_by ? String(t.decided_by.provider || '?') + ' / ' + String(t.decided_by.model || '?') : msg('trace.noModel')],
    [msg('trace.error'), t.error ? h('span', {class: 'error'}, String(t.error)) : ''],
  ]), t.say ? h('div', {class: 'say'}, h('h3', null, msg('trace.reply')), h('p', {class: 'text'}, String(t.say))) : null));
  out.push(section('trace-timeline', msg('trace.timeline'), timeline(t)));
  out.push(section('trace-context', msg('trace.context'), contextSources(t)));
  out.push(section('trace-llm', msg('trace.llm'), llmCalls(t)));
  out.push(section('trace-prompt', msg('trace.prompt'), dl([
    [msg('trace.memory'), fmtInt(t.memory_messages)],
    [msg('trace.promptMessages'), fmtInt(t.prompt_messages)],
    [msg('trace.promptSize'), bytes(t.prompt_bytes)],
    [msg('trace.stablePrefix'), bytes(t.stable_prefix_bytes) + ' (' + Math.round((Number(t.stable_prefix_ratio) || 0) * 100) + '%)'],
  ])));
  out.push(section('trace-decision', msg('trace.decision'),
    t.decision === null || t.decision === undefined ? empty(msg('trace.noDecision')) : h('pre', {class: 'json', tabindex: '0'}, pretty(t.decision))));
  if (t.repair) out.push(section('trace-repair', msg('trace.repair'), repair(t.repair)));
  if (t.loop && typeof t.loop === 'object') {
    out.push(section('trace-loop', msg('trace.loop'), dl([
      [msg('trace.llm'), fmtInt(t.loop.model_calls)],
      [msg('trace.toolCalls'), fmtInt(t.loop.tool_calls)],
      [msg('trace.resultBytes'), fmtInt(t.loop.result_bytes)],
      [msg('trace.ended'), badge(t.loop.ended)],
    ])));
  }
  if (t.interview && typeof t.interview === 'object') out.push(section('trace-interview', msg('trace.interview'), interview(t.interview)));
  if (t.review && typeof t.review === 'object') {
    out.push(section('trace-review', msg('trace.review'), dl([
      [msg('trace.reason'), badge(t.review.reason)],
      [msg('trace.detail'), String(t.review.detail || '')],
    ]), t.review.draft ? h('pre', {class: 'json', tabindex: '0'}, String(t.review.draft)) : empty(msg('trace.noDraft'))));
  }
  out.push(section('trace-vetoes', msg('trace.vetoes'), vetoes(t)));
  out.push(section('trace-confirmation', msg('trace.confirmation'), t.confirmation ? dl([
    [msg('trace.pendingAction'), String(t.confirmation.id || '')],
    [msg('trace.tool'), String(t.confirmation.tool || '')],
    [msg('trace.outcome'), badge(t.confirmation.outcome)],
    [msg('trace.reason'), String(t.confirmation.reason || '')],
  ]) : empty(msg('trace.noConfirmation'))));
  out.push(section('trace-executed', msg('trace.executions'), executions(t)));
  if (list(t.questions).length || list(t.progress).length) {
    out.push(section('trace-questions', msg('trace.questionsProgress'), questions(t), progress(t)));
  }
  out.push(section('trace-evidence', msg('trace.evidence'), evidence(t)));
  const notes = Array.isArray(t.notes) ? t.notes.filter((n) => typeof n === 'string') : [];
  if (notes.length) out.push(section('trace-notes', msg('trace.notes'), h('ul', null, notes.map((n) => h('li', null, String(n))))));
  out.push(h('details', {class: 'raw'}, h('summary', null, msg('trace.raw')), h('pre', {class: 'json', tabindex: '0'}, pretty(t))));
  return out;
}

// interview shows an interviewer's step. Its reasoning reaches only keys
// with turns:read_all; for any other the server marks it hidden.
function interview(iv) {
  const strings = (v) => Array.isArray(v) ? v.filter((x) => typeof x === 'string') : [];
  const dropped = strings(iv.dropped);
  const repairs = strings(iv.problems);
  return [
    dl([
      [msg('trace.questionsAsked'), fmtInt(iv.questions)],
      [msg('trace.ended'), iv.ended ? badge(iv.ended) : ''],
      [msg('trace.confidence'), typeof iv.confidence_score === 'number' ? Math.round(iv.confidence_score * 100) + '%' : ''],
      [msg('trace.reasoning'), iv.reasoning_hidden === true ? h('span', {class: 'empty'}, msg('trace.reasoningHidden')) : String(iv.reasoning || '')],
    ]),
    dropped.length ? h('div', null, h('h3', null, msg('trace.dropped')), h('ul', null, dropped.map((d) => h('li', null, d)))) : null,
    repairs.length ? h('div', null, h('h3', null, msg('trace.repairs')), h('ul', {class: 'problems'}, repairs.map((p) => h('li', null, p)))) : null,
  ];
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
    rows.unshift({name: 'lock', offset: 0, duration: lockWait, note: msg('trace.lockNote')});
  }
  if (rows.length === 0) return empty(msg('trace.noSteps'));
  const total = Math.max(Number(t.duration_ms) || 0, ...rows.map((r) => r.offset + r.duration), 1);
  return h('div', null,
    h('p', {class: 'help'}, msg('trace.scale', {total: fmtMs(total), lock: fmtMs(lockWait)})),
    h('ol', {class: 'timeline'}, rows.map((r) => {
      const bar = h('span', {class: 'bar ' + stepKind(r.name)});
      // CSSOM properties, not a style attribute: allowed under the policy.
      bar.style.left = (100 * r.offset / total).toFixed(2) + '%';
      bar.style.width = Math.max(0.4, 100 * r.duration / total).toFixed(2) + '%';
      return h('li', {class: 'step', dataset: {step: r.name}},
        h('span', {class: 'step-name'}, r.name),
        h('span', {class: 'step-time'}, fmtMs(r.duration), vh(msg('trace.startingAt')), h('span', {'aria-hidden': 'true'}, ' @ '), '+' + fmtMs(r.offset)),
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
  if (srcs.length === 0) return empty(msg('trace.noContext'));
  return table(msg('trace.context'), [msg('trace.source'), msg('trace.duration'), msg('trace.sections'), msg('trace.error')],
    srcs.map((s) => [String(s.name || ''), fmtMs(s.duration_ms), fmtInt(s.sections), s.error ? h('span', {class: 'error'}, String(s.error)) : '—']));
}

function llmCalls(t) {
  const calls = list(t.llm_calls);
  if (calls.length === 0) return empty(msg('trace.noLLM'));
  return table(msg('trace.llm'), ['#', msg('trace.attempt'), msg('trace.provider'), msg('trace.model'), msg('trace.operation'), msg('trace.tokens'),
    msg('trace.cost'), msg('trace.duration'), msg('trace.status'), msg('trace.error'), msg('trace.note')],
    calls.map((c, i) => [
      String(i + 1),
      String(c.attempt || ''),
      String(c.provider || ''),
      String(c.model || ''),
      [String(c.operation || ''), c.strategy ? ' (' + c.strategy + ')' : ''].join(''),
      fmtInt(c.input_tokens) + ' / ' + fmtInt(c.cached_input_tokens) + ' / ' + fmtInt(c.output_tokens),
      c.cost_unknown === true ? msg('cost.unknown') : fmtCost(c.cost_usd),
      fmtMs(c.duration_ms),
      badge(c.status),
      c.error ? h('span', {class: 'error'}, String(c.error)) : '—',
      c.note ? String(c.note) : '—',
    ]), 'llm-calls');
}

function problems(ps) {
  const items = list(ps);
  if (items.length === 0) return empty(msg('trace.noProblems'));
  return h('ul', {class: 'problems'}, items.map((p) => h('li', null, h('code', null, String(p.location || '(root)')), ': ', String(p.message || ''))));
}

function repair(r) {
  return h('div', null,
    h('p', null, r.repaired ? msg('trace.repaired') : msg('trace.notRepaired')),
    h('h3', null, msg('trace.firstProblems')), problems(r.problems),
    h('h3', null, msg('trace.firstOutput')), h('pre', {class: 'json', tabindex: '0'}, String(r.output || '')),
    r.second_output ? [h('h3', null, msg('trace.secondOutput')), h('pre', {class: 'json', tabindex: '0'}, String(r.second_output))] : null,
    list(r.second_problems).length ? [h('h3', null, msg('trace.secondProblems')), problems(r.second_problems)] : null);
}

function vetoes(t) {
  const vs = list(t.vetoes);
  if (vs.length === 0) return empty(msg('trace.noVetoes'));
  return h('ul', {class: 'vetoes'}, vs.map((v) => h('li', null,
    h('strong', null, String(v.guard || '?')), v.tool ? msg('trace.vetoOn', {tool: v.tool}) : '', ': ', String(v.reason || ''))));
}

// questions lists what tools asked the user during the turn (an MCP
// server's sampling or elicitation) and what came of it.
function questions(t) {
  const qs = list(t.questions);
  if (qs.length === 0) return empty(msg('trace.noQuestions'));
  return table(msg('trace.questions'), [msg('trace.tool'), msg('trace.question'), msg('trace.answer')],
    qs.map((q) => [
      String(q.step || ''),
      String(q.text || ''),
      q.error ? h('span', {class: 'error'}, String(q.error)) : (q.typed ? msg('trace.typed') : String(q.choice || '—')),
    ]), 'questions');
}

function progress(t) {
  const ps = list(t.progress);
  if (ps.length === 0) return null;
  return table(msg('trace.progress'), [msg('trace.tool'), msg('trace.done'), msg('trace.message')],
    ps.map((p) => [
      String(p.step || ''),
      Number(p.total) > 0 ? fmtInt(p.done) + ' / ' + fmtInt(p.total) : fmtInt(p.done),
      p.message ? String(p.message) : '—',
    ]), 'progress');
}

function executions(t) {
  const xs = list(t.executed);
  if (xs.length === 0) return empty(msg('trace.noExecutions'));
  return h('ol', {class: 'executions'}, xs.map((x) => {
    const r = x.result && typeof x.result === 'object' ? x.result : null;
    return h('li', {class: 'execution'},
      h('h3', null, String(x.tool || '?'), ' ', badge(x.status)),
      dl([
        [msg('trace.duration'), fmtMs(x.duration_ms)],
        [msg('trace.idempotencyKey'), String(x.idempotency_key || '')],
        [msg('trace.reused'), x.reused ? msg('trace.reusedYes') : ''],
      ]),
      h('h4', null, msg('trace.arguments')), h('pre', {class: 'json', tabindex: '0'}, pretty(x.args)),
      r ? [
        h('h4', null, msg('trace.result')),
        dl([
          [msg('trace.status'), badge(r.status)],
          [msg('trace.text'), r.text ? String(r.text) : ''],
          [msg('trace.error'), r.error ? h('span', {class: 'error'}, String(r.error)) : ''],
          [msg('trace.source'), String(r.source || '')],
          [msg('trace.observed'), r.observed_at ? fmtZoned(r.observed_at) : ''],
          [msg('trace.field'), String(r.field || '')],
          [msg('trace.candidates'), Array.isArray(r.candidates) ? r.candidates.join(', ') : ''],
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
  if (ev.length === 0) return empty(msg('trace.noEvidence'));
  return h('div', null,
    h('p', {class: 'help'}, msg('trace.evidenceHelp')),
    ev.map((e) => h('figure', {class: 'evidence'},
      h('figcaption', null, String(e.kind || '?'), e.source ? msg('trace.from', {source: e.source}) : ''),
      h('pre', {tabindex: '0'}, evidenceBlock(e)))));
}
