// One trace: its summary, the waterfall of its spans, the selected span's detail (its
// attributes, the resource's, the GenAI fields and messages as text) and the trace's logs
// (a logs search by trace id) beside it. Everything from the API goes into text nodes.
import { api, query } from '../api.js';
import { el, clear, fill, loading, empty, showError, table, when, button, latestOnly } from '../dom.js';
import { waterfall, duration, statusLabel } from '../waterfall.js';

const SPAN_PAGE = 200;
const SPAN_PAGES = 10; // at most 2,000 spans drawn
const LOG_PAGE = 100;

/** The cursor of the page after `feed` (a FeedResult): its `cursor`, else the one in `next`. */
export function nextCursor(feed) {
  if (!feed || !(feed.results || []).length) return null;
  if (feed.cursor) return feed.cursor;
  if (typeof feed.next === 'string' && feed.next) {
    try {
      return new URL(feed.next, window.location.origin).searchParams.get('cursor') || feed.next;
    } catch {
      return feed.next;
    }
  }
  return null;
}

/** A string of the search language: single quotes doubled. */
export function quoted(text) {
  return `'${String(text).replace(/'/g, "''")}'`;
}

async function allSpans(traceId) {
  const spans = [];
  let cursor = null;
  for (let n = 0; n < SPAN_PAGES; n += 1) {
    const path = `/v1/observability/traces/${encodeURIComponent(traceId)}/spans`;
    const page = await api(path + query({ page_size: SPAN_PAGE, cursor }));
    const feed = (page && page.spans) || {};
    spans.push(...(feed.results || []));
    cursor = nextCursor(feed);
    if (!cursor) return { spans, complete: true };
  }
  return { spans, complete: false };
}

function facts(pairs) {
  const shown = pairs.filter(([, v]) => v !== '' && v !== null && v !== undefined);
  return el('dl', { class: 'facts' }, shown.map(([k, v]) => [el('dt', {}, k), el('dd', {}, v)]));
}

function tokens(inp, out) {
  return `${(Number(inp) || 0) + (Number(out) || 0)} (${Number(inp) || 0} in, ${Number(out) || 0} out)`;
}

function summary(trace) {
  const error = trace.status_code === 'Error';
  return el('section', { class: 'card trace-summary', 'aria-labelledby': 'trace-h' },
    el('h2', { id: 'trace-h' }, trace.root_span_name || '(root span not received)'),
    facts([
      ['Trace', el('code', {}, trace.trace_id)],
      ['Status', el('span', { class: `badge ${error ? 'bad' : ''}` },
        error ? `Error (${trace.error_count} ${trace.error_count === 1 ? 'span' : 'spans'})` : 'No error')],
      ['Service', trace.service_name],
      ['Environment', trace.environment],
      ['Start', when(trace.start_time)],
      ['Duration', duration(trace.duration_ns)],
      ['Spans', String(trace.span_count)],
      ['Tokens', tokens(trace.input_tokens, trace.output_tokens)],
      ['Models', (trace.models_used || []).join(', ')],
      ['Tools', (trace.tools_used || []).join(', ')],
      ['Agent', trace.agent_name || trace.agent_id],
      ['Workflow', trace.workflow_name],
      ['Conversation', trace.conversation_id],
    ]));
}

function partText(part) {
  if (typeof part === 'string') return part;
  if (part && typeof part.content === 'string') return part.content;
  if (part && typeof part.text === 'string') return part.text;
  return JSON.stringify(part, null, 2);
}

/** GenAI messages (a JSON text of [{role, parts | content}]) as one box per message; any other
 * text as it came, pretty-printed when it is JSON. */
export function messagesBlock(text) {
  let value;
  try {
    value = JSON.parse(text);
  } catch {
    return el('pre', { class: 'json' }, text);
  }
  if (Array.isArray(value) && value.every((m) => m && typeof m === 'object' && typeof m.role === 'string')) {
    return el('div', { class: 'chat' }, value.map((m) => {
      const body = Array.isArray(m.parts) ? m.parts.map(partText).join('\n')
        : typeof m.content === 'string' ? m.content : JSON.stringify(m.content ?? m, null, 2);
      return el('div', { class: `message ${m.role}` }, el('span', { class: 'role' }, m.role), body);
    }));
  }
  return el('pre', { class: 'json' }, JSON.stringify(value, null, 2));
}

function attributes(title, map) {
  const keys = Object.keys(map || {}).sort();
  if (!keys.length) return null;
  return el('div', {}, el('h4', {}, title),
    table([{ label: 'Key', value: (k) => el('code', {}, k) }, { label: 'Value', value: (k) => map[k] }], keys,
      { caption: null }));
}

const TEXTS = [
  ['System instructions', 'system_instructions'],
  ['Input messages', 'input_messages'],
  ['Output messages', 'output_messages'],
  ['Tool definitions', 'tool_definitions'],
  ['Tool call arguments', 'tool_call_arguments'],
  ['Tool call result', 'tool_call_result'],
];

