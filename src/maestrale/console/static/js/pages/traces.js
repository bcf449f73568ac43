// Traces: the workspace's traces, newest first, searched with the search expression language
// of /v1/observability/traces/search and paged by its cursor; /console/traces/{id} shows one
// trace (pages/trace-view.js). The search stays in the address (`?q=`) so that coming back
// from a trace finds it again.
import { api, query } from '../api.js';
import { el, clear, loading, empty, showError, table, when, button, formField, latestOnly } from '../dom.js';
import { duration } from '../waterfall.js';
import { nextCursor, renderTrace } from './trace-view.js';

const PAGE_SIZE = 20;

function statusCell(trace) {
  if (trace.status_code === 'Error') {
    return el('span', { class: 'badge bad' }, `Error (${trace.error_count})`);
  }
  return el('span', { class: 'badge' }, 'No error');
}

function columns(q) {
  const href = (t) => `/console/traces/${encodeURIComponent(t.trace_id)}${query({ q })}`;
  return [
    {
      label: 'Root span',
      value: (t) => el('span', {},
        el('a', { href: href(t), class: 'trace-link' }, t.root_span_name || '(root span not received)'),
        el('br', {}), el('small', { class: 'muted' }, el('code', {}, t.trace_id))),
    },
    { label: 'Service', key: 'service_name' },
    { label: 'Start', value: (t) => when(t.start_time), class: 'nowrap' },
    { label: 'Duration', value: (t) => duration(t.duration_ns), class: 'nowrap' },
    { label: 'Spans', value: (t) => String(t.span_count), class: 'nowrap' },
    {
      label: 'Tokens',
      value: (t) => el('span', { title: `${t.input_tokens} in, ${t.output_tokens} out` },
        String((Number(t.input_tokens) || 0) + (Number(t.output_tokens) || 0))),
      class: 'nowrap',
    },
    { label: 'Status', value: statusCell, class: 'nowrap' },
  ];
}

function renderList(root, ctx) {
  const state = { q: ctx.params.get('q') || '', cursor: null, previous: [], page: 1 };
  const turn = latestOnly();
  const listBox = el('section', { class: 'traces-list', 'aria-live': 'polite' });
  const input = el('input', {
    type: 'search',
    name: 'q',
    value: state.q,
    placeholder: "e.g. status_code = 'Error' AND service_name = 'checkout'",
    spellcheck: 'false',
    autocomplete: 'off',
  });
  const form = el('form', { class: 'trace-search', role: 'search', 'aria-label': 'Search traces' },
    formField('Search expression', input,
      "Conditions on the trace fields, joined with AND, OR, NOT and parentheses; empty: every trace."),
    el('div', { class: 'toolbar' },
      el('button', { type: 'submit', class: 'primary' }, 'Search'),
      button('Clear', () => {
        input.value = '';
        form.requestSubmit();
      })));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    state.q = input.value.trim();
    state.cursor = null;
    state.previous = [];
    state.page = 1;
    const url = `/console/traces${query({ q: state.q })}`;
    window.history.replaceState(null, '', url);
    load();
  });
  root.append(el('header', { class: 'toolbar' }, el('h1', {}, 'Traces')), form, listBox);

  async function load() {
    const mine = turn();
    loading(listBox);
    try {
      const path = `/v1/observability/traces/search${query({ page_size: PAGE_SIZE, cursor: state.cursor })}`;
      const answer = await api(path, { method: 'POST', body: { search_expression: state.q || null } });
      if (!mine()) return;
      const feed = (answer && answer.traces) || {};
      const results = feed.results || [];
      clear(listBox);
      if (!results.length && state.page === 1) {
        empty(listBox, state.q ? 'No trace matches this search.' : 'No trace yet: send OpenTelemetry traces to this workspace.');
        return;
      }
      const next = nextCursor(feed);
      const nav = el('nav', { class: 'toolbar', 'aria-label': 'Pages of traces' },
        state.previous.length ? button('Previous page', () => {
          state.cursor = state.previous.pop();
          state.page -= 1;
          load();
        }) : null,
        el('span', { class: 'muted' }, `Page ${state.page}`),
        next ? button('Next page', () => {
          state.previous.push(state.cursor);
          state.cursor = next;
          state.page += 1;
          load();
        }) : null);
      listBox.append(table(columns(state.q), results, { caption: 'Traces, newest first' }), nav);
    } catch (err) {
      if (mine()) showError(listBox, err);
    }
  }

  load();
}

export async function render(root, ctx) {
  if (ctx.id) {
    await renderTrace(root, ctx, ctx.id);
    return;
  }
  clear(root);
  renderList(root, ctx);
}
