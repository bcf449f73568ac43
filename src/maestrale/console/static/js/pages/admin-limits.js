// Admin: the limits in force. Rate limits (requests per second per workspace, tokens per minute
// and per month per model) are read from the API (they are set with `maestrale limits set` on
// the server: the API has no route to change them); the monthly spend limit is read and set.
import { api } from '../api.js';
import { el, clear, loading, empty, showError, formField, table } from '../dom.js';

const num = (v) => (v === null || v === undefined ? 'unlimited' : Number(v).toLocaleString());

export async function render(root, ctx) {
  clear(root);
  const rateBox = el('section', { class: 'card', 'aria-labelledby': 'rate-h' });
  const spendBox = el('section', { class: 'card', 'aria-labelledby': 'spend-h' });
  root.append(el('header', { class: 'toolbar' }, el('h1', {}, 'Rate and spend limits')), spendBox, rateBox);

  async function loadRates() {
    loading(rateBox);
    try {
      const rates = await api('/v1/admin/rate-limit');
      clear(rateBox);
      const models = Object.entries(rates.tokens_limits_by_model || {});
      rateBox.append(el('h2', { id: 'rate-h' }, 'Rate limits'),
        el('p', {}, 'Requests per second, per workspace: ', el('strong', { id: 'rps' }, num(rates.requests_per_second))));
      if (!models.length) {
        const note = el('div', {});
        empty(note, 'No per-model token limits.');
        rateBox.append(note);
      } else {
        rateBox.append(table([
          { label: 'Model', value: ([m]) => m },
          { label: 'Tokens per minute', value: ([, l]) => num(l.tokens_per_minute) },
          { label: 'Tokens per month', value: ([, l]) => num(l.tokens_per_month) },
        ], models, { caption: 'Token limits per workspace and model' }));
      }
      rateBox.append(el('p', { class: 'hint' }, 'These are changed on the server with ',
        el('code', {}, 'maestrale limits set'), ' / ', el('code', {}, 'set-model'), ' (the public API reads them only).'));
    } catch (err) {
      showError(rateBox, err);
    }
  }

  async function loadSpend() {
    loading(spendBox);
    let spend;
    try {
      spend = (await api('/v1/admin/spend-limit')).limits;
    } catch (err) {
      showError(spendBox, err);
      return;
    }
    clear(spendBox);
    const c = spend.completion;
    const currency = spend.currency || '';
    const money = (v) => (v === null || v === undefined ? '—' : `${Number(v).toLocaleString(undefined, { maximumFractionDigits: 4 })} ${currency}`);
    const facts = el('dl', { class: 'facts' },
      el('dt', {}, 'Monthly limit'), el('dd', { id: 'spend-limit' }, c.no_monthly_limit ? 'none' : money(c.usage_limit)),
      el('dt', {}, 'Spent this month'), el('dd', {}, money(c.usage ?? c.total_usage)),
      el('dt', {}, 'Limit reached'), el('dd', {}, c.monthly_limit_reached ? 'yes: calls are refused until next month' : 'no'));
    if (!c.no_monthly_limit && c.usage_limit) {
      const used = Math.min(1, Number(c.usage ?? 0) / Number(c.usage_limit));
      facts.append(el('dt', {}, 'Used'), el('dd', {}, el('progress', { max: '1', value: used, 'aria-label': 'Share of the limit spent' }), ` ${(used * 100).toFixed(1)}%`));
    }
    const amount = el('input', { type: 'number', min: '0', step: 'any', id: 'spend-amount' });
    if (!c.no_monthly_limit && c.usage_limit !== null) amount.value = c.usage_limit;
    const none = el('input', { type: 'checkbox', checked: !!c.no_monthly_limit, id: 'spend-none' });
    const sync = () => { amount.disabled = none.checked; amount.required = !none.checked; };
    none.addEventListener('change', sync);
    sync();
    const out = el('div', { 'aria-live': 'polite' });
    const form = el('form', { class: 'toolbar', 'aria-label': 'Set the spend limit' },
      formField(`Monthly limit (${currency})`, amount),
      el('label', { for: 'spend-none', class: 'check' }, none, ' No monthly limit'),
      el('button', { type: 'submit', class: 'primary' }, 'Save'), out);
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      clear(out);
      const body = none.checked ? { no_monthly_limit: true } : { amount: Number(amount.value) };
      try {
        await api('/v1/admin/spend-limit', { method: 'POST', body });
        await loadSpend();
        spendBox.querySelector('[role=status]')?.remove();
        spendBox.append(el('p', { role: 'status', class: 'info' }, 'Spend limit saved.'));
      } catch (err) {
        showError(out, err);
      }
    });
    spendBox.append(el('h2', { id: 'spend-h' }, 'Spend limit (organization, per month)'), facts, form);
  }

  await Promise.all([loadSpend(), loadRates()]);
}
