// Admin: usage per month and model. The API answers one month at a time (with previous_month
// to go back): the page reads up to six months and draws an SVG bar chart (months on the x
// axis, one bar per model) with DOM calls (createElementNS, attributes, text nodes), plus the
// same numbers as a table. Metric: tokens, requests or cost.
import { api } from '../api.js';
import { el, clear, loading, empty, showError, formField, table } from '../dom.js';

const NS = 'http://www.w3.org/2000/svg';
const PALETTE = ['#2563eb', '#db2777', '#16a34a', '#ea580c', '#7c3aed', '#0891b2', '#ca8a04', '#dc2626', '#4b5563', '#0d9488'];
const CATEGORIES = ['completion', 'chat', 'audio', 'audio_characters', 'connectors', 'ocr'];

function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return node;
}

const sum = (rows, key = 'value') => (rows || []).reduce((t, r) => t + (Number(r[key]) || 0), 0);

// One month's totals per model: {model: {tokens, requests, cost}}.
export function monthTotals(usage) {
  const out = {};
  const add = (model, tokens, requests, cost) => {
    const t = out[model] || (out[model] = { tokens: 0, requests: 0, cost: 0 });
    t.tokens += tokens;
    t.requests += requests;
    t.cost += cost;
  };
  const categories = CATEGORIES.map((c) => usage[c]);
  const lib = usage.libraries_api || {};
  categories.push(lib.tokens, lib.pages, lib.audio_seconds);
  for (const cat of categories) {
    for (const [model, m] of Object.entries((cat && cat.models) || {})) {
      const tokens = sum(m.input) + sum(m.output);
      add(model, tokens, sum(m.requests), sum(m.input, 'cost') + sum(m.output, 'cost'));
    }
  }
  return out;
}

