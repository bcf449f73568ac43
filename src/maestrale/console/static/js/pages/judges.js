// Judges: list, create (CLASSIFICATION options or a REGRESSION range), edit, delete, and try
// one on an event (by id or picked from the latest events) or on messages typed here.
import { api } from '../api.js';
import { el, clear, loading, empty, showError, pageNav } from '../dom.js';
import { ask } from './conversation.js';
import {
  button, field, grid, when, qs, extraSummary, judgeDefinition, verdictNode,
} from './observability.js';

function optionRow(value = '', description = '') {
  const v = el('input', { type: 'text', 'aria-label': 'Option value', required: '', maxlength: '500', class: 'opt-value' });
  const d = el('input', { type: 'text', 'aria-label': 'Option description', class: 'opt-description' });
  v.value = value;
  d.value = description;
  const row = el('div', { class: 'toolbar option-row' }, v, d);
  row.append(button('Remove', () => row.remove(), { class: 'small', 'aria-label': 'Remove option' }));
  row.optionValue = () => ({ value: v.value.trim(), description: d.value });
  return row;
}

function judgeForm(judge, models, onSaved, onCancel) {
  const name = el('input', { type: 'text', required: '', maxlength: '500', autocomplete: 'off' });
  const description = el('input', { type: 'text', autocomplete: 'off' });
  const model = el('select', { required: '' });
  const ids = models.slice();
  if (judge && !ids.includes(judge.model_name)) ids.unshift(judge.model_name);
  for (const id of ids) model.append(el('option', { value: id, selected: judge ? id === judge.model_name : false }, id));
  const instructions = el('textarea', { rows: '5', required: '' });
  const type = el('select', {}, el('option', { value: 'CLASSIFICATION' }, 'Classification (pick an option)'),
    el('option', { value: 'REGRESSION' }, 'Regression (a score in a range)'));
  const options = el('div', { class: 'options' });
  const addOption = button('Add option', () => { options.append(optionRow()); options.lastChild.querySelector('input').focus(); }, { class: 'small' });
  const classBox = el('fieldset', {}, el('legend', {}, 'Options'), options, addOption);
  const min = el('input', { type: 'number', step: 'any' });
  const max = el('input', { type: 'number', step: 'any' });
  const minD = el('input', { type: 'text' });
  const maxD = el('input', { type: 'text' });
  const regBox = el('fieldset', {}, el('legend', {}, 'Range'),
    el('div', { class: 'toolbar' }, field('Minimum', min), field('Meaning of the minimum', minD)),
    el('div', { class: 'toolbar' }, field('Maximum', max), field('Meaning of the maximum', maxD)));
  const error = el('div', { role: 'alert' });
  name.value = judge?.name || '';
  description.value = judge?.description || '';
  instructions.value = judge?.instructions || '';
  const out = judge?.output || { type: 'CLASSIFICATION', options: [{ value: 'good', description: 'the answer is right and helpful' }, { value: 'bad', description: 'it is not' }] };
  type.value = out.type;
  for (const o of out.options || []) options.append(optionRow(o.value, o.description));
  min.value = out.min ?? 0;
  max.value = out.max ?? 1;
  minD.value = out.min_description || '';
  maxD.value = out.max_description || '';
  const sync = () => { classBox.hidden = type.value !== 'CLASSIFICATION'; regBox.hidden = type.value !== 'REGRESSION'; };
  type.addEventListener('change', sync);
  sync();
  const submit = el('button', { type: 'submit', class: 'primary' }, judge ? 'Save judge' : 'Create judge');
  const form = el('form', { class: 'card', 'aria-label': judge ? 'Edit judge' : 'New judge' },
    el('h2', {}, judge ? `Edit ${judge.name}` : 'New judge'),
    field('Name', name), field('Description', description), field('Model', model),
    field('Instructions', instructions, 'What the judge looks for in the conversation.'),
    field('Output', type), classBox, regBox, error,
    el('div', { class: 'toolbar' }, submit, button('Cancel', onCancel)));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clear(error);
    const output = type.value === 'CLASSIFICATION'
      ? { type: 'CLASSIFICATION', options: [...options.children].map((r) => r.optionValue()) }
      : {
        type: 'REGRESSION', min: Number(min.value), max: Number(max.value), min_description: minD.value, max_description: maxD.value,
      };
    const body = {
      name: name.value.trim(), description: description.value, model_name: model.value, output, instructions: instructions.value, tools: [],
    };
    submit.disabled = true;
    try {
      if (judge) {
        await api(`/v1/observability/judges/${encodeURIComponent(judge.id)}`, { method: 'PUT', body });
        onSaved(judge.id);
      } else {
        const created = await api('/v1/observability/judges', { method: 'POST', body });
        onSaved(created.id);
      }
    } catch (err) {
      showError(error, err);
    } finally {
      submit.disabled = false;
    }
  });
  setTimeout(() => name.focus(), 0);
  return form;
}

