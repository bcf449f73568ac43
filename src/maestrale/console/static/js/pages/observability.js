// Observability: the event explorer. A filter builder over the fields and operators of
// /v1/observability/chat-completion-fields (AND/OR groups, nested), a full-text search of the
// messages' text, cursor paging (the API's keyset cursor: any depth costs the same), an
// event's detail, similar events, judging an event, adding events to a dataset.
// Text from events goes into text nodes only: a message holding <script> shows literally.
import { api } from '../api.js';
import { el, clear, loading, empty, showError } from '../dom.js';
import { contentNode } from './conversation.js';

let uid = 0;
const nextId = (p) => `${p}-${++uid}`;

export function button(label, onClick, attrs = {}) {
  const b = el('button', { type: 'button', ...attrs }, label);
  b.addEventListener('click', onClick);
  return b;
}

export function field(label, input, hint) {
  const id = input.id || nextId('of');
  input.id = id;
  return el('div', { class: 'field' }, el('label', { for: id }, label), input,
    hint ? el('small', { class: 'hint' }, hint) : '');
}

export function when(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? String(iso) : d.toLocaleString();
}

export function grid(columns, rows, rowFn, attrs = {}) {
  const head = el('tr', {}, ...columns.map((c) => el('th', { scope: 'col' }, c)));
  const body = el('tbody', {}, ...rows.map((r) => el('tr', {}, ...rowFn(r).map((c) => el('td', {}, c)))));
  return el('div', { class: 'table-wrap' }, el('table', attrs, el('thead', {}, head), body));
}

export function qs(params) {
  const s = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (Array.isArray(v)) v.forEach((x) => s.append(k, String(x)));
    else if (v !== undefined && v !== null && v !== '') s.set(k, String(v));
  }
  const text = s.toString();
  return text ? `?${text}` : '';
}