function niceMax(v) {
  if (v <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  const n = v / p;
  return (n <= 1 ? 1 : n <= 2 ? 2 : n <= 5 ? 5 : 10) * p;
}

function fmt(v, metric, currency) {
  if (metric === 'cost') return `${v.toLocaleString(undefined, { maximumFractionDigits: 4 })} ${currency || ''}`.trim();
  return Math.round(v).toLocaleString();
}

// The chart: `months` = [{label, totals}], `models` = names (one color each).
export function barChart(months, models, metric, currency) {
  const width = 720;
  const height = 320;
  const left = 70;
  const bottom = 40;
  const top = 16;
  const plotH = height - top - bottom;
  const plotW = width - left - 10;
  let max = 0;
  for (const m of months) for (const model of models) max = Math.max(max, m.totals[model]?.[metric] || 0);
  max = niceMax(max);
  const title = `${metric === 'cost' ? 'Cost' : metric === 'requests' ? 'Requests' : 'Tokens'} per month and model`;
  const chart = svg('svg', {
    viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-labelledby': 'usage-chart-title', class: 'usage-chart', width: '100%', preserveAspectRatio: 'xMidYMid meet',
  }, svg('title', { id: 'usage-chart-title' }, title));
  // Grid lines and y labels.
  for (let i = 0; i <= 4; i += 1) {
    const v = (max * i) / 4;
    const y = top + plotH - (plotH * i) / 4;
    chart.append(svg('line', { x1: left, x2: width - 10, y1: y, y2: y, stroke: '#d1d5db', 'stroke-width': 1 }));
    chart.append(svg('text', { x: left - 6, y: y + 4, 'text-anchor': 'end', 'font-size': 11, fill: '#4b5563' }, fmt(v, metric, '')));
  }
  const groupW = plotW / Math.max(1, months.length);
  const barW = Math.max(2, Math.min(36, (groupW - 12) / Math.max(1, models.length)));
  months.forEach((m, i) => {
    const gx = left + i * groupW + (groupW - barW * models.length) / 2;
    models.forEach((model, j) => {
      const v = m.totals[model]?.[metric] || 0;
      const h = (plotH * v) / max;
      const bar = svg('rect', {
        x: gx + j * barW, y: top + plotH - h, width: Math.max(1, barW - 2), height: Math.max(0, h), fill: PALETTE[j % PALETTE.length], class: 'bar',
        'data-model': model, 'data-month': m.label,
      }, svg('title', {}, `${model}, ${m.label}: ${fmt(v, metric, currency)}`));
      chart.append(bar);
    });
    chart.append(svg('text', { x: left + i * groupW + groupW / 2, y: height - bottom + 18, 'text-anchor': 'middle', 'font-size': 12, fill: '#111827' }, m.label));
  });
  chart.append(svg('line', { x1: left, x2: left, y1: top, y2: top + plotH, stroke: '#6b7280' }));
  const legend = el('ul', { class: 'legend' }, ...models.map((model, j) => el('li', {},
    svg('svg', { width: 12, height: 12, 'aria-hidden': 'true' }, svg('rect', { width: 12, height: 12, fill: PALETTE[j % PALETTE.length] })),
    ` ${model}`)));
  return el('figure', { class: 'chart' }, chart, el('figcaption', {}, title), legend);
}

export async function render(root, ctx) {
  clear(root);
  const now = new Date();
  const month = el('input', { type: 'month', id: 'usage-month', value: `${now.getUTCFullYear()}-${String(now.getUTCMonth() + 1).padStart(2, '0')}` });
  const span = el('select', { id: 'usage-span' }, ...[3, 6, 12].map((n) => el('option', { value: String(n), selected: n === 6 }, `${n} months`)));
  const metric = el('select', { id: 'usage-metric' }, el('option', { value: 'tokens' }, 'Tokens'), el('option', { value: 'requests' }, 'Requests'), el('option', { value: 'cost' }, 'Cost'));
  const workspace = el('select', { id: 'usage-workspace' }, el('option', { value: '' }, 'All workspaces'));
  const out = el('section', { class: 'card', 'aria-live': 'polite', 'aria-label': 'Usage' });
  const form = el('form', { class: 'toolbar card', 'aria-label': 'Usage period' },
    formField('Up to month', month), formField('Span', span), formField('Workspace', workspace), formField('Metric', metric),
    el('button', { type: 'submit', class: 'primary' }, 'Show'));
  root.append(el('header', { class: 'toolbar' }, el('h1', {}, 'Usage')), form, out);
  api('/v1/admin/workspaces?page_size=1000').then((r) => {
    for (const w of r.items) workspace.append(el('option', { value: w.uuid }, w.name));
  }).catch(() => {});

  let months = [];
  let currency = '';
  async function load() {
    loading(out);
    const [y, m] = (month.value || '').split('-').map(Number);
    months = [];
    try {
      let year = y;
      let mon = m;
      for (let i = 0; i < Number(span.value); i += 1) {
        const params = new URLSearchParams({ year: String(year), month: String(mon) });
        if (workspace.value) params.set('workspace_id', workspace.value);
        const usage = await api(`/v1/admin/usage?${params}`);
        currency = usage.currency_symbol || usage.currency || '';
        months.unshift({ label: `${year}-${String(mon).padStart(2, '0')}`, totals: monthTotals(usage) });
        if (!usage.previous_month) break;
        [year, mon] = usage.previous_month.split('-').map(Number);
      }
    } catch (err) {
      showError(out, err);
      return;
    }
    draw();
  }

  function draw() {
    clear(out);
    const key = metric.value;
    const models = [...new Set(months.flatMap((m) => Object.keys(m.totals)))].sort();
    if (!models.length) {
      empty(out, 'No usage in these months.');
      return;
    }
    out.append(barChart(months, models, key, currency));
    const rows = [];
    for (const m of months) for (const model of models) if (m.totals[model]) rows.push({ month: m.label, model, ...m.totals[model] });
    out.append(table([
      { label: 'Month', key: 'month' },
      { label: 'Model', key: 'model' },
      { label: 'Tokens', value: (r) => fmt(r.tokens, 'tokens') },
      { label: 'Requests', value: (r) => fmt(r.requests, 'requests') },
      { label: 'Cost', value: (r) => fmt(r.cost, 'cost', currency) },
    ], rows, { caption: 'Usage per month and model' }));
  }

  form.addEventListener('submit', (ev) => { ev.preventDefault(); load(); });
  metric.addEventListener('change', () => { if (months.length) draw(); });
  await load();
}
