// Admin: the organization's members (roles, workspaces, remove) and invitations (invite,
// withdraw), and creating members directly. Needs the session's admin key (the proxy sends it
// for /v1/admin/ paths).
import { api } from '../api.js';
import { el, clear, loading, empty, showError, button, formField, table, when } from '../dom.js';
import { ask } from './conversation.js';

let rolesPromise = null;
export function loadRoles() {
  if (!rolesPromise) rolesPromise = api('/v1/admin/roles').catch((e) => { rolesPromise = null; throw e; });
  return rolesPromise;
}

// A role UUID (or name) as its name.
export function roleName(roles, value) {
  const all = [...(roles?.organization_roles || []), ...(roles?.workspace_roles || [])];
  const r = all.find((x) => x.uuid === value || x.name === value);
  return r ? r.name : String(value);
}

export async function loadMembers() {
  const res = await api('/v1/admin/users?page_size=1000');
  return res;
}

export function memberLabel(m) {
  const name = m.name || [m.first_name, m.last_name].filter(Boolean).join(' ');
  return name ? `${name} <${m.email || m.uuid}>` : (m.email || m.uuid);
}

function multiSelect(options, label) {
  const s = el('select', { multiple: true, size: String(Math.min(6, Math.max(2, options.length))), 'aria-label': label });
  for (const o of options) s.append(el('option', { value: o.value }, o.label));
  return s;
}

const picked = (s) => [...s.selectedOptions].map((o) => o.value);

