// Playground: a model (GET /v1/models) or an agent (GET /v1/agents), a system prompt and the
// sampling parameters; the answer streams token by token (POST /v1/chat/completions or
// /v1/agents/completions with stream: true), tool calls are shown and can be answered, Stop
// aborts the request, and "View as code" shows the same call for the Python SDK and curl.
import { api, apiStream } from '../api.js';
import { el, clear, button, errorBox, formField, uniqueId } from '../dom.js';
import { pythonSnippet, curlSnippet } from '../snippets.js';

const EXAMPLE_TOOLS = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'The weather in a city',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    },
  },
];

function numberInput(name, attrs) {
  return el('input', { type: 'number', name, inputmode: 'decimal', placeholder: 'default', ...attrs });
}

/** The settings form: target, system prompt, parameters, tools, streaming. */
function settingsPanel() {
  const target = el('select', { name: 'target', required: true }, el('option', { value: '' }, 'Loading…'));
  const system = el('textarea', { name: 'system', rows: 3, placeholder: 'You are a helpful assistant.' });
  const temperature = numberInput('temperature', { min: 0, max: 2, step: 0.1 });
  const maxTokens = numberInput('max_tokens', { min: 1, step: 1, inputmode: 'numeric' });
  const topP = numberInput('top_p', { min: 0, max: 1, step: 0.05 });
  const tools = el('textarea', { name: 'tools', rows: 4, spellcheck: 'false', placeholder: '[ ]' });
  const stream = el('input', { type: 'checkbox', name: 'stream', checked: true, id: uniqueId('stream') });
  const exampleTools = button('Insert an example tool', () => {
    tools.value = JSON.stringify(EXAMPLE_TOOLS, null, 2);
  }, { class: 'link' });
  const node = el(
    'section',
    { class: 'card settings', 'aria-labelledby': 'settings-title' },
    el('h2', { id: 'settings-title' }, 'Settings'),
    formField('Model or agent', target),
    formField('System prompt', system, 'Sent as the first message.'),
    el(
      'div',
      { class: 'params' },
      formField('Temperature', temperature),
      formField('Max tokens', maxTokens),
      formField('Top p', topP),
    ),
    formField('Tools (JSON)', tools, 'Function definitions offered to the model (optional).'),
    exampleTools,
    el('div', { class: 'field' }, el('label', { for: stream.id }, stream, ' Stream the answer')),
  );
  return { node, target, system, temperature, maxTokens, topP, tools, stream };
}

async function loadTargets(select, defaultModel) {
  const [models, agents] = await Promise.allSettled([
    api('/v1/models'),
    api('/v1/agents?page_size=100'),
  ]);
  clear(select);
  const modelGroup = el('optgroup', { label: 'Models' });
  if (models.status === 'fulfilled') {
    for (const m of models.value.data || []) {
      if (m.capabilities && m.capabilities.completion_chat === false) continue;
      modelGroup.append(el('option', { value: `model:${m.id}` }, m.id));
    }
  }
  const agentGroup = el('optgroup', { label: 'Agents' });
  if (agents.status === 'fulfilled') {
    for (const a of Array.isArray(agents.value) ? agents.value : agents.value.data || []) {
      agentGroup.append(el('option', { value: `agent:${a.id}` }, `${a.name} (${a.model})`));
    }
  }
  if (modelGroup.children.length) select.append(modelGroup);
  if (agentGroup.children.length) select.append(agentGroup);
  if (models.status === 'rejected') throw models.reason;
  // The catalog's best real chat model (the server names it), not the first in the list.
  const best = defaultModel && select.querySelector(`option[value="model:${CSS.escape(defaultModel)}"]`);
  if (best) best.selected = true;
  if (!select.options.length) select.append(el('option', { value: '' }, 'No model available'));
}

function messageNode(role, text) {
  const body = el('span', { class: 'content' }, text || '');
  const node = el('div', { class: `message ${role}` }, el('span', { class: 'role' }, role), body);
  return { node, body };
}

function toolCallText(call) {
  const fn = call.function || {};
  return `→ ${fn.name || '?'}(${fn.arguments || ''})`;
}

