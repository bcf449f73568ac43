// Datasets: list, create, rename, delete; records (paged, view, add, delete, bulk delete);
// imports (a JSONL file uploaded with progress, events, conversations, a campaign's verdicts),
// followed to their end; export to JSONL (a file of the Files API, downloaded here).
import { api, upload, download } from '../api.js';
import { el, clear, loading, empty, showError, pageNav } from '../dom.js';
import { ask } from './conversation.js';
import { contentNode } from './conversation.js';
import { button, field, grid, when, qs } from './observability.js';
import { waitForTask } from './campaigns.js';

function firstText(payload) {
  const messages = (payload && payload.messages) || [];
  const m = messages.find((x) => x.role === 'user') || messages[0];
  if (!m) return '';
  let text = typeof m.content === 'string' ? m.content : (Array.isArray(m.content) ? m.content.filter((c) => c.type === 'text').map((c) => c.text).join(' ') : '');
  text = String(text || '');
  return text.length > 120 ? `${text.slice(0, 117)}…` : text;
}

function props(p) {
  const text = Object.entries(p || {}).map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`).join(', ');
  return text.length > 160 ? `${text.slice(0, 157)}…` : text;
}

export async function render(root, ctx) {
  clear(root);
  const formBox = el('div', {});
  const listBox = el('section', { class: 'card', 'aria-label': 'Datasets' });
  const detail = el('section', { class: 'card', 'aria-live': 'polite' });
  detail.hidden = true;
  root.append(el('header', { class: 'toolbar' }, el('h1', {}, 'Datasets'),
    button('New dataset', () => showCreate(), { class: 'primary', id: 'new-dataset' })),
  formBox, listBox, detail);

  function showCreate() {
    clear(formBox);
    const name = el('input', { type: 'text', required: '', maxlength: '500', autocomplete: 'off' });
    const description = el('input', { type: 'text', autocomplete: 'off' });
    const error = el('div', { role: 'alert' });
    const form = el('form', { class: 'card', 'aria-label': 'New dataset' }, el('h2', {}, 'New dataset'),
      field('Name', name), field('Description', description), error,
      el('div', { class: 'toolbar' }, el('button', { type: 'submit', class: 'primary' }, 'Create dataset'), button('Cancel', () => clear(formBox))));
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      try {
        const ds = await api('/v1/observability/datasets', { method: 'POST', body: { name: name.value.trim(), description: description.value } });
        clear(formBox);
        await loadList();
        select(ds.id);
      } catch (err) {
        showError(error, err);
      }
    });
    formBox.append(form);
    name.focus();
  }

  const state = { page: 1, q: '' };
  async function loadList() {
    loading(listBox);
    try {
      const page = (await api(`/v1/observability/datasets${qs({ page: state.page, page_size: 20, q: state.q })}`)).datasets;
      clear(listBox);
      const search = el('input', { type: 'search', 'aria-label': 'Search datasets by name', placeholder: 'Name contains' });
      search.value = state.q;
      const sf = el('form', { class: 'toolbar', role: 'search' }, search, el('button', { type: 'submit' }, 'Search'));
      sf.addEventListener('submit', (e) => { e.preventDefault(); state.q = search.value.trim(); state.page = 1; loadList(); });
      listBox.append(el('h2', {}, `Datasets (${page.count})`), sf);
      if (!page.results.length) {
        const note = el('div', {});
        empty(note, state.q ? 'No dataset matches.' : 'No datasets yet: create one with "New dataset".');
        listBox.append(note);
        return;
      }
      listBox.append(grid(['Name', 'Description', 'Updated'], page.results, (d) => [
        button(d.name, () => select(d.id), { class: 'link', 'data-dataset-id': d.id }), d.description, when(d.updated_at)]));
      listBox.append(pageNav(page, 'Pages', (step) => { state.page += step; loadList(); }));
    } catch (err) {
      showError(listBox, err);
    }
  }

  async function select(id) {
    detail.hidden = false;
    loading(detail);
    let ds;
    try {
      ds = await api(`/v1/observability/datasets/${encodeURIComponent(id)}`);
    } catch (err) {
      showError(detail, err);
      return;
    }
    clear(detail);
    const path = `/v1/observability/datasets/${encodeURIComponent(ds.id)}`;
    const msg = el('div', { role: 'alert' });
    const editBox = el('div', {});
    const recordsBox = el('div', { id: 'records' });
    const recordView = el('div', { 'aria-live': 'polite' });
    const importBox = el('div', { 'aria-live': 'polite', id: 'import-status' });
    const exportBox = el('div', { 'aria-live': 'polite', id: 'export-status' });
    const tasksBox = el('div', {});

    detail.append(
      el('header', { class: 'toolbar' }, el('h2', { id: 'dataset-name' }, ds.name),
        el('span', { class: 'toolbar' },
          button('Rename', () => {
            clear(editBox);
            const name = el('input', { type: 'text', required: '', value: ds.name });
            const description = el('input', { type: 'text', value: ds.description });
            const f = el('form', { class: 'toolbar', 'aria-label': 'Rename dataset' }, field('Name', name), field('Description', description),
              el('button', { type: 'submit' }, 'Save'), button('Cancel', () => clear(editBox)));
            f.addEventListener('submit', async (e) => {
              e.preventDefault();
              try {
                await api(path, { method: 'PATCH', body: { name: name.value.trim(), description: description.value } });
                await loadList();
                select(ds.id);
              } catch (err) {
                showError(msg, err);
              }
            });
            editBox.append(f);
            name.focus();
          }),
          button('Export to JSONL', () => exportJsonl(), { id: 'export-dataset' }),
          button('Delete', async (ev) => {
            if (!(await ask(ev.currentTarget || ev.target, `Delete dataset "${ds.name}" and its records?`))) return;
            ev.target.disabled = true;
            try {
              await api(path, { method: 'DELETE' });
              clear(detail);
              detail.hidden = true;
              loadList();
            } catch (err) {
              ev.target.disabled = false;
              showError(msg, err);
            }
          }, { class: 'danger' }))),
      msg, editBox,
      el('p', {}, ds.description || ''),
      exportBox,
      el('h3', {}, 'Records'), recordsBox, recordView,
      el('h3', {}, 'Add a record'), addRecordForm(),
      el('h3', {}, 'Import'), importForms(), importBox,
      el('h3', {}, 'Import tasks'), tasksBox);

    let recordsPage = 1;
    async function loadRecords() {
      loading(recordsBox);
      try {
        const page = (await api(`${path}/records${qs({ page: recordsPage, page_size: 20 })}`)).records;
        clear(recordsBox);
        recordsBox.append(el('p', {}, `${page.count} records.`));
        if (!page.results.length) {
          const note = el('div', {});
          empty(note, 'No records yet: add one or import some.');
          recordsBox.append(note);
          return;
        }
        const checks = [];
        recordsBox.append(grid(['', 'Created', 'Source', 'First message', 'Properties', ''], page.results, (r) => {
          const box = el('input', { type: 'checkbox', 'aria-label': `Select record ${r.id}`, value: r.id });
          checks.push(box);
          return [box, when(r.created_at), r.source, firstText(r.payload), props(r.properties),
            el('span', { class: 'toolbar' },
              button('View', () => showRecord(r), { class: 'small', 'aria-label': `View record ${r.id}` }),
              button('Delete', async () => {
                try {
                  await api(`/v1/observability/dataset-records/${encodeURIComponent(r.id)}`, { method: 'DELETE' });
                  loadRecords();
                } catch (err) {
                  showError(msg, err);
                }
              }, { class: 'small danger', 'aria-label': `Delete record ${r.id}` }))];
        }, { class: 'records' }));
        const nav = el('nav', { class: 'toolbar', 'aria-label': 'Record pages' },
          button('Delete selected', async () => {
            const ids = checks.filter((c) => c.checked).map((c) => c.value);
            if (!ids.length) return;
            try {
              await api('/v1/observability/dataset-records/bulk-delete', { method: 'POST', body: { dataset_record_ids: ids } });
              loadRecords();
            } catch (err) {
              showError(msg, err);
            }
          }, { class: 'small danger' }));
        if (page.previous) nav.append(button('Previous page', () => { recordsPage -= 1; loadRecords(); }));
        if (page.next) nav.append(button('Next page', () => { recordsPage += 1; loadRecords(); }));
        recordsBox.append(nav);
      } catch (err) {
        showError(recordsBox, err);
      }
    }

    function showRecord(r) {
      clear(recordView);
      const messages = (r.payload && r.payload.messages) || [];
      recordView.append(el('div', { class: 'card record' },
        el('header', { class: 'toolbar' }, el('h4', {}, 'Record ', el('span', { class: 'mono' }, r.id)), button('Close', () => clear(recordView), { class: 'small' })),
        ...messages.map((m) => el('article', { class: 'message' }, el('strong', {}, String(m.role || '?')), contentNode(m.content))),
        el('h4', {}, 'Properties'), el('pre', {}, JSON.stringify(r.properties, null, 2))));
    }

    function addRecordForm() {
      const user = el('textarea', { rows: '2', required: '' });
      const assistant = el('textarea', { rows: '2' });
      const properties = el('textarea', { rows: '2', class: 'mono', placeholder: '{"label": "good"}' });
      const error = el('div', { role: 'alert' });
      const f = el('form', { 'aria-label': 'Add a record' }, field('User message', user), field('Assistant answer', assistant),
        field('Properties (JSON object)', properties), error, el('button', { type: 'submit' }, 'Add record'));
      f.addEventListener('submit', async (e) => {
        e.preventDefault();
        clear(error);
        let p = {};
        if (properties.value.trim()) {
          try {
            p = JSON.parse(properties.value);
          } catch (err) {
            error.append(el('p', {}, `Properties: not valid JSON (${err.message})`));
            return;
          }
        }
        const messages = [{ role: 'user', content: user.value }];
        if (assistant.value) messages.push({ role: 'assistant', content: assistant.value });
        try {
          await api(`${path}/records`, { method: 'POST', body: { payload: { messages }, properties: p } });
          user.value = '';
          assistant.value = '';
          properties.value = '';
          loadRecords();
        } catch (err) {
          showError(error, err);
        }
      });
      return f;
    }

    async function follow(task) {
      clear(importBox);
      const bar = el('progress', { max: '100', 'aria-label': 'Import progress' });
      const note = el('span', { role: 'status' }, ` ${task.status}`);
      importBox.append(bar, note);
      try {
        await waitForTask(ds.id, task.id, (t) => {
          if (typeof t.progress === 'number') bar.value = t.progress;
          note.textContent = ` ${t.status}${t.message ? `: ${t.message}` : ''}`;
        });
      } catch (err) {
        showError(importBox, err);
      }
      loadRecords();
      loadTasks();
    }

    function importForms() {
      const file = el('input', { type: 'file', accept: '.jsonl,application/jsonl,application/x-ndjson', required: '' });
      const fileBar = el('progress', { max: '1', value: 0, 'aria-label': 'Upload progress', hidden: true });
      const fileErr = el('div', { role: 'alert' });
      const fileForm = el('form', { class: 'card', 'aria-label': 'Import a JSONL file' }, el('h4', {}, 'From a JSONL file'),
        field('File', file, 'One record a line: {"payload": {"messages": [...]}, "properties": {...}} or {"messages": [...]}.'),
        fileBar, fileErr, el('button', { type: 'submit' }, 'Upload and import'));
      fileForm.addEventListener('submit', async (e) => {
        e.preventDefault();
        clear(fileErr);
        if (!file.files.length) return;
        const data = new FormData();
        data.append('purpose', 'dataset-import');
        data.append('file', file.files[0]);
        fileBar.hidden = false;
        try {
          const uploaded = await upload('/v1/files', data, (f) => { if (f !== null) fileBar.value = f; });
          const task = await api(`${path}/imports/from-file`, { method: 'POST', body: { file_id: uploaded.id } });
          fileBar.hidden = true;
          file.value = '';
          follow(task);
        } catch (err) {
          fileBar.hidden = true;
          showError(fileErr, err);
        }
      });

      const ids = el('textarea', { rows: '2', class: 'mono', required: '' });
      const kind = el('select', {}, el('option', { value: 'events' }, 'Chat completion events'),
        el('option', { value: 'conversations' }, 'Conversations'), el('option', { value: 'records' }, 'Records of another dataset'));
      const idsErr = el('div', { role: 'alert' });
      const idsForm = el('form', { class: 'card', 'aria-label': 'Import by id' }, el('h4', {}, 'By id'), field('What', kind),
        field('Ids (comma or newline separated)', ids), idsErr, el('button', { type: 'submit' }, 'Import'));
      idsForm.addEventListener('submit', async (e) => {
        e.preventDefault();
        clear(idsErr);
        const list = ids.value.split(/[\s,]+/).map((s) => s.trim()).filter(Boolean);
        const [route, key] = {
          events: ['from-explorer', 'completion_event_ids'],
          conversations: ['from-playground', 'conversation_ids'],
          records: ['from-dataset', 'dataset_record_ids'],
        }[kind.value];
        try {
          const task = await api(`${path}/imports/${route}`, { method: 'POST', body: { [key]: list } });
          ids.value = '';
          follow(task);
        } catch (err) {
          showError(idsErr, err);
        }
      });

      const campaign = el('select', {});
      const campErr = el('div', { role: 'alert' });
      const campForm = el('form', { class: 'card', 'aria-label': 'Import a campaign' }, el('h4', {}, 'A campaign\'s verdicts'),
        field('Campaign', campaign), campErr, el('button', { type: 'submit' }, 'Import'));
      api('/v1/observability/campaigns?page_size=100').then((r) => {
        for (const c of r.campaigns.results) campaign.append(el('option', { value: c.id }, c.name));
        if (!r.campaigns.results.length) campaign.append(el('option', { value: '' }, '(no campaigns)'));
      }).catch((err) => showError(campErr, err));
      campForm.addEventListener('submit', async (e) => {
        e.preventDefault();
        clear(campErr);
        if (!campaign.value) return;
        try {
          follow(await api(`${path}/imports/from-campaign`, { method: 'POST', body: { campaign_id: campaign.value } }));
        } catch (err) {
          showError(campErr, err);
        }
      });
      return el('div', { class: 'imports grid2' }, fileForm, idsForm, campForm);
    }

    async function loadTasks() {
      loading(tasksBox);
      try {
        const page = (await api(`${path}/tasks?page_size=10`)).tasks;
        clear(tasksBox);
        if (!page.results.length) {
          empty(tasksBox, 'No imports yet.');
          return;
        }
        tasksBox.append(grid(['Started', 'Status', 'Progress', 'Message'], page.results, (t) => [
          when(t.created_at), t.status, t.progress === null || t.progress === undefined ? '' : `${t.progress}%`, t.message || '']));
      } catch (err) {
        showError(tasksBox, err);
      }
    }

    async function exportJsonl() {
      loading(exportBox, 'Exporting…');
      try {
        const res = await api(`${path}/exports/to-jsonl`);
        const url = new URL(res.file_url, window.location.origin);
        const match = /\/v1\/files\/([^/]+)\/content/.exec(url.pathname);
        clear(exportBox);
        const filename = `dataset-${ds.id}.jsonl`;
        exportBox.append(el('p', { role: 'status' }, 'Export ready: ',
          el('a', { href: url.pathname + url.search, download: filename, id: 'export-link' }, filename),
          ' (a signed link valid 24 hours; the file stays in Files for 7 days).'));
        if (match) {
          exportBox.append(button('Download now', () => download(`/v1/files/${match[1]}/content`, filename).catch((err) => showError(exportBox, err)), { class: 'small' }));
        }
      } catch (err) {
        showError(exportBox, err);
      }
    }

    loadRecords();
    loadTasks();
  }

  await loadList();
  const wanted = new URLSearchParams(window.location.search).get('dataset');
  if (wanted) select(wanted);
}
