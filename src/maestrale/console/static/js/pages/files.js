// Files: upload with a progress bar (POST /v1/files, streamed), the list by page with search
// (GET /v1/files), download (GET /v1/files/{id}/content) and delete.
import { api, download, query, upload } from '../api.js';
import { el, clear, button, loading, empty, showError, errorBox, formField, table, when, bytes, select } from '../dom.js';

const PAGE_SIZE = 20;
export const PURPOSES = ['batch', 'fine-tune', 'ocr', 'audio'];

/** An upload form: file, purpose, a progress bar; `onDone(file)` after a success. */
export function uploadForm({ purpose = 'batch', onDone, title = 'Upload a file' }) {
  const file = el('input', { type: 'file', name: 'file', required: true });
  const purposeSelect = select(PURPOSES, purpose, { name: 'purpose' });
  const bar = el('progress', { max: 1, value: 0, hidden: true });
  const status = el('p', { class: 'small muted', role: 'status', 'aria-live': 'polite' });
  const submit = el('button', { type: 'submit', class: 'primary' }, 'Upload');
  const result = el('div');
  const form = el(
    'form',
    { class: 'card', 'aria-label': title },
    el('h2', {}, title),
    el('div', { class: 'grid2' }, formField('File', file), formField('Purpose', purposeSelect)),
    el('div', { class: 'toolbar' }, submit),
    bar,
    status,
    result,
  );
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const chosen = file.files && file.files[0];
    if (!chosen) return;
    clear(result);
    const data = new FormData();
    data.append('purpose', purposeSelect.value);
    data.append('file', chosen, chosen.name);
    submit.disabled = true;
    bar.hidden = false;
    bar.value = 0;
    status.textContent = `Uploading ${chosen.name}…`;
    try {
      const created = await upload('/v1/files', data, (fraction) => {
        if (fraction === null) {
          bar.removeAttribute('value');
        } else {
          bar.value = fraction;
          status.textContent = `Uploading ${chosen.name}: ${Math.round(fraction * 100)} %`;
        }
      });
      bar.value = 1;
      status.textContent = `Uploaded ${created.filename} (${bytes(created.bytes)}).`;
      file.value = '';
      if (onDone) await onDone(created);
    } catch (err) {
      bar.hidden = true;
      status.textContent = '';
      result.append(errorBox(err));
    } finally {
      submit.disabled = false;
    }
  });
  return form;
}

function deleteButton(file, onDeleted, report) {
  let armed = false;
  const b = button('Delete', async () => {
    if (!armed) {
      armed = true;
      b.textContent = 'Confirm delete';
      return;
    }
    b.disabled = true;
    try {
      await api(`/v1/files/${encodeURIComponent(file.id)}`, { method: 'DELETE' });
      await onDeleted();
    } catch (err) {
      report(err);
      b.disabled = false;
    }
  }, { class: 'danger', 'aria-label': `Delete ${file.filename}` });
  b.addEventListener('blur', () => {
    armed = false;
    b.textContent = 'Delete';
  });
  return b;
}

export async function render(root, ctx) {
  let page = 0;
  const search = el('input', { type: 'search', name: 'search', placeholder: 'File name' });
  const list = el('div');
  const pager = el('div', { class: 'toolbar' });
  const report = (err) => ctx.banner.error(err);

  async function refresh() {
    loading(list);
    clear(pager);
    let answer;
    try {
      answer = await api(`/v1/files${query({ page, page_size: PAGE_SIZE, search: search.value.trim() })}`);
    } catch (err) {
      showError(list, err);
      return;
    }
    const files = answer.data || [];
    if (!files.length) {
      empty(list, search.value.trim() ? 'No file matches.' : 'No files yet: upload one above.');
    } else {
      clear(list).append(
        table(
          [
            { label: 'Name', value: (f) => f.filename },
            { label: 'Purpose', key: 'purpose' },
            { label: 'Size', value: (f) => bytes(f.bytes), class: 'nowrap' },
            { label: 'Lines', value: (f) => (f.num_lines ?? ''), class: 'nowrap' },
            { label: 'Created', value: (f) => when(f.created_at) },
            { label: 'ID', value: (f) => el('code', {}, f.id) },
            {
              label: 'Actions',
              value: (f) => el(
                'div',
                { class: 'toolbar' },
                button('Download', () => download(`/v1/files/${encodeURIComponent(f.id)}/content`, f.filename).catch(report),
                  { 'aria-label': `Download ${f.filename}` }),
                deleteButton(f, refresh, report),
              ),
            },
          ],
          files,
          { caption: answer.total != null ? `${answer.total} file${answer.total === 1 ? '' : 's'}` : null },
        ),
      );
    }
    const total = answer.total ?? null;
    const previous = button('Previous', () => { page -= 1; refresh(); }, { disabled: page === 0 });
    const more = total === null ? files.length === PAGE_SIZE : (page + 1) * PAGE_SIZE < total;
    const next = button('Next', () => { page += 1; refresh(); }, { disabled: !more });
    pager.append(previous, el('span', { class: 'muted' }, `Page ${page + 1}`), next);
  }

  const searchForm = el(
    'form',
    { class: 'toolbar', role: 'search' },
    formField('Search', search),
    el('button', { type: 'submit' }, 'Search'),
  );
  searchForm.addEventListener('submit', (e) => {
    e.preventDefault();
    page = 0;
    refresh();
  });

  root.append(
    el('h1', {}, 'Files'),
    uploadForm({ onDone: () => { page = 0; return refresh(); } }),
    el('section', { 'aria-label': 'Your files' }, el('h2', {}, 'Your files'), searchForm, list, pager),
  );
  await refresh();
}
