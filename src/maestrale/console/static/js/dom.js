// DOM building blocks of the console. Text always becomes text nodes: nothing here parses HTML,
// so `<script>` or `onerror=` inside API data shows literally.

const PROPERTIES = new Set(['value', 'checked', 'selected', 'disabled', 'hidden', 'multiple']);
const FORBIDDEN = new Set(['innerhtml', 'outerhtml', 'srcdoc']);

let ids = 0;
/** A fresh element id with a prefix (labels point at their inputs with it). */
export function uniqueId(prefix = 'c') {
  ids += 1;
  return `${prefix}-${ids}`;
}

/** A counter of a view's loads: `const turn = latestOnly();` then, in a load,
 * `const mine = turn(); await …; if (!mine()) return;` so that an answer that arrives after a
 * newer load began (the page's first load after a search, say) is dropped, not shown. */
export function latestOnly() {
  let last = 0;
  return () => {
    last += 1;
    const mine = last;
    return () => mine === last;
  };
}

function append(node, child) {
  if (child === null || child === undefined || child === false || child === '') return;
  if (Array.isArray(child)) {
    child.forEach((c) => append(node, c));
  } else if (child instanceof Node) {
    node.append(child);
  } else {
    node.append(document.createTextNode(String(child)));
  }
}

/** `el('button', {type: 'button', class: 'primary', onclick: fn}, 'Save')`.
 * Attributes are set with setAttribute (values are never parsed as HTML); `on<event>` keys take
 * functions (added as listeners; strings are refused: inline handlers are blocked by the CSP);
 * `value`, `checked`, `selected`, `disabled`, `hidden`, `multiple` are set as properties;
 * `dataset` takes an object. Children: nodes, strings and numbers (as text), arrays, and
 * null / undefined / false (skipped). */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    const lower = key.toLowerCase();
    if (FORBIDDEN.has(lower)) throw new Error(`el(): ${key} is not allowed`);
    if (value === undefined || value === null || value === false) {
      if (PROPERTIES.has(key)) node[key] = false;
      continue;
    }
    if (lower.startsWith('on')) {
      if (typeof value !== 'function') throw new Error(`el(): ${key} must be a function`);
      node.addEventListener(lower.slice(2), value);
    } else if (key === 'dataset') {
      Object.assign(node.dataset, value);
    } else if (PROPERTIES.has(key)) {
      node[key] = value;
    } else if (key === 'className') {
      node.setAttribute('class', String(value));
    } else if (key === 'htmlFor') {
      node.setAttribute('for', String(value));
    } else {
      node.setAttribute(key, value === true ? '' : String(value));
    }
  }
  children.forEach((c) => append(node, c));
  return node;
}

/** Removes every child of `node`; returns it. */
export function clear(node) {
  node.replaceChildren();
  return node;
}

/** Replaces the children of `node` with `children` (as el() takes them: null, undefined and
 * false are skipped, strings become text); returns `node`. Prefer it to node.append(), which
 * turns null into the text "null". */
export function fill(node, ...children) {
  node.replaceChildren();
  children.forEach((c) => append(node, c));
  return node;
}

/** A button that runs `onClick`; `attrs` as el()'s. */
export function button(label, onClick, attrs = {}) {
  return el('button', { type: 'button', ...attrs, onclick: onClick }, label);
}

/** Shows a loading state in `node` (replacing what it held). */
export function loading(node, text = 'Loading…') {
  clear(node);
  const status = el('p', { class: 'loading', role: 'status', 'aria-live': 'polite' }, text);
  node.append(status);
  return status;
}

/** Shows an empty state in `node` (replacing what it held). */
export function empty(node, text = 'Nothing here yet.') {
  clear(node);
  const p = el('p', { class: 'empty' }, text);
  node.append(p);
  return p;
}

/** The message of an error (an ApiError's is the API's own message). */
export function errorText(error) {
  if (error === null || error === undefined) return 'unknown error';
  if (typeof error === 'string') return error;
  if (error.name === 'AbortError') return 'cancelled';
  return error.message || String(error);
}

