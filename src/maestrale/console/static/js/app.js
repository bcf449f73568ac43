// Boots a console page: the shell's <body data-page="..."> names the page module
// (`./pages/<page>.js`), whose `render(root, ctx)` fills <main>. Builds the navigation (admin
// links only with an admin key in the session), the sign-out button and the error banner.
import { csrfToken } from './api.js';
import { el, clear, errorBox, showError } from './dom.js';

export const NAV = [
  { page: 'playground', href: '/console/playground', label: 'Playground' },
  { page: 'agents', href: '/console/agents', label: 'Agents' },
  { page: 'files', href: '/console/files', label: 'Files' },
  { page: 'batch', href: '/console/batch', label: 'Batch' },
  { page: 'observability', href: '/console/observability', label: 'Observability' },
  { page: 'traces', href: '/console/traces', label: 'Traces' },
  { page: 'judges', href: '/console/judges', label: 'Judges' },
  { page: 'campaigns', href: '/console/campaigns', label: 'Campaigns' },
  { page: 'datasets', href: '/console/datasets', label: 'Datasets' },
  { page: 'admin-keys', href: '/console/admin/keys', label: 'Keys', admin: true },
  { page: 'admin-users', href: '/console/admin/users', label: 'Users', admin: true },
  { page: 'admin-workspaces', href: '/console/admin/workspaces', label: 'Workspaces', admin: true },
  { page: 'admin-limits', href: '/console/admin/limits', label: 'Limits', admin: true },
  { page: 'admin-usage', href: '/console/admin/usage', label: 'Usage', admin: true },
];

function meta(name) {
  const m = document.querySelector(`meta[name="${name}"]`);
  return m ? m.getAttribute('content') || '' : '';
}

function navLink(item, current) {
  const attrs = { href: item.href };
  if (item.page === current) attrs['aria-current'] = 'page';
  return el('li', {}, el('a', attrs, item.label));
}

function signOutForm() {
  return el(
    'form',
    { method: 'post', action: '/console/session/delete', class: 'sign-out' },
    el('input', { type: 'hidden', name: 'csrf_token', value: csrfToken() }),
    el('button', { type: 'submit', class: 'secondary' }, 'Sign out'),
  );
}

function header(current, admin) {
  const menuId = 'console-nav';
  const toggle = el(
    'button',
    { type: 'button', class: 'nav-toggle', 'aria-expanded': 'false', 'aria-controls': menuId },
    'Menu',
  );
  const standard = NAV.filter((i) => !i.admin).map((i) => navLink(i, current));
  const adminLinks = admin ? NAV.filter((i) => i.admin).map((i) => navLink(i, current)) : [];
  const nav = el(
    'nav',
    { id: menuId, 'aria-label': 'Console' },
    el('ul', {}, standard),
    adminLinks.length ? el('p', { class: 'nav-group' }, 'Admin') : null,
    adminLinks.length ? el('ul', {}, adminLinks) : null,
    signOutForm(),
  );
  toggle.addEventListener('click', () => {
    const open = toggle.getAttribute('aria-expanded') !== 'true';
    toggle.setAttribute('aria-expanded', String(open));
    nav.classList.toggle('open', open);
  });
  return el(
    'header',
    { class: 'top' },
    el('a', { class: 'brand', href: '/console/playground' }, 'Maestrale'),
    toggle,
    nav,
  );
}

/** The page-wide banner: `banner.error(err)`, `banner.info(text)`, `banner.clear()`. */
function makeBanner(node) {
  return {
    error(err) {
      clear(node);
      const box = errorBox(err);
      box.append(el('button', { type: 'button', class: 'link', onclick: () => clear(node) }, 'Dismiss'));
      node.append(box);
    },
    info(text) {
      clear(node);
      node.append(el('div', { class: 'info', role: 'status' }, text));
    },
    clear() {
      clear(node);
    },
  };
}

async function boot() {
  const body = document.body;
  const page = body.dataset.page || 'playground';
  const admin = meta('console-admin') === '1';
  const bannerNode = el('div', { class: 'banner', 'aria-live': 'polite' });
  const root = el('main', { id: 'main', tabindex: '-1' });
  const skip = el('a', { class: 'skip', href: '#main' }, 'Skip to content');
  body.replaceChildren(skip, header(page, admin), bannerNode, root);
  const banner = makeBanner(bannerNode);
  const ctx = {
    page,
    id: body.dataset.id || null, // e.g. the conversation id of /console/conversations/{id}
    admin,
    defaultModel: meta('default-model') || null, // the catalog's best real chat model
    params: new URLSearchParams(window.location.search),
    banner,
    title(text) {
      document.title = `${text} · Maestrale console`;
    },
  };
  window.addEventListener('unhandledrejection', (e) => {
    if (e.reason && e.reason.name === 'AbortError') return;
    banner.error(e.reason);
  });
  const label = (NAV.find((i) => i.page === page) || { label: page }).label;
  ctx.title(label);
  let module;
  try {
    module = await import(`./pages/${page}.js`);
  } catch (err) {
    showError(root, new Error(`could not load the page "${page}": ${err.message || err}`));
    return;
  }
  try {
    await module.render(root, ctx);
  } catch (err) {
    showError(root, err);
  }
}

boot();