export async function render(root, ctx) {
  clear(root);
  const membersBox = el('section', { class: 'card', 'aria-label': 'Members' });
  const invitesBox = el('section', { class: 'card', 'aria-label': 'Invitations' });
  const formsBox = el('section', { class: 'grid2' });
  const msg = el('div', { role: 'alert' });
  root.append(el('header', { class: 'toolbar' }, el('h1', {}, 'Users and invitations')), msg, formsBox, membersBox, invitesBox);
  loading(membersBox);

  let roles;
  let workspaces = [];
  try {
    [roles, workspaces] = await Promise.all([
      loadRoles(),
      api('/v1/admin/workspaces?page_size=1000').then((r) => r.items),
    ]);
  } catch (err) {
    showError(membersBox, err);
    return;
  }
  const orgRoles = roles.organization_roles.map((r) => ({ value: r.name, label: `${r.name}: ${r.description}` }));
  const wsOptions = workspaces.map((w) => ({ value: w.uuid, label: w.name }));

  // Invite
  const emails = el('textarea', { rows: '2', required: '', placeholder: 'ada@example.com, grace@example.com' });
  const inviteRole = el('select', {}, ...orgRoles.map((o) => el('option', { value: o.value, selected: o.value === 'member' }, o.label)));
  const inviteWs = multiSelect(wsOptions, 'Workspaces');
  const inviteOut = el('div', { 'aria-live': 'polite' });
  const inviteForm = el('form', { class: 'card', 'aria-label': 'Invite' }, el('h2', {}, 'Invite'),
    formField('E-mails (comma or newline separated)', emails), formField('Organization role', inviteRole),
    formField('Workspaces', inviteWs, 'Ctrl/Cmd-click to pick several; none: the default workspace.'),
    el('button', { type: 'submit', class: 'primary' }, 'Send invitations'), inviteOut);
  inviteForm.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clear(inviteOut);
    const body = { email: emails.value, role_names: [inviteRole.value] };
    const ws = picked(inviteWs);
    if (ws.length) body.workspace_uuids = ws;
    try {
      const res = await api('/v1/admin/users-invite', { method: 'POST', body });
      inviteOut.append(el('p', { role: 'status' }, `${res.invited_members_count} invited.`));
      if (res.already_members.length) inviteOut.append(el('p', {}, `Already members: ${res.already_members.join(', ')}`));
      if (res.invalid_emails.length) inviteOut.append(el('p', { class: 'error-text' }, `Invalid e-mails: ${res.invalid_emails.join(', ')}`));
      emails.value = '';
      loadAll();
    } catch (err) {
      showError(inviteOut, err);
    }
  });

  // Create a member directly
  const email = el('input', { type: 'email', required: '', autocomplete: 'off' });
  const first = el('input', { type: 'text', autocomplete: 'off' });
  const last = el('input', { type: 'text', autocomplete: 'off' });
  const createRole = el('select', {}, ...orgRoles.map((o) => el('option', { value: o.value, selected: o.value === 'member' }, o.label)));
  const createOut = el('div', { 'aria-live': 'polite' });
  const createForm = el('form', { class: 'card', 'aria-label': 'Add a member' }, el('h2', {}, 'Add a member'),
    formField('E-mail', email), el('div', { class: 'toolbar' }, formField('First name', first), formField('Last name', last)),
    formField('Organization role', createRole), el('button', { type: 'submit' }, 'Add member'), createOut);
  createForm.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clear(createOut);
    try {
      const res = await api('/v1/admin/users', {
        method: 'POST',
        body: [{ email: email.value.trim(), first_name: first.value, last_name: last.value, role_names: [createRole.value] }],
      });
      if (res.invalid_emails.length) createOut.append(el('p', { class: 'error-text' }, `Refused: ${res.invalid_emails.join(', ')}`));
      else createOut.append(el('p', { role: 'status' }, `Added ${email.value.trim()}.`));
      email.value = '';
      loadAll();
    } catch (err) {
      showError(createOut, err);
    }
  });
  formsBox.append(inviteForm, createForm);

  async function loadAll() {
    loading(membersBox);
    loading(invitesBox);
    let res;
    try {
      res = await loadMembers();
    } catch (err) {
      showError(membersBox, err);
      clear(invitesBox);
      return;
    }
    clear(membersBox);
    membersBox.append(el('h2', {}, `Members (${res.members.length})`));
    if (!res.members.length) {
      const note = el('div', {});
      empty(note, 'No members.');
      membersBox.append(note);
    } else {
      membersBox.append(table([
        { label: 'Member', value: (m) => memberLabel(m) },
        { label: 'Role', value: (m) => roleEditor(m) },
        { label: 'Workspaces', value: (m) => m.workspaces.map((w) => `${w.name} (${w.raw_roles.map((r) => roleName(roles, r)).join(', ')})`).join('; ') },
        { label: 'Since', value: (m) => when(m.created_at) },
        {
          label: '',
          value: (m) => button('Remove', async (ev) => {
            if (!(await ask(ev.currentTarget || ev.target, `Remove ${memberLabel(m)} from the organization? Their API keys are revoked.`))) return;
            ev.target.disabled = true;
            try {
              await api(`/v1/admin/users/${encodeURIComponent(m.uuid)}`, { method: 'DELETE' });
              loadAll();
            } catch (err) {
              ev.target.disabled = false;
              showError(msg, err);
            }
          }, { class: 'small danger', 'aria-label': `Remove ${m.email || m.uuid}` }),
        },
      ], res.members));
    }
    clear(invitesBox);
    invitesBox.append(el('h2', {}, `Pending invitations (${res.invites.length})`));
    if (!res.invites.length) {
      const note = el('div', {});
      empty(note, 'No pending invitations.');
      invitesBox.append(note);
      return;
    }
    invitesBox.append(table([
      { label: 'E-mail', value: (i) => i.email },
      { label: 'Role', value: (i) => i.raw_roles.map((r) => roleName(roles, r)).join(', ') },
      { label: 'Sent', value: (i) => when(i.created_at) },
      { label: 'Expired', value: (i) => (i.expired ? 'yes' : 'no') },
      {
        label: '',
        value: (i) => button('Withdraw', async () => {
          try {
            await api(`/v1/admin/users-invite/${encodeURIComponent(i.uuid)}`, { method: 'DELETE' });
            loadAll();
          } catch (err) {
            showError(msg, err);
          }
        }, { class: 'small', 'aria-label': `Withdraw the invitation of ${i.email}` }),
      },
    ], res.invites));
  }

  function roleEditor(m) {
    const current = roleName(roles, m.raw_role);
    const s = el('select', { 'aria-label': `Role of ${m.email || m.uuid}` },
      ...roles.organization_roles.map((r) => el('option', { value: r.name, selected: r.name === current }, r.name)));
    s.addEventListener('change', async () => {
      try {
        await api(`/v1/admin/users/${encodeURIComponent(m.uuid)}`, { method: 'PATCH', body: { role_names: [s.value] } });
        clear(msg);
        msg.append(el('p', { role: 'status', class: 'info' }, `${m.email || m.uuid} is now ${s.value}.`));
      } catch (err) {
        s.value = current;
        showError(msg, err);
      }
    });
    return s;
  }

  await loadAll();
}
