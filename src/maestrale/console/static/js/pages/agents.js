// Agents: list (by cursor), create, edit (each save is a new version), versions (make one
// current), aliases (set, move, delete), start a conversation with an agent, recent
// conversations. Every text from the API goes into text nodes (el() children / textContent).
import { api } from '../api.js';
import { el, clear, loading, empty, showError, latestOnly } from '../dom.js';
import { ask } from './conversation.js';

let uid = 0;
const nextId = (p) => `${p}-${++uid}`;

function button(label, onClick, attrs = {}) {
  const b = el('button', { type: 'button', ...attrs }, label);
  b.addEventListener('click', onClick);
  return b;
}

function field(label, input, hint) {
  const id = input.id || nextId('f');
  input.id = id;
  return el('div', { class: 'field' }, el('label', { for: id }, label), input,
    hint ? el('small', { class: 'hint' }, hint) : '');
}

function when(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? String(iso) : d.toLocaleString();
}

function q(params) {
  const s = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== '') s.set(k, String(v));
  }
  const text = s.toString();
  return text ? `?${text}` : '';
}

function grid(columns, rows, rowFn) {
  const head = el('tr', {}, ...columns.map((c) => el('th', { scope: 'col' }, c)));
  const body = el('tbody', {}, ...rows.map((r) => el('tr', {}, ...rowFn(r).map((c) => el('td', {}, c)))));
  return el('div', { class: 'table-wrap' }, el('table', {}, el('thead', {}, head), body));
}

function jsonText(value) {
  return JSON.stringify(value, null, 2);
}

async function modelOptions(select, current) {
  try {
    const models = await api('/v1/models');
    const ids = (models.data || []).map((m) => m.id);
    if (current && !ids.includes(current)) ids.unshift(current);
    clear(select);
    for (const id of ids) {
      const o = el('option', { value: id }, id);
      if (id === current) o.selected = true;
      select.append(o);
    }
  } catch (err) {
    clear(select);
    select.append(el('option', { value: current || '' }, current || '(models unavailable)'));
  }
}

// The create / edit form; `agent` is null for a new agent. Resolves the saved agent.
function agentForm(agent, onSaved, onCancel) {
  const name = el('input', { type: 'text', required: '', maxlength: '512', autocomplete: 'off' });
  const model = el('select', { required: '' });
  const description = el('input', { type: 'text', autocomplete: 'off' });
  const instructions = el('textarea', { rows: '5' });
  const temperature = el('input', { type: 'number', min: '0', max: '2', step: '0.1' });
  const maxTokens = el('input', { type: 'number', min: '0', step: '1' });
  const tools = el('textarea', { rows: '4', spellcheck: 'false', class: 'mono' });
  const handoffs = el('input', { type: 'text', autocomplete: 'off' });
  const versionMessage = el('input', { type: 'text', maxlength: '4096', autocomplete: 'off' });
  const error = el('div', { class: 'form-error', role: 'alert' });
  name.value = agent?.name || '';
  description.value = agent?.description || '';
  instructions.value = agent?.instructions || '';
  const args = agent?.completion_args || {};
  temperature.value = args.temperature ?? '';
  maxTokens.value = args.max_tokens ?? '';
  tools.value = agent?.tools?.length ? jsonText(agent.tools) : '';
  handoffs.value = (agent?.handoffs || []).join(', ');
  modelOptions(model, agent?.model);

  const submit = el('button', { type: 'submit', class: 'primary' }, agent ? 'Save as new version' : 'Create agent');
  const form = el('form', { class: 'card', 'aria-label': agent ? 'Edit agent' : 'New agent' },
    el('h3', {}, agent ? `Edit ${agent.name} (saves version ${Math.max(...agent.versions) + 1})` : 'New agent'),
    field('Name', name),
    field('Model', model),
    field('Description', description),
    field('Instructions', instructions),
    el('div', { class: 'toolbar' }, field('Temperature', temperature), field('Max tokens', maxTokens)),
    field('Tools (JSON array)', tools, 'e.g. [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]'),
    field('Handoffs (agent ids, comma-separated)', handoffs),
    field('Version message', versionMessage),
    error,
    el('div', { class: 'toolbar' }, submit, onCancel ? button('Cancel', onCancel) : ''));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clear(error);
    const body = {
      name: name.value.trim(),
      model: model.value,
      description: description.value || null,
      instructions: instructions.value || null,
      version_message: versionMessage.value || null,
    };
    const completion = { ...(agent?.completion_args || {}) };
    delete completion.temperature;
    delete completion.max_tokens;
    if (temperature.value !== '') completion.temperature = Number(temperature.value);
    if (maxTokens.value !== '') completion.max_tokens = Number(maxTokens.value);
    body.completion_args = completion;
    if (tools.value.trim()) {
      try {
        body.tools = JSON.parse(tools.value);
      } catch (e) {
        error.append(el('p', {}, `Tools: not valid JSON (${e.message})`));
        tools.focus();
        return;
      }
    } else {
      body.tools = [];
    }
    body.handoffs = handoffs.value.split(',').map((s) => s.trim()).filter(Boolean);
    submit.disabled = true;
    try {
      const saved = agent
        ? await api(`/v1/agents/${encodeURIComponent(agent.id)}`, { method: 'PATCH', body })
        : await api('/v1/agents', { method: 'POST', body });
      onSaved(saved);
    } catch (err) {
      showError(error, err);
    } finally {
      submit.disabled = false;
    }
  });
  setTimeout(() => name.focus(), 0);
  return form;
}

