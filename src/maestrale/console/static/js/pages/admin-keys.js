// Admin: the organization's workspace API keys. Create one for a member in one of their
// workspaces: the key is shown once, here, and never again (the list shows it masked). Revoke.
import { api } from '../api.js';
import { el, clear, loading, empty, showError, button, formField, table, when } from '../dom.js';
import { ask } from './conversation.js';
import { loadMembers, memberLabel } from './admin-users.js';

export async function render(root, ctx) {
  clear(root);
  const createBox = el('section', { class: 'card', 'aria-label': 'New key' });
  const shownOnce = el('div', { 'aria-live': 'assertive' });
  const listBox = el('section', { class: 'card', 'aria-label': 'Keys' });
  const msg = el('div', { role: 'alert' });
  root.append(el('header', { class: 'toolbar' }, el('h1', {}, 'API keys')), shownOnce, createBox, msg, listBox);
  loading(createBox);

  let members = [];
  try {
    members = (await loadMembers()).members;
  } catch (err) {
    showError(createBox, err);
  }
  if (members.length) {
    clear(createBox);
    const user = el('select', { required: '' }, ...members.map((m) => el('option', { value: m.uuid }, memberLabel(m))));
    const workspace = el('select', { required: '' });
    const name = el('input', { type: 'text', maxlength: '200', autocomplete: 'off' });
    const expiration = el('input', { type: 'date' });
    const error = el('div', { role: 'alert' });
    const fillWorkspaces = () => {
      const m = members.find((x) => x.uuid === user.value);
      clear(workspace);
      for (const w of (m ? m.workspaces : [])) workspace.append(el('option', { value: w.uuid, selected: w.is_default }, w.name));
      if (!workspace.options.length) workspace.append(el('option', { value: '' }, '(no workspace: add the member to one first)'));
    };
    user.addEventListener('change', fillWorkspaces);
    fillWorkspaces();
    const submit = el('button', { type: 'submit', class: 'primary' }, 'Create key');
    const form = el('form', { 'aria-label': 'Create a key' }, el('h2', {}, 'New key'),
      el('div', { class: 'toolbar' }, formField('For member', user), formField('Workspace', workspace)),
      el('div', { class: 'toolbar' }, formField('Name', name), formField('Expires on (optional)', expiration, 'The key stops working at 00:00 UTC that day.')),
      error, submit);
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      clear(error);
      const body = { user_id: user.value, workspace_uuid: workspace.value };
      if (name.value.trim()) body.name = name.value.trim();
      if (expiration.value) body.expiration = expiration.value;
      submit.disabled = true;
      try {
        const created = await api('/v1/admin/api-keys', { method: 'POST', body });
        showKeyOnce(created);
        name.value = '';
        expiration.value = '';
        loadList();
      } catch (err) {
        showError(error, err);
      } finally {
        submit.disabled = false;
      }
    });
    createBox.append(form);
  } else if (!createBox.querySelector('.error')) {
    empty(createBox, 'No members yet: add one on the Users page to create keys.');
  }

  function showKeyOnce(created) {
    clear(shownOnce);
    const keyField = el('input', { type: 'text', readonly: '', value: created.key || '', class: 'secret', id: 'new-key-value', 'aria-label': 'The new key' });
    const copied = el('span', { role: 'status' });
    shownOnce.append(el('div', { class: 'card key-once' },
      el('h2', {}, `Key "${created.name || created.key_id}" created`),
      el('p', {}, el('strong', {}, 'Copy it now: it is shown only this once.'), ' The list below shows it masked.'),
      el('div', { class: 'toolbar' }, keyField,
        button('Copy', async () => {
          try {
            await navigator.clipboard.writeText(keyField.value);
            copied.textContent = ' Copied.';
          } catch {
            keyField.select();
            copied.textContent = ' Select and copy it by hand (Ctrl+C).';
          }
        }),
        button('I have saved it', () => clear(shownOnce), { class: 'secondary' })),
      copied));
    keyField.focus();
    keyField.select();
  }

  async function loadList() {
    loading(listBox);
    try {
      const keys = (await api('/v1/admin/api-keys')).keys;
      clear(listBox);
      listBox.append(el('h2', {}, `Keys (${keys.length})`));
      if (!keys.length) {
        const note = el('div', {});
        empty(note, 'No keys yet.');
        listBox.append(note);
        return;
      }
      listBox.append(table([
        { label: 'Name', value: (k) => k.name || '—' },
        { label: 'Key', value: (k) => el('span', { class: 'mono' }, k.hidden_key) },
        { label: 'Workspace', value: (k) => k.workspace_name || k.workspace_id || '' },
        { label: 'Created', value: (k) => when(k.created_at) },
        { label: 'Expires', value: (k) => k.expiration_date || 'never' },
        { label: 'Last used', value: (k) => k.last_used || 'never' },
        {
          label: '',
          value: (k) => (k.can_delete === false ? '' : button('Revoke', async (ev) => {
            if (!(await ask(ev.currentTarget || ev.target, `Revoke key "${k.name || k.hidden_key}"? It stops working at once.`))) return;
            ev.target.disabled = true;
            try {
              await api(`/v1/admin/api-keys/${encodeURIComponent(k.key_id)}`, { method: 'DELETE' });
              loadList();
            } catch (err) {
              ev.target.disabled = false;
              showError(msg, err);
            }
          }, { class: 'small danger', 'aria-label': `Revoke key ${k.name || k.hidden_key}` })),
        },
      ], keys));
    } catch (err) {
      showError(listBox, err);
    }
  }

  await loadList();
}
