// Admin: workspaces (create, rename, archive, members with their roles: add, change, remove)
// and user groups (create, delete, members, workspace assignments).
import { api } from '../api.js';
import { el, clear, loading, empty, showError, button, formField, table } from '../dom.js';
import { ask } from './conversation.js';
import { loadRoles, loadMembers, memberLabel, roleName } from './admin-users.js';

export async function render(root, ctx) {
  clear(root);
  const msg = el('div', { role: 'alert' });
  const wsBox = el('section', { class: 'card', 'aria-labelledby': 'ws-h' });
  const wsDetail = el('section', { class: 'card', 'aria-live': 'polite', id: 'workspace-detail' });
  const groupsBox = el('section', { class: 'card', 'aria-labelledby': 'groups-h' });
  const groupDetail = el('section', { class: 'card', 'aria-live': 'polite', id: 'group-detail' });
  wsDetail.hidden = true;
  groupDetail.hidden = true;
  root.append(el('header', { class: 'toolbar' }, el('h1', {}, 'Workspaces and groups')), msg,
    wsBox, wsDetail, groupsBox, groupDetail);
  loading(wsBox);

  let roles;
  let members = [];
  try {
    [roles, members] = await Promise.all([loadRoles(), loadMembers().then((r) => r.members)]);
  } catch (err) {
    showError(wsBox, err);
    return;
  }
  const wsRoleOptions = (selected) => roles.workspace_roles.map((r) => el('option', { value: r.name, selected: r.name === selected }, r.name));
  const memberOptions = (list) => list.map((m) => el('option', { value: m.uuid }, memberLabel(m)));
  let archived = false;

  async function loadWorkspaces() {
    loading(wsBox);
    let page;
    try {
      page = await api(`/v1/admin/workspaces?page_size=1000${archived ? '&is_archived=true' : ''}`);
    } catch (err) {
      showError(wsBox, err);
      return;
    }
    clear(wsBox);
    const toggle = el('input', { type: 'checkbox', checked: archived, id: 'ws-archived' });
    toggle.addEventListener('change', () => { archived = toggle.checked; loadWorkspaces(); });
    const name = el('input', { type: 'text', required: '', maxlength: '255', autocomplete: 'off' });
    const description = el('input', { type: 'text', maxlength: '255', autocomplete: 'off' });
    const admin = el('select', { required: '' }, ...memberOptions(members));
    const error = el('div', { role: 'alert' });
    const form = el('form', { class: 'toolbar', 'aria-label': 'New workspace' },
      formField('Name', name), formField('Description', description), formField('Workspace admin', admin),
      el('button', { type: 'submit', class: 'primary' }, 'Create workspace'), error);
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      clear(error);
      try {
        const ws = await api('/v1/admin/workspaces', { method: 'POST', body: { name: name.value.trim(), description: description.value, admin_user_id: admin.value } });
        members = (await loadMembers()).members;
        await loadWorkspaces();
        showWorkspace(ws);
      } catch (err) {
        showError(error, err);
      }
    });
    wsBox.append(el('h2', { id: 'ws-h' }, `Workspaces (${page.total})`),
      el('label', { for: 'ws-archived', class: 'check' }, toggle, ' Show archived workspaces'));
    if (!page.items.length) {
      const note = el('div', {});
      empty(note, 'No workspaces.');
      wsBox.append(note);
    } else {
      wsBox.append(table([
        { label: 'Name', value: (w) => button(w.name, () => showWorkspace(w), { class: 'link', 'data-workspace-id': w.uuid }) },
        { label: 'Description', value: (w) => w.description || '' },
        { label: 'Members', value: (w) => String(w.members_count ?? '') },
        { label: 'Default', value: (w) => (w.is_default ? 'yes' : '') },
      ], page.items));
    }
    wsBox.append(el('h3', {}, 'New workspace'), form);
  }

  function showWorkspace(w) {
    wsDetail.hidden = false;
    clear(wsDetail);
    const path = `/v1/admin/workspaces/${encodeURIComponent(w.uuid)}`;
    const inWs = members.filter((m) => m.workspaces.some((x) => x.uuid === w.uuid));
    const others = members.filter((m) => !inWs.includes(m));
    const error = el('div', { role: 'alert' });
    const name = el('input', { type: 'text', required: '', value: w.name, maxlength: '255' });
    const description = el('input', { type: 'text', value: w.description || '', maxlength: '255' });
    const rename = el('form', { class: 'toolbar', 'aria-label': 'Rename workspace' }, formField('Name', name), formField('Description', description),
      el('button', { type: 'submit' }, 'Save'));
    rename.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      try {
        const saved = await api(path, { method: 'PATCH', body: { name: name.value.trim(), description: description.value } });
        await loadWorkspaces();
        showWorkspace(saved);
      } catch (err) {
        showError(error, err);
      }
    });
    const reload = async () => {
      members = (await loadMembers()).members;
      await loadWorkspaces();
      showWorkspace(w);
    };
    const addWho = el('select', {}, ...memberOptions(others));
    const addRole = el('select', {}, ...wsRoleOptions('user'));
    const add = el('form', { class: 'toolbar', 'aria-label': 'Add a member' }, formField('Member', addWho), formField('Role', addRole),
      el('button', { type: 'submit' }, 'Add to workspace'));
    add.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      if (!addWho.value) return;
      try {
        await api(`${path}/add-users`, { method: 'POST', body: { members: [{ user_uuid: addWho.value, role_names: [addRole.value] }] } });
        await reload();
      } catch (err) {
        showError(error, err);
      }
    });
    wsDetail.append(
      el('header', { class: 'toolbar' }, el('h2', {}, w.name),
        el('span', { class: 'toolbar' },
          w.is_default ? '' : button('Archive', async (ev) => {
            if (!(await ask(ev.currentTarget || ev.target, `Archive workspace "${w.name}"? Its keys stop working at once.`))) return;
            ev.target.disabled = true;
            try {
              await api(path, { method: 'DELETE' });
              wsDetail.hidden = true;
              clear(wsDetail);
              loadWorkspaces();
            } catch (err) {
              ev.target.disabled = false;
              showError(error, err);
            }
          }, { class: 'danger' }),
          button('Close', () => { wsDetail.hidden = true; clear(wsDetail); }, { class: 'small' }))),
      error, rename,
      el('h3', {}, `Members (${inWs.length})`),
      inWs.length ? table([
        { label: 'Member', value: (m) => memberLabel(m) },
        {
          label: 'Role',
          value: (m) => {
            const info = m.workspaces.find((x) => x.uuid === w.uuid);
            const current = roleName(roles, info.raw_role);
            const s = el('select', { 'aria-label': `Role of ${m.email || m.uuid}` }, ...wsRoleOptions(current));
            s.addEventListener('change', async () => {
              try {
                await api(`${path}/users`, { method: 'PATCH', body: { members: [{ user_uuid: m.uuid, role_names: [s.value] }] } });
                members = (await loadMembers()).members;
              } catch (err) {
                s.value = current;
                showError(error, err);
              }
            });
            return s;
          },
        },
        {
          label: '',
          value: (m) => button('Remove', async () => {
            try {
              await api(`${path}/remove-users`, { method: 'DELETE', body: { members: [{ user_uuid: m.uuid }] } });
              await reload();
            } catch (err) {
              showError(error, err);
            }
          }, { class: 'small danger', 'aria-label': `Remove ${m.email || m.uuid} from ${w.name}` }),
        },
      ], inWs) : el('p', { class: 'empty' }, 'No members.'),
      others.length ? add : '');
  }

  async function loadGroups() {
    loading(groupsBox);
    let page;
    try {
      page = await api('/v1/admin/user-groups?page_size=1000');
    } catch (err) {
      showError(groupsBox, err);
      return;
    }
    clear(groupsBox);
    const name = el('input', { type: 'text', required: '', maxlength: '255', autocomplete: 'off' });
    const description = el('input', { type: 'text', maxlength: '2000', autocomplete: 'off' });
    const target = el('select', {}, el('option', { value: 'W' }, 'Workspace group'), el('option', { value: 'O' }, 'Organization group'));
    const error = el('div', { role: 'alert' });
    const form = el('form', { class: 'toolbar', 'aria-label': 'New group' }, formField('Name', name), formField('Description', description),
      formField('Kind', target), el('button', { type: 'submit', class: 'primary' }, 'Create group'), error);
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      clear(error);
      try {
        const g = await api('/v1/admin/user-groups', { method: 'POST', body: { name: name.value.trim(), description: description.value || null, target_type: target.value } });
        await loadGroups();
        showGroup(g);
      } catch (err) {
        showError(error, err);
      }
    });
    groupsBox.append(el('h2', { id: 'groups-h' }, `User groups (${page.total})`));
    if (!page.items.length) {
      const note = el('div', {});
      empty(note, 'No groups yet.');
      groupsBox.append(note);
    } else {
      groupsBox.append(table([
        { label: 'Name', value: (g) => button(g.name, () => showGroup(g), { class: 'link' }) },
        { label: 'Description', value: (g) => g.description || '' },
        { label: 'Kind', value: (g) => (g.target_type === 'O' ? 'organization' : 'workspace') },
        { label: 'Organization role', value: (g) => (g.organization_role ? roleName(roles, g.organization_role) : '') },
      ], page.items));
    }
    groupsBox.append(el('h3', {}, 'New group'), form);
  }

  async function showGroup(g) {
    groupDetail.hidden = false;
    loading(groupDetail);
    const path = `/v1/admin/user-groups/${encodeURIComponent(g.uuid)}`;
    let groupMembers;
    let assignments;
    let workspaces;
    try {
      [groupMembers, assignments, workspaces] = await Promise.all([
        api(`${path}/members?page_size=1000`).then((r) => r.members),
        api(`${path}/workspaces?page_size=1000`).then((r) => r.items),
        api('/v1/admin/workspaces?page_size=1000').then((r) => r.items),
      ]);
    } catch (err) {
      showError(groupDetail, err);
      return;
    }
    clear(groupDetail);
    const error = el('div', { role: 'alert' });
    const again = () => showGroup(g);
    const ids = new Set(groupMembers.map((m) => m.user_uuid));
    const candidates = members.filter((m) => !ids.has(m.uuid));
    const addWho = el('select', {}, ...memberOptions(candidates));
    const addForm = el('form', { class: 'toolbar', 'aria-label': 'Add to group' }, formField('Member', addWho), el('button', { type: 'submit' }, 'Add to group'));
    addForm.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      if (!addWho.value) return;
      try {
        await api(`${path}/members`, { method: 'POST', body: { user_uuids: [addWho.value] } });
        again();
      } catch (err) {
        showError(error, err);
      }
    });
    const assigned = new Set(assignments.map((a) => a.workspace_uuid));
    const ws = el('select', {}, ...workspaces.filter((w) => !assigned.has(w.uuid)).map((w) => el('option', { value: w.uuid }, w.name)));
    const wsRole = el('select', {}, ...wsRoleOptions('user'));
    const assignForm = el('form', { class: 'toolbar', 'aria-label': 'Assign to a workspace' }, formField('Workspace', ws), formField('Role', wsRole),
      el('button', { type: 'submit' }, 'Assign'));
    assignForm.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      if (!ws.value) return;
      try {
        await api(`${path}/workspaces`, { method: 'POST', body: { workspace_uuid: ws.value, role_names: [wsRole.value] } });
        again();
      } catch (err) {
        showError(error, err);
      }
    });
    groupDetail.append(
      el('header', { class: 'toolbar' }, el('h2', {}, `Group ${g.name}`),
        el('span', { class: 'toolbar' },
          button('Delete group', async (ev) => {
            if (!(await ask(ev.currentTarget || ev.target, `Delete group "${g.name}"? Its members keep their workspace memberships.`))) return;
            try {
              await api(path, { method: 'DELETE' });
              groupDetail.hidden = true;
              clear(groupDetail);
              loadGroups();
            } catch (err) {
              showError(error, err);
            }
          }, { class: 'danger' }),
          button('Close', () => { groupDetail.hidden = true; clear(groupDetail); }, { class: 'small' }))),
      error,
      el('h3', {}, `Members (${groupMembers.length})`),
      groupMembers.length ? table([
        { label: 'Member', value: (m) => (m.name ? `${m.name} <${m.email || m.user_uuid}>` : (m.email || m.user_uuid)) },
        {
          label: '',
          value: (m) => button('Remove', async () => {
            try {
              await api(`${path}/members`, { method: 'DELETE', body: { user_uuids: [m.user_uuid] } });
              again();
            } catch (err) {
              showError(error, err);
            }
          }, { class: 'small danger', 'aria-label': `Remove ${m.email || m.user_uuid} from the group` }),
        },
      ], groupMembers) : el('p', { class: 'empty' }, 'No members.'),
      candidates.length ? addForm : '',
      el('h3', {}, `Workspaces (${assignments.length})`),
      assignments.length ? table([
        { label: 'Workspace', value: (a) => a.workspace_name },
        { label: 'Roles', value: (a) => a.roles.map((r) => r.name).join(', ') },
        {
          label: '',
          value: (a) => button('Unassign', async () => {
            try {
              await api(`${path}/workspaces/${encodeURIComponent(a.workspace_uuid)}`, { method: 'DELETE' });
              again();
            } catch (err) {
              showError(error, err);
            }
          }, { class: 'small danger', 'aria-label': `Unassign ${a.workspace_name}` }),
        },
      ], assignments) : el('p', { class: 'empty' }, 'Not assigned to any workspace.'),
      ws.options.length ? assignForm : '');
  }

  await Promise.all([loadWorkspaces(), loadGroups()]);
}