/** The detail of a span. */
export function spanDetail(s) {
  const error = s.status_code === 'Error';
  const genAi = s.operation_name || s.request_model || s.response_model || s.usage_input_tokens || s.usage_output_tokens;
  return el('div', { class: 'span-detail' },
    el('h3', { id: 'span-h' }, s.span_name || '(unnamed span)'),
    facts([
      ['Span', el('code', {}, s.span_id)],
      ['Parent', s.parent_span_id ? el('code', {}, s.parent_span_id) : 'none (root)'],
      ['Status', el('span', { class: `badge ${error ? 'bad' : s.status_code === 'Ok' ? 'ok' : ''}` }, statusLabel(s.status_code))],
      ['Status message', s.status_message],
      ['Error type', s.error_type],
      ['Kind', s.span_kind],
      ['Service', s.service_name],
      ['Start', when(s.start_time)],
      ['Duration', duration(s.duration_ns)],
      ['Scope', [s.scope_name, s.scope_version].filter(Boolean).join(' ')],
    ]),
    genAi ? el('div', {}, el('h4', {}, 'GenAI'), facts([
      ['Operation', s.operation_name],
      ['Provider', s.provider_name],
      ['Model', s.response_model && s.response_model !== s.request_model
        ? `${s.request_model} → ${s.response_model}` : s.request_model || s.response_model],
      ['Tokens', tokens(s.usage_input_tokens, s.usage_output_tokens)],
      ['Cache read tokens', s.usage_cache_read_input_tokens || ''],
      ['Finish reasons', (s.response_finish_reasons || []).join(', ')],
      ['Agent', s.agent_name || s.agent_id],
      ['Conversation', s.conversation_id],
      ['Tool', [s.tool_name, s.tool_type && `(${s.tool_type})`].filter(Boolean).join(' ')],
    ])) : null,
    TEXTS.filter(([, key]) => s[key]).map(([label, key]) => el('div', {}, el('h4', {}, label), messagesBlock(s[key]))),
    attributes('Span attributes', s.span_attributes),
    attributes('Resource attributes', s.resource_attributes));
}

function logItem(log, spanId) {
  const mine = Boolean(spanId) && log.span_id === spanId;
  return el('li', { class: `log${mine ? ' current' : ''}` },
    el('div', { class: 'log-meta small' },
      el('span', { class: 'badge' }, log.severity_text || `severity ${log.severity_number}`),
      ' ', when(log.timestamp),
      log.span_id ? [' · span ', el('code', {}, log.span_id)] : null,
      mine ? el('strong', {}, ' · this span') : null),
    el('div', { class: 'log-body' }, log.body),
    Object.keys(log.log_attributes || {}).length
      ? el('small', { class: 'muted' }, Object.entries(log.log_attributes).map(([k, v]) => `${k}=${v}`).join(', '))
      : null);
}

/** The logs panel of a trace: loads them (a logs search by trace id), `highlight(spanId)` marks
 * the selected span's. */
function logsPanel(traceId) {
  const state = { logs: [], cursor: null, spanId: null };
  const turn = latestOnly();
  const list = el('div', {});
  const node = el('section', { class: 'card trace-logs', 'aria-labelledby': 'logs-h' },
    el('h3', { id: 'logs-h' }, 'Logs of the trace'), list);

  function draw() {
    clear(list);
    if (!state.logs.length) {
      empty(list, 'No log of this trace.');
      return;
    }
    list.append(el('ul', { class: 'logs' }, state.logs.map((l) => logItem(l, state.spanId))));
    if (state.cursor) list.append(button('More logs', () => load(state.cursor)));
  }

  async function load(cursor) {
    const mine = turn();
    if (!cursor) loading(list);
    try {
      const body = { search_expression: `trace_id = ${quoted(traceId)}`, order: 'asc' };
      const page = await api(`/v1/observability/logs/search${query({ page_size: LOG_PAGE, cursor })}`, { method: 'POST', body });
      if (!mine()) return;
      const feed = (page && page.logs) || {};
      state.logs = cursor ? state.logs.concat(feed.results || []) : feed.results || [];
      state.cursor = nextCursor(feed);
      draw();
    } catch (err) {
      if (mine()) showError(list, err);
    }
  }

  return {
    node,
    load: () => load(null),
    highlight(spanId) {
      state.spanId = spanId;
      if (state.logs.length) draw();
    },
  };
}

/** Renders the trace `traceId` into `root`. */
export async function renderTrace(root, ctx, traceId) {
  const q = ctx.params.get('q');
  clear(root);
  const body = el('div', {});
  root.append(
    el('header', { class: 'toolbar' },
      el('h1', {}, 'Trace'),
      el('a', { href: `/console/traces${query({ q })}` }, '← All traces')),
    body);
  ctx.title('Trace');
  loading(body);
  const logs = logsPanel(traceId);
  let trace;
  let spans;
  try {
    const path = `/v1/observability/traces/${encodeURIComponent(traceId)}`;
    [trace, spans] = await Promise.all([api(path), allSpans(traceId)]);
  } catch (err) {
    showError(body, err);
    return;
  }
  ctx.title(`Trace ${trace.root_span_name || trace.trace_id}`);
  const detail = el('section', { class: 'card', 'aria-labelledby': 'span-h', 'aria-live': 'polite' });
  const wf = waterfall(trace, spans.spans, (span) => {
    fill(detail, spanDetail(span));
    logs.highlight(span.span_id);
  });
  fill(body,
    summary(trace),
    el('div', { class: 'trace-layout' },
      el('section', { class: 'card', 'aria-labelledby': 'spans-h' },
        el('h3', { id: 'spans-h' }, `Spans (${spans.spans.length})`),
        spans.complete ? null : el('p', { class: 'info' }, `The first ${spans.spans.length} spans are shown.`),
        spans.spans.length ? wf.node : el('p', { class: 'empty' }, 'No span of this trace has arrived yet.')),
      el('div', { class: 'trace-side' }, spans.spans.length ? detail : null, logs.node)));
  if (spans.spans.length) wf.select(ctx.params.get('span') || trace.root_span_id);
  logs.load();
}
