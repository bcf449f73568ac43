// The conversation view: every entry type (messages, function calls and results, tool
// executions, handoffs, anything else as JSON), restart from an entry (a new conversation),
// append a message or a function result. Text from the API only ever goes into text nodes.
import { api } from '../api.js';
import { el, clear, loading, empty, showError } from '../dom.js';

let uid = 0;
const nextId = (p) => `${p}-${++uid}`;

function button(label, onClick, attrs = {}) {
  const b = el('button', { type: 'button', ...attrs }, label);
  b.addEventListener('click', onClick);
  return b;
}

// An in-page confirmation next to `anchor` (no window.confirm: keyboard- and test-friendly):
// resolves true on "Confirm", false on "Cancel".
export function ask(anchor, question) {
  return new Promise((resolve) => {
    const box = el('span', { class: 'confirm toolbar', role: 'group', 'aria-label': 'Confirm' });
    const done = (answer) => {
      box.remove();
      anchor.hidden = false;
      if (!answer) anchor.focus();
      resolve(answer);
    };
    const yes = button('Confirm', () => done(true), { class: 'danger small' });
    box.append(el('span', { role: 'alert' }, question), yes, button('Cancel', () => done(false), { class: 'small' }));
    anchor.hidden = true;
    anchor.after(box);
    yes.focus();
  });
}

function field(label, input) {
  const id = input.id || nextId('cf');
  input.id = id;
  return el('div', { class: 'field' }, el('label', { for: id }, label), input);
}

function when(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? String(iso) : d.toLocaleString();
}