export async function render(root, ctx) {
  clear(root);
  const state = { token: null, tokens: [], search: '', selected: null };
  const listTurn = latestOnly();
  const listBox = el('section', { class: 'card', 'aria-labelledby': 'agents-list-h' });
  const formBox = el('div', {});
  const detailBox = el('section', { class: 'agent-detail', 'aria-live': 'polite' });
  const convBox = el('section', { class: 'card', 'aria-labelledby': 'recent-conv-h' });
  const search = el('input', { type: 'search', placeholder: 'Search by name', 'aria-label': 'Search agents' });
  const searchForm = el('form', { class: 'toolbar', role: 'search' }, search,
    el('button', { type: 'submit' }, 'Search'));
  searchForm.addEventListener('submit', (ev) => {
    ev.preventDefault();
    state.search = search.value.trim();
    state.token = null;
    state.tokens = [];
    loadList();
  });

  root.append(
    el('header', { class: 'toolbar' },
      el('h1', {}, 'Agents'),
      button('New agent', () => showCreate(), { class: 'primary', id: 'new-agent' })),
    formBox,
    el('div', { class: 'split' },
      el('div', {}, el('h2', { id: 'agents-list-h' }, 'All agents'), searchForm, listBox),
      detailBox),
    convBox);

  function showCreate() {
    clear(formBox);
    formBox.append(agentForm(null, (saved) => {
      clear(formBox);
      state.token = null;
      state.tokens = [];
      loadList();
      select(saved.id);
    }, () => clear(formBox)));
  }

  async function loadList() {
    const mine = listTurn();
    loading(listBox);
    try {
      const page = await api(`/v1/agents/pages${q({ page_size: 20, page_token: state.token, search: state.search })}`);
      if (!mine()) return;
      clear(listBox);
      if (!page.data.length) {
        empty(listBox, state.search ? 'No agent matches this search.' : 'No agents yet: create one with "New agent".');
        return;
      }
      listBox.append(grid(['Name', 'Version'], page.data, (a) => [
        el('span', {}, button(a.name, () => select(a.id), { class: 'link', 'data-agent-id': a.id }),
          el('br', {}), el('small', { class: 'muted' }, a.model)),
        String(a.version)]));
      const nav = el('div', { class: 'toolbar' });
      if (state.tokens.length) {
        nav.append(button('Previous page', () => { state.token = state.tokens.pop(); loadList(); }));
      }
      if (page.next_page_token) {
        nav.append(button('Next page', () => {
          state.tokens.push(state.token);
          state.token = page.next_page_token;
          loadList();
        }));
      }
      listBox.append(nav);
    } catch (err) {
      if (mine()) showError(listBox, err);
    }
  }

  async function select(agentId) {
    state.selected = agentId;
    loading(detailBox);
    try {
      const [agent, versions, aliases] = await Promise.all([
        api(`/v1/agents/${encodeURIComponent(agentId)}`),
        api(`/v1/agents/${encodeURIComponent(agentId)}/versions?page_size=100`),
        api(`/v1/agents/${encodeURIComponent(agentId)}/aliases`),
      ]);
      showAgent(agent, versions, aliases);
    } catch (err) {
      showError(detailBox, err);
    }
  }

  function showAgent(agent, versions, aliases) {
    clear(detailBox);
    const id = encodeURIComponent(agent.id);
    const editBox = el('div', {});
    const msg = el('div', { role: 'status' });
    const info = el('dl', { class: 'facts' },
      el('dt', {}, 'Id'), el('dd', { class: 'mono' }, agent.id),
      el('dt', {}, 'Model'), el('dd', {}, agent.model),
      el('dt', {}, 'Current version'), el('dd', {}, String(agent.version)),
      el('dt', {}, 'Description'), el('dd', {}, agent.description || '—'),
      el('dt', {}, 'Instructions'), el('dd', {}, el('pre', { class: 'wrap' }, agent.instructions || '—')),
      el('dt', {}, 'Completion args'), el('dd', {}, el('pre', {}, jsonText(agent.completion_args || {}))),
      el('dt', {}, 'Tools'), el('dd', {}, agent.tools.length ? el('pre', {}, jsonText(agent.tools)) : 'none'),
      el('dt', {}, 'Handoffs'), el('dd', {}, (agent.handoffs || []).join(', ') || 'none'),
      el('dt', {}, 'Updated'), el('dd', {}, when(agent.updated_at)));

    // Versions: make one current, view it.
    const versionView = el('div', {});
    const versionTable = grid(['Version', 'Message', 'Created', ''], versions.slice().reverse(), (v) => [
      v.version === agent.version ? el('strong', {}, `${v.version} (current)`) : String(v.version),
      v.version_message || '',
      when(v.updated_at),
      el('span', { class: 'toolbar' },
        button('View', async () => {
          clear(versionView);
          versionView.append(el('h4', {}, `Version ${v.version}`), el('pre', {}, jsonText(v)));
        }, { 'aria-label': `View version ${v.version}` }),
        v.version === agent.version ? '' : button('Make current', async (ev) => {
          ev.target.disabled = true;
          try {
            await api(`/v1/agents/${id}/version?version=${v.version}`, { method: 'PATCH' });
            await select(agent.id);
            loadList();
          } catch (err) {
            ev.target.disabled = false;
            showError(msg, err);
          }
        }, { 'aria-label': `Make version ${v.version} current` })),
    ]);

    // Aliases: list, set / move, delete.
    const aliasName = el('input', { type: 'text', required: '', autocomplete: 'off', maxlength: '64' });
    const aliasVersion = el('select', {}, ...agent.versions.slice().reverse().map((n) => el('option', { value: String(n) }, String(n))));
    const aliasError = el('div', { role: 'alert' });
    const aliasForm = el('form', { class: 'toolbar', 'aria-label': 'Set an alias' },
      field('Alias', aliasName), field('Version', aliasVersion),
      el('button', { type: 'submit' }, 'Set alias'), aliasError);
    aliasForm.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      clear(aliasError);
      try {
        await api(`/v1/agents/${id}/aliases${q({ alias: aliasName.value.trim(), version: aliasVersion.value })}`, { method: 'PUT' });
        await select(agent.id);
      } catch (err) {
        showError(aliasError, err);
      }
    });
    const aliasList = aliases.length
      ? grid(['Alias', 'Version', 'Updated', ''], aliases, (a) => [a.alias, String(a.version), when(a.updated_at),
        button('Delete', async () => {
          try {
            await api(`/v1/agents/${id}/aliases${q({ alias: a.alias })}`, { method: 'DELETE' });
            await select(agent.id);
          } catch (err) {
            showError(aliasError, err);
          }
        }, { 'aria-label': `Delete alias ${a.alias}` })])
      : el('p', { class: 'empty' }, 'No aliases yet.');

    // Start a conversation with this agent.
    const convInput = el('textarea', { rows: '2', required: '' });
    const convError = el('div', { role: 'alert' });
    const convForm = el('form', { 'aria-label': 'Start a conversation' },
      field('Message', convInput), el('button', { type: 'submit' }, 'Start conversation'), convError);
    convForm.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      clear(convError);
      const submit = convForm.querySelector('button[type=submit]');
      submit.disabled = true;
      try {
        const res = await api('/v1/conversations', {
          method: 'POST', body: { agent_id: agent.id, inputs: convInput.value },
        });
        window.location.assign(`/console/conversations/${encodeURIComponent(res.conversation_id)}`);
      } catch (err) {
        submit.disabled = false;
        showError(convError, err);
      }
    });

    detailBox.append(
      el('div', { class: 'card' },
        el('header', { class: 'toolbar' },
          el('h2', { id: 'agent-name', tabindex: '-1' }, agent.name),
          el('span', { class: 'toolbar' },
            button('Edit', () => {
              clear(editBox);
              editBox.append(agentForm(agent, async (saved) => {
                clear(editBox);
                await select(saved.id);
                loadList();
              }, () => clear(editBox)));
            }, { id: 'edit-agent' }),
            button('Delete', async (ev) => {
              if (!(await ask(ev.currentTarget || ev.target, `Delete agent "${agent.name}" with all its versions?`))) return;
              ev.target.disabled = true;
              try {
                await api(`/v1/agents/${id}`, { method: 'DELETE' });
                clear(detailBox);
                empty(detailBox, 'Agent deleted.');
                loadList();
              } catch (err) {
                ev.target.disabled = false;
                showError(msg, err);
              }
            }, { class: 'danger' }))),
        msg, editBox, info),
      el('div', { class: 'card' }, el('h3', {}, 'Versions'), versionTable, versionView),
      el('div', { class: 'card' }, el('h3', {}, 'Aliases'), aliasList, aliasForm),
      el('div', { class: 'card' }, el('h3', {}, 'Talk to this agent'), convForm));
    detailBox.querySelector('#agent-name')?.focus();
  }

  async function loadConversations() {
    clear(convBox);
    const body = el('div', {});
    convBox.append(el('h2', { id: 'recent-conv-h' }, 'Recent conversations'), body);
    loading(body);
    try {
      const rows = await api('/v1/conversations?page=0&page_size=20');
      clear(body);
      if (!rows.length) {
        empty(body, 'No conversations yet: start one from an agent.');
        return;
      }
      body.append(grid(['Conversation', 'Agent or model', 'Updated'], rows, (c) => [
        el('a', { href: `/console/conversations/${encodeURIComponent(c.id)}` }, c.name || c.id),
        c.agent_id ? `agent ${c.agent_id}` : (c.model || ''),
        when(c.updated_at)]));
    } catch (err) {
      showError(body, err);
    }
  }

  const wanted = new URLSearchParams(window.location.search).get('agent');
  await Promise.all([loadList(), loadConversations(), wanted ? select(wanted) : null]);
  if (!wanted) empty(detailBox, 'Select an agent to see its versions and aliases.');
}