/** An error box: the message as the API returned it, and its status and code when known. */
export function errorBox(error) {
  const meta = [];
  if (error && typeof error.status === 'number' && error.status > 0) meta.push(`HTTP ${error.status}`);
  if (error && error.code) meta.push(String(error.code));
  return el(
    'div',
    { class: 'error', role: 'alert' },
    el('strong', {}, 'Error: '),
    el('span', { class: 'error-message' }, errorText(error)),
    meta.length ? el('span', { class: 'error-meta' }, ` (${meta.join(', ')})`) : null,
  );
}

/** Shows `error` in `node`, replacing what it held. */
export function showError(node, error) {
  clear(node);
  const box = errorBox(error);
  node.append(box);
  return box;
}

/** A table. `columns`: strings (header and row key) or `{label, key}` or
 * `{label, value: (row) => string | Node}`, each with an optional `class` for its cells
 * (`nowrap` keeps a short value on one line). Rows are objects. Wrapped for horizontal scroll on
 * small screens. */
export function table(columns, rows, { caption } = {}) {
  const cols = columns.map((c) => (typeof c === 'string' ? { label: c, key: c } : c));
  const cell = (col, row) => {
    const v = col.value ? col.value(row) : row[col.key];
    if (v === null || v === undefined) return '';
    if (v instanceof Node || Array.isArray(v)) return v;
    return typeof v === 'object' ? JSON.stringify(v) : String(v);
  };
  return el(
    'div',
    { class: 'table-wrap' },
    el(
      'table',
      {},
      caption ? el('caption', {}, caption) : null,
      el('thead', {}, el('tr', {}, cols.map((c) => el('th', { scope: 'col' }, c.label)))),
      el('tbody', {}, rows.map((r) => el('tr', {}, cols.map((c) => el('td', { class: c.class }, cell(c, r)))))),
    ),
  );
}

/** A labelled field: `formField('Name', el('input', {name: 'name'}), 'hint')`. The input gets
 * an id (when it has none) that the label points at. */
export function formField(label, input, hint) {
  if (!input.id) input.id = uniqueId('f');
  const children = [el('label', { for: input.id }, label), input];
  if (hint) {
    const hintId = `${input.id}-hint`;
    input.setAttribute('aria-describedby', hintId);
    children.push(el('small', { class: 'hint', id: hintId }, hint));
  }
  return el('div', { class: 'field' }, ...children);
}

/** A <select> of `options` (strings or `{value, label}`) with `selected` chosen. */
export function select(options, selected, attrs = {}) {
  return el(
    'select',
    attrs,
    options.map((o) => {
      const opt = typeof o === 'string' ? { value: o, label: o } : o;
      return el('option', { value: opt.value, selected: opt.value === selected }, opt.label);
    }),
  );
}

/** Pretty JSON in a <pre> (as text). */
export function jsonBlock(value) {
  return el('pre', { class: 'json' }, JSON.stringify(value, null, 2));
}

/** A date-time for people, from ISO text or Unix seconds. */
export function when(value) {
  if (value === null || value === undefined || value === '') return '';
  const d = typeof value === 'number' ? new Date(value * 1000) : new Date(value);
  return Number.isNaN(d.getTime()) ? String(value) : d.toLocaleString();
}

/** A byte count for people. */
export function bytes(n) {
  if (typeof n !== 'number') return '';
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i += 1;
  }
  return `${i ? v.toFixed(1) : v} ${units[i]}`;
}

/** Previous and next buttons for a page of one of the API's paged lists (its `previous` and
 * `next`); `go(-1)` or `go(1)` moves. */
export function pageNav(page, label, go) {
  const nav = el('nav', { class: 'toolbar', 'aria-label': label });
  if (page.previous) nav.append(button('Previous page', () => go(-1)));
  if (page.next) nav.append(button('Next page', () => go(1)));
  return nav;
}