function pretty(text) {
  if (typeof text !== 'string') return JSON.stringify(text, null, 2);
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

// A message's content: a string, or chunks (text, images, documents, tool references...).
export function contentNode(content) {
  if (content === null || content === undefined) return el('p', { class: 'muted' }, '(no content)');
  if (typeof content === 'string') return el('div', { class: 'content' }, content);
  if (!Array.isArray(content)) return el('pre', {}, JSON.stringify(content, null, 2));
  return el('div', { class: 'content' }, ...content.map((chunk) => {
    if (chunk && chunk.type === 'text') return el('div', {}, String(chunk.text ?? ''));
    if (chunk && chunk.type === 'image_url') {
      const url = typeof chunk.image_url === 'string' ? chunk.image_url : chunk.image_url?.url;
      return el('div', { class: 'chunk' }, `[image: ${String(url || '').slice(0, 120)}]`);
    }
    if (chunk && chunk.type === 'thinking') {
      return el('details', { class: 'chunk' }, el('summary', {}, 'Thinking'),
        contentNode(chunk.thinking));
    }
    return el('pre', { class: 'chunk' }, JSON.stringify(chunk, null, 2));
  }));
}

const LABELS = {
  'message.input': 'Message in',
  'message.output': 'Message out',
  'function.call': 'Function call',
  'function.result': 'Function result',
  'tool.execution': 'Tool execution',
  'agent.handoff': 'Handoff',
};

// One entry as an article; `actions` are extra nodes (the restart button).
export function entryNode(entry, actions) {
  const type = String(entry.type || 'unknown');
  const kind = type.replace(/[^a-z]/g, '-');
  const head = el('header', { class: 'entry-head toolbar' },
    el('span', { class: `badge badge-${kind}` }, LABELS[type] || type));
  const body = el('div', { class: 'entry-body' });
  if (type === 'message.input' || type === 'message.output') {
    head.append(el('strong', {}, String(entry.role || (type === 'message.input' ? 'user' : 'assistant'))));
    if (entry.prefix) head.append(el('span', { class: 'tag' }, 'prefix'));
    body.append(contentNode(entry.content));
  } else if (type === 'function.call') {
    head.append(el('strong', {}, String(entry.name || '')));
    body.append(el('dl', { class: 'facts' },
      el('dt', {}, 'Call id'), el('dd', { class: 'mono' }, String(entry.tool_call_id || '')),
      el('dt', {}, 'Arguments'), el('dd', {}, el('pre', {}, pretty(entry.arguments ?? ''))),
      ...(entry.confirmation_status ? [el('dt', {}, 'Confirmation'), el('dd', {}, String(entry.confirmation_status))] : [])));
  } else if (type === 'function.result') {
    body.append(el('dl', { class: 'facts' },
      el('dt', {}, 'Call id'), el('dd', { class: 'mono' }, String(entry.tool_call_id || '')),
      el('dt', {}, 'Result'), el('dd', {}, el('pre', { class: 'wrap' }, pretty(entry.result ?? '')))));
  } else if (type === 'tool.execution') {
    const info = entry.info || {};
    head.append(el('strong', {}, String(entry.name || '')));
    const facts = [
      el('dt', {}, 'Arguments'), el('dd', {}, el('pre', {}, pretty(entry.arguments ?? ''))),
    ];
    if (info.output !== undefined && info.output !== null) {
      facts.push(el('dt', {}, 'Output'), el('dd', {}, el('pre', { class: 'wrap' }, pretty(info.output))));
    }
    if (info.error !== undefined && info.error !== null) {
      facts.push(el('dt', {}, 'Error'), el('dd', { class: 'error-text' }, String(info.error)));
    }
    if (info.confirmation) facts.push(el('dt', {}, 'Confirmation'), el('dd', {}, String(info.confirmation)));
    if (info.duration_ms !== undefined) facts.push(el('dt', {}, 'Duration'), el('dd', {}, `${info.duration_ms} ms`));
    body.append(el('dl', { class: 'facts' }, ...facts),
      el('details', {}, el('summary', {}, 'Execution info'), el('pre', {}, JSON.stringify(info, null, 2))));
  } else if (type === 'agent.handoff') {
    body.append(el('p', {},
      'From ', el('strong', {}, String(entry.previous_agent_name || entry.previous_agent_id || '?')),
      ' to ', el('strong', {}, String(entry.next_agent_name || entry.next_agent_id || '?'))),
    el('p', { class: 'muted mono' }, `${entry.previous_agent_id || ''} → ${entry.next_agent_id || ''}`));
  } else {
    body.append(el('pre', {}, JSON.stringify(entry, null, 2)));
  }
  const meta = [];
  if (entry.model) meta.push(`model ${entry.model}`);
  if (entry.agent_id) meta.push(`agent ${entry.agent_id}`);
  if (entry.created_at) meta.push(when(entry.created_at));
  head.append(el('span', { class: 'muted' }, meta.join(' · ')));
  const look = type === 'message.input' ? 'user' : type === 'message.output' ? 'assistant' : 'tool';
  return el('article', { class: `message ${look} entry entry-${kind}`, 'data-entry-type': type, 'data-entry-id': String(entry.id || '') },
    head, body, actions || '');
}

function conversationId(ctx) {
  if (ctx && (ctx.conversationId || ctx.id)) return ctx.conversationId || ctx.id;
  const parts = window.location.pathname.split('/').filter(Boolean);
  return decodeURIComponent(parts[parts.length - 1] || '');
}

const open = (id) => window.location.assign(`/console/conversations/${encodeURIComponent(id)}`);

export async function render(root, ctx) {
  clear(root);
  const id = conversationId(ctx);
  const path = `/v1/conversations/${encodeURIComponent(id)}`;
  const head = el('header', { class: 'toolbar' }, el('h1', {}, 'Conversation'));
  const about = el('section', { class: 'card' });
  const list = el('section', { class: 'chat entries', 'aria-label': 'Entries', 'aria-live': 'polite' });
  const tail = el('section', { class: 'card' });
  root.append(head, about, list, tail);
  loading(list);

  let conversation;
  try {
    conversation = await api(path);
  } catch (err) {
    clear(list);
    showError(list, err);
    return;
  }
  const agentLink = el('a', { href: `/console/agents?agent=${encodeURIComponent(conversation.agent_id || '')}` }, conversation.agent_id || '');
  if (conversation.agent_id) {
    api(`/v1/agents/${encodeURIComponent(conversation.agent_id)}`)
      .then((a) => { agentLink.textContent = `${a.name} (${a.id})`; })
      .catch(() => {});
  }
  const target = conversation.agent_id
    ? el('span', {}, 'Agent ', agentLink,
      conversation.agent_version !== undefined && conversation.agent_version !== null ? ` (version ${conversation.agent_version})` : '')
    : el('span', {}, `Model ${conversation.model || ''}`);
  const aboutMsg = el('div', { role: 'alert' });
  about.append(el('dl', { class: 'facts' },
    el('dt', {}, 'Id'), el('dd', { class: 'mono' }, conversation.id),
    ...(conversation.name ? [el('dt', {}, 'Name'), el('dd', {}, conversation.name)] : []),
    el('dt', {}, 'Answered by'), el('dd', {}, target),
    ...(conversation.instructions ? [el('dt', {}, 'Instructions'), el('dd', {}, el('pre', { class: 'wrap' }, conversation.instructions))] : []),
    el('dt', {}, 'Created'), el('dd', {}, when(conversation.created_at))),
  el('div', { class: 'toolbar' },
    el('a', { href: '/console/agents' }, 'All agents and conversations'),
    button('Delete conversation', async (ev) => {
      if (!(await ask(ev.currentTarget || ev.target, 'Delete this conversation and its entries?'))) return;
      ev.target.disabled = true;
      try {
        await api(path, { method: 'DELETE' });
        window.location.assign('/console/agents');
      } catch (err) {
        ev.target.disabled = false;
        showError(aboutMsg, err);
      }
    }, { class: 'danger' })), aboutMsg);

  async function loadEntries() {
    loading(list);
    let history;
    try {
      history = await api(`${path}/history`);
    } catch (err) {
      clear(list);
      showError(list, err);
      return;
    }
    clear(list);
    const entries = history.entries || [];
    if (!entries.length) empty(list, 'This conversation has no entries.');
    for (const entry of entries) list.append(entryNode(entry, restartControl(entry)));
    showTail(entries);
  }

  // "Restart from here": a new conversation with the entries up to this one, then a message.
  function restartControl(entry) {
    if (!entry.id) return null;
    const box = el('div', { class: 'entry-actions toolbar' });
    const toggle = button('Restart from here', () => {
      toggle.hidden = true;
      const input = el('textarea', { rows: '2', required: '' });
      const error = el('div', { role: 'alert' });
      const submit = el('button', { type: 'submit', class: 'primary' }, 'Restart');
      const form = el('form', { class: 'restart-form', 'aria-label': 'Restart from this entry' },
        field('New message after this entry', input), error,
        el('div', { class: 'toolbar' }, submit, button('Cancel', () => { form.remove(); toggle.hidden = false; toggle.focus(); })));
      form.addEventListener('submit', async (ev) => {
        ev.preventDefault();
        clear(error);
        submit.disabled = true;
        try {
          const res = await api(`${path}/restart`, {
            method: 'POST', body: { from_entry_id: entry.id, inputs: input.value },
          });
          open(res.conversation_id);
        } catch (err) {
          submit.disabled = false;
          showError(error, err);
        }
      });
      box.append(form);
      input.focus();
    }, { 'aria-label': `Restart from entry ${entry.id}`, class: 'small' });
    box.append(toggle);
    return box;
  }

  async function append(inputs, submit, error) {
    clear(error);
    submit.disabled = true;
    try {
      await api(path, { method: 'POST', body: { inputs } });
      await loadEntries();
    } catch (err) {
      submit.disabled = false;
      showError(error, err);
    }
  }

  function showTail(entries) {
    clear(tail);
    // Client function calls without a result yet: offer to send one.
    const answered = new Set(entries.filter((e) => e.type === 'function.result').map((e) => e.tool_call_id));
    const pending = entries.filter((e) => e.type === 'function.call' && !e.confirmation_status && !answered.has(e.tool_call_id));
    if (pending.length) {
      const call = pending[0];
      const result = el('textarea', { rows: '2', required: '' });
      const error = el('div', { role: 'alert' });
      const submit = el('button', { type: 'submit', class: 'primary' }, 'Send result');
      const form = el('form', { 'aria-label': 'Send a function result' },
        el('h2', {}, 'Function result'),
        el('p', {}, 'The model called ', el('strong', {}, String(call.name || '')), ` (call ${call.tool_call_id}): send what it returned.`),
        field('Result', result), error, submit);
      form.addEventListener('submit', (ev) => {
        ev.preventDefault();
        append([{ type: 'function.result', tool_call_id: call.tool_call_id, result: result.value }], submit, error);
      });
      tail.append(form);
      return;
    }
    const input = el('textarea', { rows: '3', required: '' });
    const error = el('div', { role: 'alert' });
    const submit = el('button', { type: 'submit', class: 'primary' }, 'Send');
    const form = el('form', { 'aria-label': 'Continue the conversation' },
      el('h2', {}, 'Continue'), field('Message', input), error, submit);
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      append(input.value, submit, error);
    });
    input.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey)) form.requestSubmit();
    });
    tail.append(form);
  }

  await loadEntries();
}