export async function render(root, ctx) {
  const settings = settingsPanel();
  const history = []; // the conversation sent with each call
  let controller = null;

  const transcript = el('div', { class: 'chat', 'aria-live': 'polite', 'aria-label': 'Conversation' });
  const emptyNote = el('p', { class: 'empty' }, 'Send a message to start.');
  transcript.append(emptyNote);
  const stats = el('p', { class: 'stats', role: 'status' });
  const input = el('textarea', { name: 'message', rows: 3, placeholder: 'Your message (Ctrl+Enter sends)', required: true });
  // Disabled until a model or agent is chosen: a message sent while the list loads has no target.
  const send = el('button', { type: 'submit', class: 'primary', disabled: true }, 'Send');
  const stop = button('Stop', () => controller && controller.abort(), { disabled: true, class: 'danger' });
  const reset = button('Clear conversation', () => {
    history.length = 0;
    clear(transcript).append(emptyNote);
    stats.textContent = '';
    refreshCode();
  });
  const codeToggle = button('View as code', () => {
    const open = codePanel.hidden;
    codePanel.hidden = !open;
    codeToggle.setAttribute('aria-expanded', String(open));
    if (open) refreshCode();
  }, { 'aria-expanded': 'false' });
  const compose = el(
    'form',
    { class: 'card compose' },
    formField('Message', input),
    el('div', { class: 'toolbar' }, send, stop, reset, codeToggle),
  );

  // View as code
  let codeTab = 'python';
  const codeText = el('pre', { class: 'code', tabindex: '0' });
  const tabs = ['python', 'curl'].map((name) =>
    button(name === 'python' ? 'Python SDK' : 'curl', () => {
      codeTab = name;
      refreshCode();
    }, { role: 'tab', 'aria-selected': String(name === codeTab) }),
  );
  const copied = el('span', { class: 'small muted', role: 'status' });
  const copy = button('Copy', async () => {
    try {
      await navigator.clipboard.writeText(codeText.textContent);
      copied.textContent = 'Copied.';
    } catch {
      // No clipboard (a page served over plain http from another host): select the text.
      window.getSelection().selectAllChildren(codeText);
      copied.textContent = 'Selected: copy it with Ctrl+C.';
    }
  });
  const codePanel = el('section', { class: 'card', hidden: true, 'aria-label': 'The call as code' },
    el('div', { class: 'tabs' }, el('div', { class: 'tabs', role: 'tablist' }, tabs), copy, copied),
    codeText);
  codeToggle.setAttribute('aria-controls', (codePanel.id = uniqueId('code')));

  function request(pending) {
    const [kind, id] = (settings.target.value || ':').split(/:(.*)/s);
    const messages = [];
    if (settings.system.value.trim()) messages.push({ role: 'system', content: settings.system.value });
    messages.push(...history);
    if (pending) messages.push({ role: 'user', content: pending });
    const body = kind === 'agent' ? { agent_id: id } : { model: id };
    body.messages = messages;
    const num = (node, integer) => {
      if (node.value === '') return undefined;
      const v = integer ? parseInt(node.value, 10) : parseFloat(node.value);
      return Number.isNaN(v) ? undefined : v;
    };
    const temperature = num(settings.temperature);
    const maxTokens = num(settings.maxTokens, true);
    const topP = num(settings.topP);
    if (temperature !== undefined) body.temperature = temperature;
    if (maxTokens !== undefined) body.max_tokens = maxTokens;
    if (topP !== undefined) body.top_p = topP;
    const toolsText = settings.tools.value.trim();
    if (toolsText) {
      let tools;
      try {
        tools = JSON.parse(toolsText);
      } catch (err) {
        throw new Error(`Tools is not valid JSON: ${err.message}`);
      }
      if (!Array.isArray(tools)) throw new Error('Tools must be a JSON array of tool definitions');
      body.tools = tools;
    }
    body.stream = settings.stream.checked;
    return body;
  }

  function refreshCode() {
    copied.textContent = '';
    tabs.forEach((t, i) => t.setAttribute('aria-selected', String(['python', 'curl'][i] === codeTab)));
    if (codePanel.hidden) return;
    let body;
    try {
      body = request(input.value.trim() || 'Hello!');
    } catch (err) {
      codeText.textContent = err.message;
      return;
    }
    const origin = window.location.origin;
    codeText.textContent = codeTab === 'python' ? pythonSnippet(body, origin) : curlSnippet(body, origin);
  }
  for (const node of [settings.target, settings.system, settings.temperature, settings.maxTokens,
    settings.topP, settings.tools, settings.stream, input]) {
    node.addEventListener('input', refreshCode);
    node.addEventListener('change', refreshCode);
  }

  function busy(on) {
    send.disabled = on || !settings.target.value;
    stop.disabled = !on;
    settings.target.disabled = on;
  }

  /** A tool call's answer form: sends a `tool` message with the result. */
  function toolReply(call) {
    const result = el('input', { type: 'text', name: 'tool_result', placeholder: 'result' });
    const form = el('form', { class: 'toolbar' }, formField(`Result of ${call.function.name}`, result),
      el('button', { type: 'submit' }, 'Send result'));
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      form.remove();
      history.push({ role: 'tool', tool_call_id: call.id, name: call.function.name, content: result.value });
      transcript.append(messageNode('tool', `${call.function.name} → ${result.value}`).node);
      run();
    });
    return form;
  }

  async function run(pending) {
    let body;
    try {
      body = request(pending);
    } catch (err) {
      transcript.append(errorBox(err));
      return;
    }
    if (emptyNote.isConnected) emptyNote.remove();
    if (pending) {
      history.push({ role: 'user', content: pending });
      transcript.append(messageNode('user', pending).node);
    }
    const answer = messageNode('assistant', '');
    answer.node.classList.add('streaming');
    transcript.append(answer.node);
    const calls = [];
    const callList = el('div', { class: 'tool-calls' });
    answer.node.append(callList);
    let text = '';
    let finish = null;
    let usage = null;
    const started = performance.now();
    controller = new AbortController();
    busy(true);
    stats.textContent = '';
    const showCalls = () => {
      clear(callList);
      calls.forEach((c) => callList.append(el('div', { class: 'tool-call' }, toolCallText(c))));
    };
    try {
      if (body.stream) {
        const path = 'agent_id' in body ? '/v1/agents/completions' : '/v1/chat/completions';
        await apiStream(path, body, {
          signal: controller.signal,
          onEvent: ({ data }) => {
            if (data === '[DONE]' || !data || typeof data !== 'object') return;
            if (data.object === 'error' || data.error) {
              throw new Error(data.message || (data.error && data.error.message) || 'stream error');
            }
            const choice = (data.choices || [])[0];
            if (data.usage) usage = data.usage;
            if (!choice) return;
            const delta = choice.delta || {};
            if (typeof delta.content === 'string' && delta.content) {
              text += delta.content;
              answer.body.append(document.createTextNode(delta.content));
            }
            for (const tc of delta.tool_calls || []) {
              const i = tc.index ?? calls.length;
              calls[i] = calls[i] || { id: tc.id, type: 'function', function: { name: '', arguments: '' } };
              if (tc.id) calls[i].id = tc.id;
              if (tc.function && tc.function.name) calls[i].function.name = tc.function.name;
              if (tc.function && tc.function.arguments) calls[i].function.arguments += tc.function.arguments;
              showCalls();
            }
            if (choice.finish_reason) finish = choice.finish_reason;
          },
        });
      } else {
        const path = 'agent_id' in body ? '/v1/agents/completions' : '/v1/chat/completions';
        const done = await api(path, { method: 'POST', body, signal: controller.signal });
        const choice = done.choices[0];
        text = choice.message.content || '';
        answer.body.textContent = text;
        (choice.message.tool_calls || []).forEach((c) => calls.push(c));
        showCalls();
        finish = choice.finish_reason;
        usage = done.usage;
      }
    } catch (err) {
      if (err && err.name === 'AbortError') {
        finish = 'stopped';
      } else {
        answer.node.append(errorBox(err));
        finish = 'error';
      }
    } finally {
      answer.node.classList.remove('streaming');
      controller = null;
      busy(false);
    }
    const message = { role: 'assistant', content: text };
    if (calls.length) message.tool_calls = calls;
    if (text || calls.length) history.push(message);
    if (finish === 'tool_calls') calls.forEach((c) => answer.node.append(toolReply(c)));
    const seconds = ((performance.now() - started) / 1000).toFixed(2);
    const parts = [`finish: ${finish || 'unknown'}`, `${seconds} s`];
    if (usage) parts.push(`tokens: ${usage.prompt_tokens} in, ${usage.completion_tokens} out`);
    stats.textContent = parts.join(' · ');
    refreshCode();
    input.focus();
  }

  compose.addEventListener('submit', (e) => {
    e.preventDefault();
    const text = input.value.trim();
    if (!text || controller) return;
    try {
      request(text); // a bad setting (tools that are not JSON) keeps the message typed
    } catch (err) {
      transcript.append(errorBox(err));
      return;
    }
    input.value = '';
    run(text);
  });
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      compose.requestSubmit();
    }
  });

  root.append(
    el('h1', {}, 'Playground'),
    el('div', { class: 'split' }, settings.node,
      el('div', {}, el('section', { class: 'card', 'aria-label': 'Chat' }, transcript, stats), compose, codePanel)),
  );
  ctx.title('Playground');
  try {
    await loadTargets(settings.target, ctx.defaultModel);
  } catch (err) {
    settings.node.append(errorBox(err));
  }
  busy(false);
}
