// The waterfall of a trace's spans: a tree (nested by parent span), each row a bar offset and
// sized by the span's start and duration relative to the whole trace. A keyboard user moves
// with the arrow keys (up/down: rows, left: the parent, right: the first child, Home/End), the
// selection follows the focus; status shows as text and colour. Span names are text nodes.
import { el } from './dom.js';

/** Microseconds since the epoch of an RFC 3339 time (the API sends microseconds; a Number holds
 * them exactly, nanoseconds it would not); NaN when unreadable. */
export function isoMicros(iso) {
  if (typeof iso !== 'string') return NaN;
  const m = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:?\d\d)?$/i.exec(iso.trim());
  if (!m) return NaN;
  const base = Date.parse(m[1] + (m[3] || 'Z'));
  if (Number.isNaN(base)) return NaN;
  return base * 1000 + Number((m[2] || '').padEnd(6, '0').slice(0, 6));
}

const UNITS = [['ns', 1], ['µs', 1e3], ['ms', 1e6], ['s', 1e9]];

/** A duration in nanoseconds for people: 850 ns, 12.3 ms, 1.52 s, 2 min 3 s. */
export function duration(ns) {
  const n = Number(ns);
  if (!Number.isFinite(n) || n < 0) return '';
  for (let i = 0; i < UNITS.length; i += 1) {
    const [unit, size] = UNITS[i];
    const value = Number((n / size).toPrecision(3));
    if (unit === 's' ? value < 60 : value < 1000) return `${value} ${unit}`;
  }
  const s = Math.round(n / 1e9);
  return `${Math.floor(s / 60)} min ${s % 60} s`;
}

/** The words of a status code: a reader never depends on the colour. */
export function statusLabel(code) {
  if (code === 'Error') return 'Error';
  if (code === 'Ok') return 'OK';
  return 'Unset';
}

/** The spans in display order, each `{span, depth, parent, children}` (indexes into the list):
 * children under their parent, siblings by start. A span whose parent never arrived is shown
 * as a root (`orphan`); a cycle of parents cannot loop. */
export function spanTree(spans) {
  const byId = new Map();
  for (const s of spans) if (s && s.span_id && !byId.has(s.span_id)) byId.set(s.span_id, s);
  const start = (s) => isoMicros(s.start_time);
  const order = (a, b) => (start(a) - start(b)) || String(a.span_name).localeCompare(String(b.span_name));
  const kids = new Map();
  const roots = [];
  for (const s of byId.values()) {
    const p = s.parent_span_id;
    if (p && p !== s.span_id && byId.has(p)) {
      if (!kids.has(p)) kids.set(p, []);
      kids.get(p).push(s);
    } else {
      roots.push(s);
    }
  }
  const rows = [];
  const seen = new Set();
  const walk = (root) => {
    const stack = [{ span: root, depth: 0, parent: -1 }];
    while (stack.length) {
      const { span, depth, parent } = stack.pop();
      if (seen.has(span.span_id)) continue;
      seen.add(span.span_id);
      const index = rows.length;
      const orphan = depth === 0 && Boolean(span.parent_span_id) && !byId.has(span.parent_span_id);
      rows.push({ span, depth, parent, children: [], orphan });
      if (parent >= 0) rows[parent].children.push(index);
      const mine = (kids.get(span.span_id) || []).slice().sort(order);
      for (let i = mine.length - 1; i >= 0; i -= 1) stack.push({ span: mine[i], depth: depth + 1, parent: index });
    }
  };
  roots.sort(order).forEach(walk);
  // Spans caught in a cycle of parents: shown as roots of their own.
  [...byId.values()].filter((s) => !seen.has(s.span_id)).sort(order).forEach(walk);
  return rows;
}

/** The time window of the trace: `{t0, total}` in microseconds, covering the trace's own times
 * and every span's. */
export function timeWindow(trace, spans) {
  let t0 = isoMicros(trace && trace.start_time);
  let t1 = t0 + Number(trace && trace.duration_ns) / 1000;
  for (const s of spans) {
    const a = isoMicros(s.start_time);
    if (Number.isNaN(a)) continue;
    const b = a + Math.max(0, Number(s.duration_ns) || 0) / 1000;
    if (Number.isNaN(t0) || a < t0) t0 = a;
    if (Number.isNaN(t1) || b > t1) t1 = b;
  }
  if (Number.isNaN(t0)) return { t0: 0, total: 1 };
  return { t0, total: Math.max(1, (Number.isNaN(t1) ? t0 : t1) - t0) };
}

