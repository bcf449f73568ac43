// Batch: create a job from an uploaded .jsonl file (POST /v1/batch/jobs), the jobs by page
// (GET /v1/batch/jobs), a job's live progress (polled), cancel, and its output and error files
// (shown inline and downloadable).
import { api, apiResponse, download, query } from '../api.js';
import { el, clear, fill, button, loading, empty, showError, errorBox, formField, table, when, select } from '../dom.js';
import { uploadForm } from './files.js';

const ENDPOINTS = [
  '/v1/chat/completions',
  '/v1/fim/completions',
  '/v1/embeddings',
  '/v1/moderations',
  '/v1/chat/moderations',
  '/v1/classifications',
  '/v1/chat/classifications',
  '/v1/ocr',
  '/v1/conversations',
  '/v1/audio/transcriptions',
];
const LIVE = new Set(['QUEUED', 'RUNNING', 'CANCELLATION_REQUESTED']);
const POLL_MS = 1000;
const PREVIEW_BYTES = 64 * 1024;
const PAGE_SIZE = 20;

function statusBadge(status) {
  const kind = status === 'SUCCESS' ? 'ok' : ['FAILED', 'TIMEOUT_EXCEEDED', 'CANCELLED'].includes(status) ? 'bad' : '';
  return el('span', { class: `badge ${kind}`.trim() }, status);
}

function progressOf(job) {
  const done = job.completed_requests || 0;
  const total = job.total_requests || 0;
  return el(
    'span',
    { class: 'progress-cell' },
    el('progress', { max: total || 1, value: total ? done : 0, 'aria-label': `${done} of ${total} requests done` }),
    el('span', { class: 'small muted' }, `${done} / ${total}`),
  );
}

/** The first bytes of a file's content, as text. */
async function preview(fileId) {
  const response = await apiResponse(`/v1/files/${encodeURIComponent(fileId)}/content`, {
    headers: { Accept: 'application/octet-stream', Range: `bytes=0-${PREVIEW_BYTES - 1}` },
  });
  const text = await response.text();
  return response.status === 206 && text.length >= PREVIEW_BYTES - 4 ? `${text}\n… (first ${PREVIEW_BYTES / 1024} KB)` : text;
}

function fileBlock(label, fileId) {
  const body = el('div');
  const show = button(`Show ${label}`, async () => {
    loading(body);
    try {
      clear(body).append(el('pre', { class: 'json', tabindex: '0' }, await preview(fileId)));
    } catch (err) {
      showError(body, err);
    }
  });
  const save = button(`Download ${label}`, () => download(`/v1/files/${encodeURIComponent(fileId)}/content`).catch((err) => showError(body, err)));
  return el('div', { class: 'file-block' }, el('div', { class: 'toolbar' }, show, save, el('code', { class: 'small' }, fileId)), body);
}

/** A job's card, refreshed by polling while the job runs; `onChange` when its status moves. */
function jobView(jobId, onChange) {
  const node = el('section', { class: 'card', 'aria-label': 'Batch job', 'aria-live': 'polite' });
  let timer = null;
  let lastStatus = null;
  let shownFiles = '';
  const files = el('div');
  const head = el('div');
  function draw(job) {
    const cancel = LIVE.has(job.status) && job.status !== 'CANCELLATION_REQUESTED'
      ? button('Cancel job', async () => {
        try {
          draw(await api(`/v1/batch/jobs/${encodeURIComponent(job.id)}/cancel`, { method: 'POST' }));
        } catch (err) {
          head.append(errorBox(err));
        }
      }, { class: 'danger' })
      : null;
    fill(head,
      el('h2', {}, 'Job ', el('code', {}, job.id)),
      el('p', {}, statusBadge(job.status), ' ', job.endpoint, ' · ', job.model || job.agent_id || ''),
      progressOf(job),
      el('p', { class: 'small muted' },
        `${job.succeeded_requests} succeeded, ${job.failed_requests} failed · created ${when(job.created_at)}`,
        job.completed_at ? ` · completed ${when(job.completed_at)}` : ''),
      (job.errors || []).length
        ? el('ul', { class: 'errors' }, job.errors.map((e) => el('li', {}, `${e.message} (×${e.count})`)))
        : null,
      cancel ? el('div', { class: 'toolbar' }, cancel) : null,
    );
    const key = `${job.output_file}|${job.error_file}`;
    if (key !== shownFiles) {
      shownFiles = key;
      clear(files);
      if (job.output_file) files.append(el('h3', {}, 'Output'), fileBlock('output', job.output_file));
      if (job.error_file) files.append(el('h3', {}, 'Errors'), fileBlock('errors', job.error_file));
      if (!job.output_file && !job.error_file && !LIVE.has(job.status)) files.append(el('p', { class: 'empty' }, 'No output file.'));
    }
    if (lastStatus !== null && lastStatus !== job.status && onChange) onChange(job);
    lastStatus = job.status;
  }
  async function poll() {
    timer = null;
    let job;
    try {
      job = await api(`/v1/batch/jobs/${encodeURIComponent(jobId)}`);
    } catch (err) {
      showError(head, err);
      return;
    }
    if (!node.isConnected && lastStatus !== null) return; // the user opened another job
    draw(job);
    if (LIVE.has(job.status)) timer = setTimeout(poll, POLL_MS);
  }
  node.append(head, files);
  loading(head, 'Loading the job…');
  poll();
  return { node, stop: () => timer && clearTimeout(timer) };
}