function outputText(output) {
  if (!output) return '';
  if (output.type === 'CLASSIFICATION') return `classification: ${(output.options || []).map((o) => o.value).join(' / ')}`;
  return `regression: ${output.min} to ${output.max}`;
}

export async function render(root, ctx) {
  clear(root);
  const formBox = el('div', {});
  const listBox = el('section', { class: 'card', 'aria-label': 'Judges' });
  const detail = el('section', { class: 'card', 'aria-live': 'polite' });
  detail.hidden = true;
  let models = [];
  const newJudge = button('New judge', async () => {
    clear(formBox);
    formBox.append(judgeForm(null, models, async (id) => { clear(formBox); await loadList(); select(id); }, () => clear(formBox)));
  }, { class: 'primary', id: 'new-judge' });
  root.append(el('header', { class: 'toolbar' }, el('h1', {}, 'Judges'), newJudge), formBox,
    el('div', { class: 'split' }, listBox, detail));
  try {
    models = ((await api('/v1/models')).data || []).map((m) => m.id);
  } catch {
    models = [];
  }

  const state = { page: 1, q: '' };
  async function loadList() {
    loading(listBox);
    try {
      const res = await api(`/v1/observability/judges${qs({ page: state.page, page_size: 20, q: state.q })}`);
      const page = res.judges;
      clear(listBox);
      const search = el('input', { type: 'search', 'aria-label': 'Search judges by name', placeholder: 'Name contains' });
      search.value = state.q;
      const sf = el('form', { class: 'toolbar', role: 'search' }, search, el('button', { type: 'submit' }, 'Search'));
      sf.addEventListener('submit', (e) => { e.preventDefault(); state.q = search.value.trim(); state.page = 1; loadList(); });
      listBox.append(el('h2', {}, `Judges (${page.count})`), sf);
      if (!page.results.length) {
        const note = el('div', {});
        empty(note, state.q ? 'No judge matches.' : 'No judges yet: create one with "New judge".');
        listBox.append(note);
        return;
      }
      listBox.append(grid(['Judge'], page.results, (j) => [
        el('span', {}, button(j.name, () => select(j.id), { class: 'link', 'data-judge-id': j.id }),
          el('br', {}), el('small', { class: 'muted' }, `${j.model_name}, ${outputText(j.output)}`))]));
      listBox.append(pageNav(page, 'Pages', (step) => { state.page += step; loadList(); }));
    } catch (err) {
      showError(listBox, err);
    }
  }

  async function select(id) {
    detail.hidden = false;
    loading(detail);
    let judge;
    try {
      judge = await api(`/v1/observability/judges/${encodeURIComponent(id)}`);
    } catch (err) {
      showError(detail, err);
      return;
    }
    clear(detail);
    const msg = el('div', { role: 'alert' });
    const editBox = el('div', {});
    detail.append(
      el('header', { class: 'toolbar' }, el('h2', { id: 'judge-name', tabindex: '-1' }, judge.name),
        el('span', { class: 'toolbar' },
          button('Edit', () => {
            clear(editBox);
            editBox.append(judgeForm(judge, models, async () => { clear(editBox); await loadList(); select(judge.id); }, () => clear(editBox)));
          }),
          button('Delete', async (ev) => {
            if (!(await ask(ev.currentTarget || ev.target, `Delete judge "${judge.name}"?`))) return;
            ev.target.disabled = true;
            try {
              await api(`/v1/observability/judges/${encodeURIComponent(judge.id)}`, { method: 'DELETE' });
              clear(detail);
              detail.hidden = true;
              loadList();
            } catch (err) {
              ev.target.disabled = false;
              showError(msg, err);
            }
          }, { class: 'danger' }))),
      msg, editBox,
      el('dl', { class: 'facts' },
        el('dt', {}, 'Id'), el('dd', { class: 'mono' }, judge.id),
        el('dt', {}, 'Model'), el('dd', {}, judge.model_name),
        el('dt', {}, 'Description'), el('dd', {}, judge.description || '—'),
        el('dt', {}, 'Output'), el('dd', {}, outputText(judge.output)),
        el('dt', {}, 'Instructions'), el('dd', {}, el('pre', { class: 'wrap' }, judge.instructions))),
      tryOnEvent(judge), tryOnMessages(judge));
  }

  function tryOnEvent(judge) {
    const eventId = el('input', { type: 'text', required: '', autocomplete: 'off', class: 'mono', id: 'try-event-id' });
    const out = el('div', { 'aria-live': 'polite', class: 'try-result' });
    const recent = el('div', {});
    const form = el('form', { class: 'card', 'aria-label': 'Try on an event' },
      el('h3', {}, 'Try on an event'),
      field('Event id', eventId),
      el('div', { class: 'toolbar' }, el('button', { type: 'submit', class: 'primary' }, 'Run on this event'),
        button('Pick from the latest events', () => latest(), { class: 'small' })),
      recent, out);
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      loading(out);
      try {
        const verdict = await api(`/v1/observability/chat-completion-events/${encodeURIComponent(eventId.value.trim())}/live-judging`, {
          method: 'POST', body: { judge_definition: judgeDefinition(judge) },
        });
        clear(out);
        out.append(verdictNode(verdict), el('a', { href: `/console/observability?event=${encodeURIComponent(eventId.value.trim())}` }, 'Open the event'));
      } catch (err) {
        showError(out, err);
      }
    });
    async function latest() {
      loading(recent);
      try {
        const res = await api('/v1/observability/chat-completion-events/search?page_size=10', {
          method: 'POST', body: { search_params: { filters: null } },
        });
        clear(recent);
        const rows = res.completion_events.results;
        if (!rows.length) {
          empty(recent, 'No events yet: use the playground or the API first.');
          return;
        }
        recent.append(grid(['Event', 'Created', 'Extra fields'], rows, (r) => [
          button(r.event_id, () => { eventId.value = r.event_id; clear(recent); eventId.focus(); }, { class: 'link mono', 'aria-label': `Use event ${r.event_id}` }),
          when(r.created_at), extraSummary(r.extra_fields)]));
      } catch (err) {
        showError(recent, err);
      }
    }
    return form;
  }

  function tryOnMessages(judge) {
    const user = el('textarea', { rows: '2', required: '' });
    const assistant = el('textarea', { rows: '2', required: '' });
    const out = el('div', { 'aria-live': 'polite' });
    const form = el('form', { class: 'card', 'aria-label': 'Try on messages' },
      el('h3', {}, 'Try on a conversation'),
      field('User message', user), field('Assistant answer', assistant),
      el('button', { type: 'submit' }, 'Run on these messages'), out);
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      loading(out);
      try {
        const verdict = await api(`/v1/observability/judges/${encodeURIComponent(judge.id)}/live-judging`, {
          method: 'POST',
          body: { messages: [{ role: 'user', content: user.value }, { role: 'assistant', content: assistant.value }] },
        });
        clear(out);
        out.append(verdictNode(verdict));
      } catch (err) {
        showError(out, err);
      }
    });
    return form;
  }

  await loadList();
  const wanted = new URLSearchParams(window.location.search).get('judge');
  if (wanted) select(wanted);
}