const clamp = (v) => Math.min(100, Math.max(0, v));

function axis(total) {
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => {
    const tick = el('span', { class: 'wf-tick' }, duration(Math.round(f * total * 1000)));
    tick.style.setProperty('left', `${f * 100}%`);
    return tick;
  });
  return el('div', { class: 'wf-row wf-head', 'aria-hidden': 'true' },
    el('span', {}, 'Span'), el('span', {}, 'Status'), el('span', {}, 'Duration'),
    el('span', { class: 'wf-track wf-axis' }, ticks));
}

function row(entry, win) {
  const s = entry.span;
  const status = s.status_code === 'Error' ? 'error' : s.status_code === 'Ok' ? 'ok' : 'unset';
  const startUs = isoMicros(s.start_time);
  const offset = Number.isNaN(startUs) ? 0 : clamp(((startUs - win.t0) / win.total) * 100);
  const width = Math.min(100 - offset, Math.max(0.4, ((Number(s.duration_ns) || 0) / 1000 / win.total) * 100));
  const bar = el('span', { class: `wf-bar wf-${status}` });
  bar.style.setProperty('left', `${offset}%`);
  bar.style.setProperty('width', `${width}%`);
  const name = el('span', { class: 'wf-name' },
    el('span', { class: 'wf-label', title: s.span_name }, s.span_name || '(unnamed span)'),
    el('small', { class: 'muted' }, [s.service_name, entry.orphan ? 'parent not received' : null]
      .filter(Boolean).join(' · ')));
  name.style.setProperty('--depth', String(Math.min(entry.depth, 24)));
  return el('li', {
    role: 'treeitem',
    class: 'wf-row',
    'aria-level': String(entry.depth + 1),
    'aria-selected': 'false',
    tabindex: '-1',
    dataset: { spanId: s.span_id },
  },
  name,
  el('span', { class: `badge ${status === 'error' ? 'bad' : status === 'ok' ? 'ok' : ''}` }, statusLabel(s.status_code)),
  el('span', { class: 'wf-dur' }, duration(s.duration_ns)),
  el('span', { class: 'wf-track' }, bar));
}

/** The waterfall of `spans` within `trace`; `onSelect(span)` runs when the selection moves.
 * Returns `{node, select(spanId)}`. */
export function waterfall(trace, spans, onSelect) {
  const entries = spanTree(spans);
  const win = timeWindow(trace, spans);
  const items = entries.map((e) => row(e, win));
  const tree = el('ul', { role: 'tree', class: 'wf-rows', 'aria-label': 'Spans of the trace' }, items);
  let current = -1;

  function choose(index, focus = true) {
    if (index < 0 || index >= items.length) return;
    if (current >= 0) {
      items[current].setAttribute('aria-selected', 'false');
      items[current].setAttribute('tabindex', '-1');
    }
    current = index;
    items[index].setAttribute('aria-selected', 'true');
    items[index].setAttribute('tabindex', '0');
    if (focus) items[index].focus();
    onSelect(entries[index].span);
  }

  tree.addEventListener('click', (ev) => {
    const item = ev.target.closest('[role="treeitem"]');
    if (item) choose(items.indexOf(item));
  });
  tree.addEventListener('keydown', (ev) => {
    if (current < 0) return;
    const entry = entries[current];
    const moves = {
      ArrowDown: current + 1,
      ArrowUp: current - 1,
      Home: 0,
      End: items.length - 1,
      ArrowLeft: entry.parent,
      ArrowRight: entry.children.length ? entry.children[0] : -1,
    };
    if (!(ev.key in moves)) return;
    ev.preventDefault();
    choose(moves[ev.key]);
  });

  return {
    node: el('div', { class: 'waterfall' }, axis(win.total), tree),
    select(spanId) {
      const index = entries.findIndex((e) => e.span.span_id === spanId);
      choose(index >= 0 ? index : 0, false);
    },
  };
}
