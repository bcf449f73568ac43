// Campaigns: start one (a judge over the newest events matching a filter), follow its status,
// list the events it selected, and collect its results: the API hands verdicts out through an
// import into a dataset (`imports/from-campaign`), whose records carry `answer` and `analysis`.
import { api } from '../api.js';
import { el, clear, loading, empty, showError, pageNav } from '../dom.js';
import { ask } from './conversation.js';
import {
  button, field, grid, when, qs, extraSummary, loadFields, filterBuilder, textFilter, combine,
} from './observability.js';

const sleep = (ms) => new Promise((r) => { setTimeout(r, ms); });

// Polls a dataset import task until it ends; `onTick(task)` on every read.
export async function waitForTask(datasetId, taskId, onTick, isGone = () => false) {
  for (;;) {
    const task = await api(`/v1/observability/datasets/${encodeURIComponent(datasetId)}/tasks/${encodeURIComponent(taskId)}`);
    onTick(task);
    if (task.status !== 'RUNNING' || isGone()) return task;
    await sleep(700);
  }
}

function statusBadge(status) {
  return el('span', { class: `badge status-${String(status).toLowerCase()}` }, String(status));
}

export async function render(root, ctx) {
  clear(root);
  const formBox = el('div', {});
  const listBox = el('section', { class: 'card', 'aria-label': 'Campaigns' });
  const detail = el('section', { class: 'card', 'aria-live': 'polite' });
  detail.hidden = true;
  root.append(el('header', { class: 'toolbar' }, el('h1', {}, 'Campaigns'),
    button('New campaign', () => showForm(), { class: 'primary', id: 'new-campaign' })),
  formBox, listBox, detail);
  let viewing = 0; // bumps when another campaign is shown: stops the previous polling

  async function showForm() {
    clear(formBox);
    const box = el('div', { class: 'card' });
    formBox.append(box);
    loading(box);
    let judges;
    let fields;
    try {
      [judges, fields] = await Promise.all([
        api('/v1/observability/judges?page_size=100').then((r) => r.judges.results),
        loadFields(),
      ]);
    } catch (err) {
      showError(box, err);
      return;
    }
    clear(box);
    if (!judges.length) {
      box.append(el('p', {}, 'A campaign runs a judge: ', el('a', { href: '/console/judges' }, 'create a judge'), ' first.'));
      return;
    }
    const name = el('input', { type: 'text', required: '', maxlength: '500', autocomplete: 'off' });
    const description = el('input', { type: 'text', autocomplete: 'off' });
    const judge = el('select', {}, ...judges.map((j) => el('option', { value: j.id }, j.name)));
    const max = el('input', { type: 'number', min: '1', max: '10000', step: '1', value: '100', required: '' });
    const text = el('input', { type: 'search', placeholder: 'Words in the messages' });
    const builder = filterBuilder(fields.field_definitions, fields.field_groups);
    const error = el('div', { role: 'alert' });
    const submit = el('button', { type: 'submit', class: 'primary' }, 'Start campaign');
    const form = el('form', { 'aria-label': 'New campaign' },
      el('h2', {}, 'New campaign'),
      field('Name', name), field('Description', description), field('Judge', judge),
      field('Events at most', max, 'The newest events matching the filters are judged, one by one.'),
      el('h3', {}, 'Which events'), field('Message text contains', text), builder.node,
      error, el('div', { class: 'toolbar' }, submit, button('Cancel', () => clear(formBox))));
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      clear(error);
      submit.disabled = true;
      try {
        const campaign = await api('/v1/observability/campaigns', {
          method: 'POST',
          body: {
            name: name.value.trim(),
            description: description.value,
            judge_id: judge.value,
            max_nb_events: Number(max.value),
            search_params: { filters: combine(builder.value(), textFilter(text.value.trim())) },
          },
        });
        clear(formBox);
        await loadList();
        select(campaign.id);
      } catch (err) {
        showError(error, err);
      } finally {
        submit.disabled = false;
      }
    });
    box.append(form);
    name.focus();
  }

  const state = { page: 1 };
  async function loadList() {
    loading(listBox);
    try {
      const page = (await api(`/v1/observability/campaigns${qs({ page: state.page, page_size: 20 })}`)).campaigns;
      clear(listBox);
      listBox.append(el('h2', {}, `Campaigns (${page.count})`));
      if (!page.results.length) {
        const note = el('div', {});
        empty(note, 'No campaigns yet: start one with "New campaign".');
        listBox.append(note);
        return;
      }
      const statusCells = new Map();
      listBox.append(grid(['Name', 'Judge', 'Events at most', 'Created', 'Status'], page.results, (c) => {
        const cell = el('span', {}, '…');
        statusCells.set(c.id, cell);
        return [button(c.name, () => select(c.id), { class: 'link', 'data-campaign-id': c.id }), c.judge.name, String(c.max_nb_events), when(c.created_at), cell];
      }));
      listBox.append(pageNav(page, 'Pages', (step) => { state.page += step; loadList(); }));
      for (const [id, cell] of statusCells) {
        api(`/v1/observability/campaigns/${encodeURIComponent(id)}/status`)
          .then((s) => { clear(cell); cell.append(statusBadge(s.status)); })
          .catch(() => { cell.textContent = '?'; });
      }
    } catch (err) {
      showError(listBox, err);
    }
  }

  async function select(id) {
    viewing += 1;
    const mine = viewing;
    const gone = () => mine !== viewing;
    detail.hidden = false;
    loading(detail);
    let campaign;
    try {
      campaign = await api(`/v1/observability/campaigns/${encodeURIComponent(id)}`);
    } catch (err) {
      showError(detail, err);
      return;
    }
    clear(detail);
    const path = `/v1/observability/campaigns/${encodeURIComponent(campaign.id)}`;
    const statusBox = el('div', { role: 'status', id: 'campaign-status' });
    const progress = el('progress', { 'aria-label': 'Campaign progress' });
    const eventsBox = el('div', {});
    const resultsBox = el('div', { 'aria-live': 'polite', id: 'campaign-results' });
    const msg = el('div', { role: 'alert' });
    detail.append(
      el('header', { class: 'toolbar' }, el('h2', { id: 'campaign-name' }, campaign.name),
        button('Delete', async (ev) => {
          if (!(await ask(ev.currentTarget || ev.target, `Delete campaign "${campaign.name}"?`))) return;
          ev.target.disabled = true;
          try {
            await api(path, { method: 'DELETE' });
            viewing += 1;
            clear(detail);
            detail.hidden = true;
            loadList();
          } catch (err) {
            ev.target.disabled = false;
            showError(msg, err);
          }
        }, { class: 'danger' })),
      msg,
      el('dl', { class: 'facts' },
        el('dt', {}, 'Description'), el('dd', {}, campaign.description || '—'),
        el('dt', {}, 'Judge'), el('dd', {}, el('a', { href: `/console/judges?judge=${encodeURIComponent(campaign.judge.id)}` }, campaign.judge.name)),
        el('dt', {}, 'Events at most'), el('dd', {}, String(campaign.max_nb_events)),
        el('dt', {}, 'Created'), el('dd', {}, when(campaign.created_at)),
        el('dt', {}, 'Filters'), el('dd', {}, el('pre', {}, JSON.stringify(campaign.search_params, null, 2))),
        el('dt', {}, 'Status'), el('dd', {}, statusBox, progress)),
      el('h3', {}, 'Selected events'), eventsBox,
      el('h3', {}, 'Results'), resultsBox);

    let eventsPage = 1;
    async function loadEvents() {
      loading(eventsBox);
      try {
        const page = (await api(`${path}/selected-events${qs({ page: eventsPage, page_size: 10 })}`)).completion_events;
        clear(eventsBox);
        eventsBox.append(el('p', {}, `${page.count} events selected.`));
        if (page.results.length) {
          eventsBox.append(grid(['Event', 'Created', 'Correlation id', 'Extra fields'], page.results, (r) => [
            el('a', { href: `/console/observability?event=${encodeURIComponent(r.event_id)}`, class: 'mono' }, r.event_id),
            when(r.created_at), r.correlation_id, extraSummary(r.extra_fields)]));
        }
        eventsBox.append(pageNav(page, 'Selected events pages', (step) => { eventsPage += step; loadEvents(); }));
      } catch (err) {
        showError(eventsBox, err);
      }
    }
    loadEvents();

    const collect = button('Collect results into a new dataset', () => collectResults(), { id: 'collect-results' });
    resultsBox.append(el('p', {}, 'Verdicts are read through a dataset: each judged event becomes a record with the judge\'s answer and analysis.'), collect);

    async function collectResults() {
      collect.disabled = true;
      const out = el('div', {});
      resultsBox.append(out);
      loading(out, 'Creating the dataset…');
      try {
        const dataset = await api('/v1/observability/datasets', {
          method: 'POST', body: { name: `Results of ${campaign.name} (${new Date().toLocaleString()})`, description: `Verdicts of campaign ${campaign.id}` },
        });
        const task = await api(`/v1/observability/datasets/${encodeURIComponent(dataset.id)}/imports/from-campaign`, {
          method: 'POST', body: { campaign_id: campaign.id },
        });
        const bar = el('progress', { max: '100', 'aria-label': 'Import progress' });
        const note = el('span', { role: 'status' }, 'Importing…');
        clear(out);
        out.append(bar, note);
        const done = await waitForTask(dataset.id, task.id, (t) => {
          if (typeof t.progress === 'number') bar.value = t.progress;
          note.textContent = ` ${t.status}${t.message ? `: ${t.message}` : ''}`;
        }, gone);
        if (gone()) return;
        if (done.status !== 'COMPLETED') return;
        const records = (await api(`/v1/observability/datasets/${encodeURIComponent(dataset.id)}/records?page_size=100`)).records;
        clear(out);
        out.append(el('p', {}, `${records.count} verdicts in `,
          el('a', { href: `/console/datasets?dataset=${encodeURIComponent(dataset.id)}` }, dataset.name), '.'));
        if (!records.results.length) {
          out.append(el('p', { class: 'empty' }, 'No event judged yet (or every judging failed).'));
          return;
        }
        const counts = new Map();
        for (const r of records.results) {
          const a = String(r.properties.answer);
          counts.set(a, (counts.get(a) || 0) + 1);
        }
        out.append(grid(['Answer', 'Events'], [...counts.entries()].sort((x, y) => y[1] - x[1]), ([a, n]) => [a, String(n)], { class: 'answer-counts' }));
        out.append(grid(['Event', 'Answer', 'Analysis'], records.results, (r) => [
          el('a', { href: `/console/observability?event=${encodeURIComponent(r.properties.event_id || '')}`, class: 'mono' }, String(r.properties.event_id || '')),
          String(r.properties.answer ?? ''), String(r.properties.analysis ?? '')], { class: 'verdicts' }));
      } catch (err) {
        showError(out, err);
      } finally {
        collect.disabled = false;
      }
    }

    // Status: polled while RUNNING.
    for (;;) {
      let status;
      try {
        status = (await api(`${path}/status`)).status;
      } catch (err) {
        showError(statusBox, err);
        return;
      }
      if (gone()) return;
      clear(statusBox);
      statusBox.append(statusBadge(status));
      if (status === 'RUNNING') {
        progress.removeAttribute('value');
      } else {
        progress.max = 1;
        progress.value = 1;
        progress.hidden = true;
        loadEvents();
        loadList();
        return;
      }
      await sleep(1500);
      if (gone()) return;
    }
  }

  await loadList();
  const wanted = new URLSearchParams(window.location.search).get('campaign');
  if (wanted) select(wanted);
}