function createForm(onCreated) {
  const inputFile = el('select', { name: 'input_file', required: true });
  const model = el('select', { name: 'model', required: true });
  const endpoint = select(ENDPOINTS, '/v1/chat/completions', { name: 'endpoint' });
  const result = el('div');
  const submit = el('button', { type: 'submit', class: 'primary' }, 'Create job');
  const form = el(
    'form',
    { class: 'card', 'aria-label': 'Create a batch job' },
    el('h2', {}, 'Create a job'),
    el('p', { class: 'small muted' }, 'The input is a .jsonl file of requests: one {"custom_id", "body"} per line, uploaded with the purpose "batch".'),
    el('div', { class: 'grid2' },
      formField('Input file', inputFile),
      formField('Model', model),
      formField('Endpoint', endpoint)),
    el('div', { class: 'toolbar' }, submit),
    result,
  );
  async function loadChoices(selectedFile) {
    clear(result);
    try {
      const [files, models] = await Promise.all([
        api(`/v1/files${query({ purpose: 'batch', page_size: 100 })}`),
        api('/v1/models'),
      ]);
      clear(inputFile);
      for (const f of files.data || []) {
        inputFile.append(el('option', { value: f.id, selected: f.id === selectedFile }, `${f.filename} (${f.num_lines ?? '?'} lines)`));
      }
      if (!inputFile.options.length) inputFile.append(el('option', { value: '' }, 'No batch file yet: upload one'));
      clear(model);
      for (const m of models.data || []) {
        model.append(el('option', { value: m.id, selected: m.id === 'maestrale-echo' }, m.id));
      }
    } catch (err) {
      result.append(errorBox(err));
    }
  }
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    clear(result);
    if (!inputFile.value) {
      result.append(errorBox('Choose an input file (upload one first).'));
      return;
    }
    submit.disabled = true;
    try {
      const job = await api('/v1/batch/jobs', {
        method: 'POST',
        body: { input_files: [inputFile.value], model: model.value, endpoint: endpoint.value },
      });
      onCreated(job);
    } catch (err) {
      result.append(errorBox(err));
    } finally {
      submit.disabled = false;
    }
  });
  return { node: form, loadChoices };
}

export async function render(root, ctx) {
  let page = 0;
  let current = null;
  const detail = el('div');
  const list = el('div');
  const pager = el('div', { class: 'toolbar' });

  function open(jobId) {
    if (current) current.stop();
    current = jobView(jobId, () => refresh());
    clear(detail).append(current.node);
    const url = new URL(window.location.href);
    url.searchParams.set('job', jobId);
    window.history.replaceState(null, '', url);
    current.node.scrollIntoView({ block: 'nearest' });
  }

  async function refresh() {
    if (!list.children.length) loading(list);
    clear(pager);
    let answer;
    try {
      answer = await api(`/v1/batch/jobs${query({ page, page_size: PAGE_SIZE })}`);
    } catch (err) {
      showError(list, err);
      return;
    }
    const jobs = answer.data || [];
    if (!jobs.length) {
      empty(list, 'No batch jobs yet: create one above.');
      return;
    }
    clear(list).append(table(
      [
        { label: 'Job', value: (j) => el('code', {}, j.id) },
        { label: 'Status', value: (j) => statusBadge(j.status), class: 'nowrap' },
        { label: 'Progress', value: progressOf },
        { label: 'Model', value: (j) => j.model || j.agent_id || '' },
        { label: 'Endpoint', key: 'endpoint' },
        { label: 'Created', value: (j) => when(j.created_at) },
        { label: '', value: (j) => button('Open', () => open(j.id), { 'aria-label': `Open job ${j.id}` }) },
      ],
      jobs,
      { caption: `${answer.total} job${answer.total === 1 ? '' : 's'}` },
    ));
    pager.append(
      button('Previous', () => { page -= 1; refresh(); }, { disabled: page === 0 }),
      el('span', { class: 'muted' }, `Page ${page + 1}`),
      button('Next', () => { page += 1; refresh(); }, { disabled: (page + 1) * PAGE_SIZE >= answer.total }),
    );
  }

  const create = createForm((job) => {
    open(job.id);
    refresh();
  });
  root.append(
    el('h1', {}, 'Batch'),
    el('div', { class: 'grid2' },
      create.node,
      uploadForm({ title: 'Upload an input file', onDone: (f) => create.loadChoices(f.id) })),
    detail,
    el('section', { 'aria-label': 'Batch jobs' }, el('h2', {}, 'Jobs'), list, pager),
  );
  const wanted = ctx.params.get('job');
  if (wanted) open(wanted);
  await Promise.all([create.loadChoices(), refresh()]);
}