export function extraSummary(extra) {
  const parts = Object.entries(extra || {}).map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`);
  const text = parts.join(', ');
  return text.length > 160 ? `${text.slice(0, 157)}…` : text;
}

const OP_LABELS = {
  eq: '=', neq: '≠', lt: '<', lte: '≤', gt: '>', gte: '≥',
  startswith: 'starts with', istartswith: 'starts with (any case)',
  endswith: 'ends with', iendswith: 'ends with (any case)',
  contains: 'contains', icontains: 'contains (any case)', matches: 'matches (regex)',
  notcontains: 'does not contain', inotcontains: 'does not contain (any case)',
  isnull: 'is empty', includes: 'is one of', excludes: 'is none of', len_eq: 'length =',
};

let fieldsPromise = null;
export function loadFields() {
  if (!fieldsPromise) {
    fieldsPromise = api('/v1/observability/chat-completion-fields').catch((err) => {
      fieldsPromise = null;
      throw err;
    });
  }
  return fieldsPromise;
}

const optionCache = new Map();
function fieldOptions(name) {
  if (!optionCache.has(name)) {
    optionCache.set(name, api(`/v1/observability/chat-completion-fields/${encodeURIComponent(name)}/options?operator=eq`)
      .then((r) => (r.options || []).filter((o) => typeof o === 'string'))
      .catch(() => []));
  }
  return optionCache.get(name);
}

// One {field, op, value} condition row.
function conditionRow(defs, groups, onRemove, initial) {
  const fieldSel = el('select', { 'aria-label': 'Field', class: 'cond-field' });
  for (const g of groups) {
    const members = defs.filter((d) => d.group === g.name);
    if (!members.length) continue;
    fieldSel.append(el('optgroup', { label: g.label }, ...members.map((d) => el('option', { value: d.name }, d.label === d.name ? d.name : `${d.label} (${d.name})`))));
  }
  const orphans = defs.filter((d) => !groups.some((g) => g.name === d.group));
  for (const d of orphans) fieldSel.append(el('option', { value: d.name }, d.label));
  const opSel = el('select', { 'aria-label': 'Operator', class: 'cond-op' });
  const valueBox = el('span', { class: 'cond-value' });
  let input = null;
  const listId = nextId('opts');
  const datalist = el('datalist', { id: listId });
  const row = el('div', { class: 'cond params', role: 'group', 'aria-label': 'Condition' }, fieldSel, opSel,
    el('span', { class: 'toolbar' }, valueBox,
      button('Remove', () => onRemove(row), { class: 'small', 'aria-label': 'Remove condition' })),
    datalist);

  const def = () => defs.find((d) => d.name === fieldSel.value) || defs[0];

  function setOps() {
    const d = def();
    const previous = opSel.value;
    clear(opSel);
    for (const op of d.supported_operators) opSel.append(el('option', { value: op }, OP_LABELS[op] || op));
    if (d.supported_operators.includes(previous)) opSel.value = previous;
    setValue();
  }

  function setValue() {
    const d = def();
    const op = opSel.value;
    const old = input ? input.value : '';
    clear(valueBox);
    if (op === 'isnull' || (d.type === 'BOOL' && (op === 'eq' || op === 'neq'))) {
      input = el('select', { 'aria-label': 'Value' }, el('option', { value: 'true' }, 'true'), el('option', { value: 'false' }, 'false'));
    } else if (op === 'includes' || op === 'excludes') {
      input = el('input', { type: 'text', 'aria-label': 'Values, comma-separated', placeholder: 'a, b, c' });
    } else if (op === 'len_eq' || d.type === 'INT' || d.type === 'FLOAT') {
      input = el('input', { type: 'number', 'aria-label': 'Value', step: d.type === 'FLOAT' ? 'any' : '1' });
    } else if (d.type === 'TIMESTAMP') {
      input = el('input', { type: 'datetime-local', 'aria-label': 'Value', step: '1' });
    } else {
      input = el('input', { type: 'text', 'aria-label': 'Value', list: listId });
    }
    if (old && input.tagName === 'INPUT' && input.type !== 'datetime-local') input.value = old;
    valueBox.append(input);
    clear(datalist);
    const hasOptions = d.type === 'ENUM' || (d.name.startsWith('extra_fields.') && d.type === 'TEXT');
    if (hasOptions && input.tagName === 'INPUT' && input.type === 'text') {
      fieldOptions(d.name).then((opts) => {
        for (const o of opts.slice(0, 200)) datalist.append(el('option', { value: o }));
      });
    }
  }

  fieldSel.addEventListener('change', setOps);
  opSel.addEventListener('change', setValue);
  if (initial && defs.some((d) => d.name === initial.field)) fieldSel.value = initial.field;
  setOps();
  if (initial) {
    if (def().supported_operators.includes(initial.op)) {
      opSel.value = initial.op;
      setValue();
    }
    const v = initial.value;
    if (Array.isArray(v)) input.value = v.join(', ');
    else if (v !== undefined && v !== null && input.type !== 'datetime-local') input.value = String(v);
  }

  row.filterValue = () => {
    const d = def();
    const op = opSel.value;
    const raw = input.value;
    const numeric = d.type === 'INT' || d.type === 'FLOAT';
    let value;
    if (op === 'isnull' || input.tagName === 'SELECT') value = raw === 'true';
    else if (op === 'includes' || op === 'excludes') {
      value = raw.split(',').map((s) => s.trim()).filter((s) => s !== '').map((s) => (numeric ? Number(s) : s));
    } else if (op === 'len_eq' || numeric) value = raw === '' ? null : Number(raw);
    else if (d.type === 'TIMESTAMP') value = raw ? new Date(raw).toISOString() : '';
    else value = raw;
    return { field: d.name, op, value };
  };
  return row;
}

// An AND/OR group of conditions and groups; `value()` gives the API's filter tree.
function groupBox(defs, groups, depth, onRemove, initial) {
  const mode = el('select', { 'aria-label': 'Combine with', class: 'group-mode' },
    el('option', { value: 'AND' }, 'all of (AND)'), el('option', { value: 'OR' }, 'any of (OR)'));
  const children = el('div', { class: 'group-children' });
  const box = el('fieldset', { class: `filter-group depth-${depth}` },
    el('legend', {}, 'Match ', mode),
    children);
  const addCondition = (init) => {
    const row = conditionRow(defs, groups, (r) => r.remove(), init);
    children.append(row);
    return row;
  };
  const addGroup = (init) => {
    const g = groupBox(defs, groups, depth + 1, (node) => node.remove(), init);
    children.append(g);
    return g;
  };
  const actions = el('div', { class: 'toolbar' },
    button('Add condition', () => addCondition().querySelector('select')?.focus(), { class: 'small add-condition' }));
  if (depth < 9) actions.append(button('Add group', () => addGroup().querySelector('select')?.focus(), { class: 'small add-group' }));
  if (onRemove) actions.append(button('Remove group', () => onRemove(box), { class: 'small' }));
  box.append(actions);
  if (initial) {
    const key = initial.OR ? 'OR' : 'AND';
    mode.value = key;
    for (const child of initial[key] || []) {
      if (child && (child.AND || child.OR)) addGroup(child);
      else if (child && child.field) addCondition(child);
    }
  }
  box.filterValue = () => {
    const parts = [];
    for (const child of children.children) {
      if (typeof child.filterValue === 'function') {
        const v = child.filterValue();
        if (v) parts.push(v);
      }
    }
    return parts.length ? { [mode.value]: parts } : null;
  };
  return box;
}

// The builder: `node` to insert, `value()` -> the `filters` of search_params (or null).
export function filterBuilder(defs, groups, initial) {
  let start = initial || null;
  if (start && start.field) start = { AND: [start] };
  const root = groupBox(defs, groups, 0, null, start);
  return { node: root, value: () => root.filterValue() };
}

export function textFilter(text) {
  if (!text) return null;
  return {
    OR: [
      { field: 'request_text', op: 'icontains', value: text },
      { field: 'response_text', op: 'icontains', value: text },
    ],
  };
}

export function combine(...filters) {
  const parts = filters.filter(Boolean);
  if (!parts.length) return null;
  return parts.length === 1 ? parts[0] : { AND: parts };
}

function messagesNode(messages) {
  if (!messages || !messages.length) return el('p', { class: 'muted' }, 'none');
  return el('div', { class: 'chat messages' }, ...messages.map((m) => el('article', { class: `message ${String(m.role || '').replace(/[^a-z]/g, '')}` },
    el('header', {}, el('strong', {}, String(m.role || '?')), m.name ? ` ${m.name}` : '', m.tool_call_id ? ` (call ${m.tool_call_id})` : ''),
    contentNode(m.content),
    m.tool_calls && m.tool_calls.length ? el('pre', {}, JSON.stringify(m.tool_calls, null, 2)) : '')));
}

// An event in full, with its actions; `openEvent` shows another event.
export async function eventDetail(box, eventId, openEvent) {
  loading(box);
  let ev;
  try {
    ev = await api(`/v1/observability/chat-completion-events/${encodeURIComponent(eventId)}`);
  } catch (err) {
    clear(box);
    showError(box, err);
    return;
  }
  clear(box);
  const extra = Object.entries(ev.extra_fields || {});
  const similarBox = el('div', { 'aria-live': 'polite' });
  const judgeBox = el('div', { 'aria-live': 'polite' });
  const datasetBox = el('div', { 'aria-live': 'polite' });
  box.append(
    el('header', { class: 'toolbar' },
      el('h2', { id: 'event-title', tabindex: '-1' }, 'Event ', el('span', { class: 'mono' }, ev.event_id)),
      button('Close', () => { clear(box); box.hidden = true; }, { class: 'small' })),
    el('dl', { class: 'facts' },
      el('dt', {}, 'Correlation id'), el('dd', { class: 'mono' }, ev.correlation_id),
      el('dt', {}, 'Created'), el('dd', {}, when(ev.created_at)),
      el('dt', {}, 'Tokens'), el('dd', {}, `${ev.nb_input_tokens} in, ${ev.nb_output_tokens} out`),
      el('dt', {}, 'Messages'), el('dd', {}, String(ev.nb_messages))),
    el('h3', {}, 'Extra fields'),
    extra.length ? grid(['Key', 'Value'], extra, ([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]) : el('p', { class: 'muted' }, 'none'),
    el('h3', {}, 'Request messages'), messagesNode(ev.request_messages),
    el('h3', {}, 'Response messages'), messagesNode(ev.response_messages),
    ev.enabled_tools && ev.enabled_tools.length
      ? el('details', {}, el('summary', {}, `Enabled tools (${ev.enabled_tools.length})`), el('pre', {}, JSON.stringify(ev.enabled_tools, null, 2)))
      : '',
    el('div', { class: 'toolbar' },
      button('Similar events', () => similar(), { id: 'similar-events' }),
      button('Judge this event', () => judge(), { id: 'judge-event' }),
      button('Add to a dataset', () => toDataset())),
    similarBox, judgeBox, datasetBox);
  box.hidden = false;
  box.querySelector('#event-title')?.focus();

  async function similar() {
    loading(similarBox, 'Looking for similar events (the first search embeds recent events: it may take a while)…');
    try {
      const res = await api(`/v1/observability/chat-completion-events/${encodeURIComponent(ev.event_id)}/similar-events`);
      clear(similarBox);
      const rows = res.completion_events.results || [];
      similarBox.append(el('h3', {}, 'Similar events'));
      if (!rows.length) {
        const note = el('div', {});
        empty(note, 'No similar events.');
        similarBox.append(note);
        return;
      }
      similarBox.append(grid(['Event', 'Created', 'Correlation id', 'Extra fields'], rows, (r) => [
        button(r.event_id, () => openEvent(r.event_id), { class: 'link mono' }),
        when(r.created_at), r.correlation_id, extraSummary(r.extra_fields)]));
    } catch (err) {
      clear(similarBox);
      showError(similarBox, err);
    }
  }

  async function judge() {
    loading(judgeBox);
    let judges;
    try {
      judges = (await api('/v1/observability/judges?page_size=100')).judges.results;
    } catch (err) {
      clear(judgeBox);
      showError(judgeBox, err);
      return;
    }
    clear(judgeBox);
    judgeBox.append(el('h3', {}, 'Judge this event'));
    if (!judges.length) {
      judgeBox.append(el('p', {}, 'No judges yet: ', el('a', { href: '/console/judges' }, 'create one'), '.'));
      return;
    }
    const sel = el('select', {}, ...judges.map((j) => el('option', { value: j.id }, j.name)));
    const out = el('div', { 'aria-live': 'polite' });
    const form = el('form', { class: 'toolbar' }, field('Judge', sel), el('button', { type: 'submit' }, 'Run judge'), out);
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      const j = judges.find((x) => x.id === sel.value);
      loading(out);
      try {
        const verdict = await api(`/v1/observability/chat-completion-events/${encodeURIComponent(ev.event_id)}/live-judging`, {
          method: 'POST', body: { judge_definition: judgeDefinition(j) },
        });
        clear(out);
        out.append(verdictNode(verdict));
      } catch (err) {
        clear(out);
        showError(out, err);
      }
    });
    judgeBox.append(form);
    sel.focus();
  }

  async function toDataset() {
    loading(datasetBox);
    let datasets;
    try {
      datasets = (await api('/v1/observability/datasets?page_size=100')).datasets.results;
    } catch (err) {
      clear(datasetBox);
      showError(datasetBox, err);
      return;
    }
    clear(datasetBox);
    datasetBox.append(el('h3', {}, 'Add to a dataset'));
    if (!datasets.length) {
      datasetBox.append(el('p', {}, 'No datasets yet: ', el('a', { href: '/console/datasets' }, 'create one'), '.'));
      return;
    }
    const sel = el('select', {}, ...datasets.map((d) => el('option', { value: d.id }, d.name)));
    const out = el('div', { role: 'status' });
    const form = el('form', { class: 'toolbar' }, field('Dataset', sel), el('button', { type: 'submit' }, 'Add'), out);
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      clear(out);
      try {
        const task = await api(`/v1/observability/datasets/${encodeURIComponent(sel.value)}/imports/from-explorer`, {
          method: 'POST', body: { completion_event_ids: [ev.event_id] },
        });
        out.append(el('span', {}, `Import ${task.status.toLowerCase()}: `),
          el('a', { href: `/console/datasets?dataset=${encodeURIComponent(sel.value)}` }, 'open the dataset'));
      } catch (err) {
        showError(out, err);
      }
    });
    datasetBox.append(form);
  }
}

export function judgeDefinition(j) {
  return {
    name: j.name,
    description: j.description,
    model_name: j.model_name,
    output: j.output,
    instructions: j.instructions,
    tools: j.tools || [],
  };
}

export function verdictNode(verdict) {
  return el('div', { class: 'verdict card' },
    el('p', {}, 'Answer: ', el('strong', { class: 'verdict-answer' }, String(verdict.answer))),
    el('p', {}, 'Analysis:'), el('pre', { class: 'wrap verdict-analysis' }, String(verdict.analysis)));
}

export async function render(root, ctx) {
  clear(root);
  const builderBox = el('div', {});
  const text = el('input', { type: 'search', id: 'event-text', placeholder: 'Words in the messages' });
  const pageSize = el('select', { id: 'event-page-size' },
    ...[20, 50, 100, 200].map((n) => el('option', { value: String(n) }, String(n))));
  const results = el('section', { class: 'card', 'aria-label': 'Events', 'aria-live': 'polite' });
  const detail = el('section', { class: 'card event-detail', 'aria-label': 'Event detail' });
  detail.hidden = true;
  const form = el('form', { class: 'card filters', role: 'search', 'aria-label': 'Filter events' },
    field('Search message text', text, 'Matches request or response text, any case.'),
    el('h2', {}, 'Filters'),
    builderBox,
    el('div', { class: 'toolbar' },
      field('Page size', pageSize),
      el('button', { type: 'submit', class: 'primary', id: 'run-search' }, 'Search'),
      button('Clear', () => { text.value = ''; resetBuilder(); run(); })));
  root.append(el('header', { class: 'toolbar' }, el('h1', {}, 'Observability'),
    el('nav', { class: 'subnav', 'aria-label': 'Observability' },
      el('a', { href: '/console/judges' }, 'Judges'), ' ',
      el('a', { href: '/console/campaigns' }, 'Campaigns'), ' ',
      el('a', { href: '/console/datasets' }, 'Datasets'))),
  form, results, detail);

  let builder = null;
  let defs = [];
  let groups = [];
  loading(builderBox);
  try {
    const fields = await loadFields();
    defs = fields.field_definitions;
    groups = fields.field_groups;
  } catch (err) {
    clear(builderBox);
    showError(builderBox, err);
  }
  function resetBuilder() {
    clear(builderBox);
    if (!defs.length) return;
    builder = filterBuilder(defs, groups);
    builderBox.append(builder.node);
  }
  resetBuilder();

  // Cursor paging: `cursors[i]` opens page i (null: the first page).
  const state = { cursors: [null], page: 0, filters: null };
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    run();
  });

  function run() {
    state.filters = combine(builder ? builder.value() : null, textFilter(text.value.trim()));
    state.cursors = [null];
    state.page = 0;
    load();
  }

  async function load() {
    loading(results);
    const cursor = state.cursors[state.page];
    try {
      const res = await api(`/v1/observability/chat-completion-events/search${qs({ page_size: pageSize.value, cursor })}`, {
        method: 'POST', body: { search_params: { filters: state.filters } },
      });
      const feed = res.completion_events;
      clear(results);
      results.append(el('h2', {}, 'Events'));
      if (!feed.results.length) {
        const note = el('div', {});
        empty(note, state.page ? 'No more events.' : 'No event matches these filters.');
        results.append(note);
      } else {
        results.append(grid(['Created', 'Event', 'Correlation id', 'Tokens in/out', 'Extra fields'], feed.results, (r) => [
          when(r.created_at),
          button(r.event_id.slice(0, 13), () => show(r.event_id), { class: 'link mono', 'aria-label': `Open event ${r.event_id}`, 'data-event-id': r.event_id }),
          r.correlation_id,
          `${r.nb_input_tokens} / ${r.nb_output_tokens}`,
          extraSummary(r.extra_fields)], { class: 'events' }));
      }
      const nav = el('nav', { class: 'toolbar', 'aria-label': 'Pages' }, el('span', {}, `Page ${state.page + 1}`));
      if (state.page > 0) {
        nav.append(button('First page', () => { state.page = 0; load(); }),
          button('Previous page', () => { state.page -= 1; load(); }));
      }
      if (feed.cursor) {
        nav.append(button('Next page', () => {
          state.cursors[state.page + 1] = feed.cursor;
          state.page += 1;
          load();
        }, { id: 'next-page' }));
      }
      results.append(nav);
    } catch (err) {
      clear(results);
      showError(results, err);
    }
  }

  function show(eventId) {
    const url = new URL(window.location.href);
    url.searchParams.set('event', eventId);
    window.history.replaceState(null, '', url);
    eventDetail(detail, eventId, show);
  }

  run();
  const wanted = new URLSearchParams(window.location.search).get('event');
  if (wanted) show(wanted);
}
