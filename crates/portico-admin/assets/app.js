// Portico admin page. Plain JavaScript, no dependencies.
//
// Two rules hold everywhere below:
// - Data from the server is put on the page only as text (text nodes, textContent, input
//   values), never as HTML, so a document holding markup shows that markup.
// - The login token lives in sessionStorage and goes out in the X-Auth-Token header only:
//   never in a URL, never in a cookie, so no other site can make the browser act with it.
'use strict';

const TOKEN_KEY = 'portico-admin-token';
const USER_KEY = 'portico-admin-user';
/** '1' while the collections view lists Portico's own (portico_*) collections. */
const INTERNAL_KEY = 'portico-admin-internal';
const API = new URL('api/', document.baseURI);
const PAGE = 20;

// ----- helpers -----

/** An element with attributes (`on*` functions become listeners) and children (strings become text). */
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith('on') && typeof value === 'function') {
      node.addEventListener(key.slice(2), value);
    } else if (key === 'dataset') {
      Object.assign(node.dataset, value);
    } else if (value === true) {
      node.setAttribute(key, '');
    } else {
      node.setAttribute(key, String(value));
    }
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function clear(node) {
  node.replaceChildren();
  return node;
}

/** A short one-line text for a table cell. */
function cellText(value) {
  if (value === undefined) return '';
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text.length > 80 ? text.slice(0, 79) + '…' : text;
}

function token() {
  return sessionStorage.getItem(TOKEN_KEY);
}

class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/**
 * Calls the admin API; throws ApiError with the server's message. A 401 logs the page out.
 * A Blob (a chosen file) is sent as it is, with its own type; anything else as JSON.
 */
async function call(method, path, body) {
  const headers = { Accept: 'application/json' };
  const t = token();
  if (t) headers['X-Auth-Token'] = t;
  const raw = body instanceof Blob;
  if (raw) headers['Content-Type'] = body.type || 'application/octet-stream';
  else if (body !== undefined) headers['Content-Type'] = 'application/json';
  let response;
  try {
    response = await fetch(new URL(path, API), {
      method,
      headers,
      body: body === undefined ? undefined : raw ? body : JSON.stringify(body),
      credentials: 'omit',
      cache: 'no-store',
    });
  } catch (e) {
    throw new ApiError(0, 'The server cannot be reached.');
  }
  let data = null;
  const text = await response.text();
  if (text) {
    try { data = JSON.parse(text); } catch (e) { data = { error: text }; }
  }
  if (!response.ok) {
    if (response.status === 401 && path !== 'login') {
      forget();
      showLogin('Your session has ended; log in again.');
    }
    throw new ApiError(response.status, (data && data.error) || response.statusText);
  }
  return data;
}

function errorBox(id) {
  return el('p', { class: 'error', role: 'alert', id });
}

function showError(box, error) {
  box.textContent = error ? (error.message || String(error)) : '';
}

function notice(text) {
  const bar = document.getElementById('notice') || document.body.appendChild(
    el('div', { id: 'notice', role: 'status', 'aria-live': 'polite' }));
  bar.textContent = text;
  bar.classList.add('shown');
  clearTimeout(notice.timer);
  notice.timer = setTimeout(() => bar.classList.remove('shown'), 3000);
}

// ----- session -----

function forget() {
  sessionStorage.removeItem(TOKEN_KEY);
  sessionStorage.removeItem(USER_KEY);
}

function showLogin(message) {
  document.getElementById('top').hidden = true;
  clear(document.getElementById('view'));
  document.getElementById('login-view').hidden = false;
  document.getElementById('login-error').textContent = message || '';
  const field = document.querySelector('#login-form [name=user]');
  if (field) field.focus();
}

async function login(event) {
  event.preventDefault();
  const form = event.target;
  const box = document.getElementById('login-error');
  box.textContent = '';
  const button = form.querySelector('button');
  button.disabled = true;
  try {
    const reply = await call('POST', 'login', {
      user: form.user.value.trim(),
      password: form.password.value,
      totp: form.totp.value.trim() || undefined,
    });
    sessionStorage.setItem(TOKEN_KEY, reply.token);
    sessionStorage.setItem(USER_KEY, reply.user.username || reply.user._id);
    form.reset();
    start();
  } catch (e) {
    showError(box, e);
  } finally {
    button.disabled = false;
  }
}

async function logout() {
  try { await call('POST', 'logout'); } catch (e) { /* logged out either way */ }
  forget();
  location.hash = '';
  showLogin('You are logged out.');
}

function start() {
  document.getElementById('login-view').hidden = true;
  document.getElementById('top').hidden = false;
  document.getElementById('whoami').textContent = sessionStorage.getItem(USER_KEY) || '';
  if (!location.hash || location.hash === '#') {
    location.hash = '#/collections';
  } else {
    route();
  }
}

// ----- router -----

function route() {
  if (!token()) {
    showLogin();
    return;
  }
  const parts = location.hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  const view = parts[0] || 'collections';
  for (const link of document.querySelectorAll('nav a')) {
    if (link.dataset.view === view) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  const root = clear(document.getElementById('view'));
  if (view === 'users') usersView(root);
  else if (view === 'api') apiView(root);
  else if (view === 'backups') backupsView(root);
  else if (view === 'jobs') jobsView(root);
  else if (view === 'keys') keysView(root);
  else collectionsView(root, parts[1]);
}

// ----- collections -----

async function collectionsView(root, selected) {
  const list = el('ul', { class: 'plain', id: 'collection-list' });
  const side = el('nav', { class: 'side', 'aria-label': 'Collections' }, el('h2', {}, 'Collections'), list);
  const detail = el('div', { class: 'detail', id: 'collection-detail' });
  const box = errorBox('collections-error');
  root.append(el('div', { class: 'split' }, side, detail), box);
  // Portico's own collections (portico_*) are hidden unless asked for, or opened by address.
  const showInternal = sessionStorage.getItem(INTERNAL_KEY) === '1'
    || Boolean(selected && selected.startsWith('portico_'));
  let collections;
  let internalCount;
  try {
    const reply = await call('GET', 'collections' + (showInternal ? '?internal=true' : ''));
    collections = reply.collections;
    internalCount = reply.internal || 0;
  } catch (e) {
    showError(box, e);
    return;
  }
  if (collections.length === 0) {
    list.append(el('li', { class: 'muted' }, 'No collections yet.'));
  }
  if (internalCount > 0) {
    side.append(el('label', { class: 'small muted toggle' },
      el('input', { type: 'checkbox', id: 'show-internal', checked: showInternal, onchange: (e) => {
        sessionStorage.setItem(INTERNAL_KEY, e.target.checked ? '1' : '0');
        const keep = selected && !(selected.startsWith('portico_') && !e.target.checked);
        const hash = '#/collections' + (keep ? '/' + encodeURIComponent(selected) : '');
        if (location.hash === hash) route();
        else location.hash = hash;
      } }),
      ' Show Portico\'s own collections (' + internalCount + ', read-only)'));
  }
  for (const c of collections) {
    list.append(el('li', {},
      el('a', {
        href: '#/collections/' + encodeURIComponent(c.name),
        'aria-current': c.name === selected ? 'page' : false,
      }, el('span', {}, c.name), ' ', el('span', { class: 'count' }, String(c.count)))));
  }
  const current = collections.find((c) => c.name === selected)
    || (selected ? null : collections.find((c) => !c.internal) || collections[0]);
  if (current) {
    documentsPanel(detail, current);
  } else if (selected) {
    detail.append(el('p', { class: 'error' }, 'No collection named ' + selected + '.'));
  }
}

function documentsPanel(root, collection) {
  const state = { filter: '', sort: '', skip: 0 };
  const filterInput = el('input', {
    id: 'filter', name: 'where', spellcheck: 'false', autocomplete: 'off',
    placeholder: '{"status": "open", "count": {"$gt": 2}}',
    'aria-describedby': 'filter-help',
  });
  const filterError = errorBox('filter-error');
  const form = el('form', { class: 'filter', role: 'search', onsubmit: (e) => {
    e.preventDefault();
    state.filter = filterInput.value.trim();
    state.skip = 0;
    load();
  } },
  el('label', { for: 'filter' }, 'where'),
  filterInput,
  el('button', { type: 'submit' }, 'Filter'),
  el('button', { type: 'button', class: 'secondary', onclick: () => {
    filterInput.value = '';
    state.filter = '';
    state.skip = 0;
    load();
  } }, 'Clear'));
  const help = el('p', { class: 'muted small', id: 'filter-help' },
    'A selector as the routes take it in ?where=, e.g. {"tags": "red"} or {"n": {"$gte": 3}}. Click a column to sort.');
  const table = el('div', { class: 'table-wrap', id: 'documents' });
  const pager = el('div', { class: 'pager' });
  const panel = el('div', { id: 'document-panel' });
  const actions = collection.internal
    ? el('p', { class: 'muted small', id: 'internal-note' }, 'One of Portico\'s own collections, kept by the server: read-only here.')
    : collection.readOnly
    ? el('p', { class: 'muted small' }, 'Accounts are changed in the Users view; passwords and tokens are never shown.')
    : el('button', { type: 'button', id: 'new-document', onclick: () => editor(panel, collection, null, load) }, 'New document');
  root.append(
    el('div', { class: 'title-row' },
      el('h2', {}, collection.name),
      el('span', { class: 'muted' }, collection.schema ? 'JSON Schema checked' : 'no schema'),
      el('span', { class: 'muted', id: 'indexes' }, (collection.indexes || []).length
        ? 'indexes: ' + collection.indexes.join(' · ')
        : 'no sorted indexes'),
      actions),
    form, help, filterError, table, pager, panel);

  async function load() {
    showError(filterError, null);
    const params = new URLSearchParams({ skip: String(state.skip), limit: String(PAGE) });
    if (state.filter) params.set('where', state.filter);
    if (state.sort) params.set('sort', state.sort);
    let page;
    try {
      page = await call('GET', 'collections/' + encodeURIComponent(collection.name) + '/documents?' + params);
    } catch (e) {
      showError(filterError, e);
      filterInput.setAttribute('aria-invalid', 'true');
      return;
    }
    filterInput.removeAttribute('aria-invalid');
    renderTable(page);
    renderPager(page);
  }

  function sortBy(field) {
    state.sort = state.sort === field ? '-' + field : field;
    state.skip = 0;
    load();
  }

  function renderTable(page) {
    const fields = ['_id'];
    for (const doc of page.documents) {
      for (const key of Object.keys(doc)) {
        if (!fields.includes(key) && fields.length < 7) fields.push(key);
      }
    }
    const head = el('tr', {}, fields.map((f) => {
      const dir = state.sort === f ? 'ascending' : state.sort === '-' + f ? 'descending' : 'none';
      return el('th', { scope: 'col', 'aria-sort': dir },
        el('button', { type: 'button', class: 'sort', onclick: () => sortBy(f) },
          f, dir === 'ascending' ? ' ▲' : dir === 'descending' ? ' ▼' : ''));
    }));
    const rows = page.documents.map((doc) => el('tr', {},
      fields.map((f, i) => i === 0
        ? el('td', {}, el('button', {
          type: 'button', class: 'link', onclick: () => viewer(panel, collection, doc, load),
        }, cellText(doc[f])))
        : el('td', {}, cellText(doc[f])))));
    const body = rows.length ? rows
      : [el('tr', {}, el('td', { colspan: String(fields.length), class: 'muted' }, 'No documents match.'))];
    clear(table).append(el('table', {}, el('caption', { class: 'sr-only' }, 'Documents of ' + collection.name),
      el('thead', {}, head), el('tbody', {}, body)));
  }

  function renderPager(page) {
    const first = page.total === 0 ? 0 : page.skip + 1;
    const last = page.skip + page.documents.length;
    clear(pager).append(
      el('button', { type: 'button', class: 'secondary', disabled: page.skip === 0, onclick: () => {
        state.skip = Math.max(0, state.skip - PAGE);
        load();
      } }, '‹ Previous'),
      el('span', { id: 'page-info' }, first + '–' + last + ' of ' + page.total),
      el('button', { type: 'button', class: 'secondary', disabled: last >= page.total, onclick: () => {
        state.skip += PAGE;
        load();
      } }, 'Next ›'));
  }

  load();
}

function docPath(collection, id) {
  return 'collections/' + encodeURIComponent(collection.name) + '/documents' + (id === undefined ? '' : '/' + encodeURIComponent(id));
}

function viewer(panel, collection, doc, reload) {
  const box = errorBox('document-error');
  const buttons = collection.readOnly ? [] : [
    el('button', { type: 'button', id: 'edit-document', onclick: () => editor(panel, collection, doc, reload) }, 'Edit'),
    el('button', { type: 'button', id: 'delete-document', class: 'danger', onclick: async () => {
      if (!confirm('Delete the document ' + doc._id + ' of ' + collection.name + '?')) return;
      try {
        await call('DELETE', docPath(collection, doc._id));
        clear(panel);
        notice('Deleted ' + doc._id + '.');
        reload();
      } catch (e) { showError(box, e); }
    } }, 'Delete'),
  ];
  const again = async () => {
    const fresh = await call('GET', docPath(collection, doc._id));
    reload();
    viewer(panel, collection, fresh, reload);
  };
  clear(panel).append(el('section', { class: 'card', 'aria-label': 'Document' },
    el('div', { class: 'title-row' }, el('h3', {}, 'Document ' + doc._id), ...buttons,
      el('button', { type: 'button', class: 'secondary', onclick: () => clear(panel) }, 'Close')),
    el('pre', { id: 'document-json', tabindex: '0' }, JSON.stringify(doc, null, 2)),
    filesSection(collection, doc, again),
    box));
  panel.scrollIntoView({ block: 'nearest' });
}

// ----- files of a document -----

/** Types the server makes thumbnails of; other files get a download link. */
const PREVIEWABLE = ['image/png', 'image/jpeg', 'image/webp'];
const PREVIEW_SIZE = '160x160f';

function filePath(collection, id, field, name) {
  return docPath(collection, id) + '/files/' + encodeURIComponent(field)
    + (name === undefined ? '' : '/' + encodeURIComponent(name));
}

/** The file metadata a field holds: one object, or an array of them. */
function filesIn(doc, field) {
  const value = doc[field];
  const list = Array.isArray(value) ? value : value ? [value] : [];
  return list.filter((f) => f && typeof f === 'object' && typeof f.name === 'string');
}

/** An admin API file, fetched with the token header (never in a URL), as a Blob. */
async function fetchBlob(path) {
  let response;
  try {
    response = await fetch(new URL(path, API), {
      headers: { 'X-Auth-Token': token() || '' },
      credentials: 'omit',
      cache: 'no-store',
    });
  } catch (e) {
    throw new ApiError(0, 'The server cannot be reached.');
  }
  if (!response.ok) {
    let message = response.statusText;
    try { message = (await response.json()).error || message; } catch (e) { /* not JSON */ }
    throw new ApiError(response.status, message);
  }
  return response.blob();
}

/** Saves a blob under `name` through a temporary link. */
function save(blob, name) {
  const url = URL.createObjectURL(blob);
  const link = el('a', { href: url, download: name, hidden: true });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60000);
}

function fieldRule(spec) {
  const parts = [spec.max > 1 ? 'up to ' + spec.max + ' files' : 'one file'];
  if (spec.types && spec.types.length) parts.push(spec.types.join(', '));
  return parts.join('; ');
}

/** The files of a document's file fields: previews, downloads, deletes and uploads. */
function filesSection(collection, doc, again) {
  const fields = Object.entries(collection.files || {});
  if (fields.length === 0) return null;
  const box = errorBox('files-error');
  const act = (fn) => async (event) => {
    if (event) event.preventDefault();
    showError(box, null);
    try { await fn(); } catch (e) { showError(box, e); }
  };
  const section = el('section', { class: 'files', id: 'document-files', 'aria-label': 'Files' },
    el('h4', {}, 'Files'));
  for (const [field, spec] of fields) {
    const list = el('ul', { class: 'plain file-list', dataset: { field } });
    const files = filesIn(doc, field);
    for (const file of files) {
      const path = filePath(collection, doc._id, field, file.name);
      const preview = el('span', { class: 'preview', 'aria-hidden': 'true' });
      if (PREVIEWABLE.includes(file.type)) {
        const img = el('img', { class: 'thumb', alt: '' });
        preview.append(img);
        fetchBlob(path + '?thumb=' + PREVIEW_SIZE).then((blob) => {
          const url = URL.createObjectURL(blob);
          img.addEventListener('load', () => URL.revokeObjectURL(url), { once: true });
          img.src = url;
        }, () => preview.replaceChildren(el('span', { class: 'muted small' }, 'no preview')));
      } else {
        preview.append(el('span', { class: 'file-type' }, (file.type || '').split('/').pop() || 'file'));
      }
      list.append(el('li', { class: 'file' }, preview,
        el('span', { class: 'file-info' },
          el('button', { type: 'button', class: 'link download', onclick: act(async () => save(await fetchBlob(path), file.name)) }, file.name),
          el('span', { class: 'muted small' }, ' ' + (file.type || '') + ', ' + sizeText(Number(file.size) || 0))),
        el('button', { type: 'button', class: 'danger delete-file', 'aria-label': 'Delete ' + file.name, onclick: act(async () => {
          if (!confirm('Delete the file ' + file.name + ' of ' + doc._id + '?')) return;
          await call('DELETE', path);
          notice('Deleted ' + file.name + '.');
          await again();
        }) }, 'Delete')));
    }
    if (files.length === 0) list.append(el('li', { class: 'muted small' }, 'No files.'));
    const id = 'upload-' + field;
    const input = el('input', {
      type: 'file', id, name: field, multiple: spec.max > 1,
      accept: spec.types && spec.types.length ? spec.types.join(',') : undefined,
    });
    const upload = el('form', { class: 'inline upload', onsubmit: act(async () => {
      const chosen = [...input.files];
      if (chosen.length === 0) throw new Error('Choose a file first.');
      for (const file of chosen) {
        await call('POST', filePath(collection, doc._id, field) + '?name=' + encodeURIComponent(file.name), file);
      }
      notice('Uploaded ' + chosen.map((f) => f.name).join(', ') + '.');
      await again();
    }) },
    el('label', { for: id }, 'Add to ' + field), input,
    el('button', { type: 'submit' }, 'Upload'));
    section.append(el('div', { class: 'file-field' },
      el('h5', {}, field, ' ', el('span', { class: 'muted small' }, fieldRule(spec))),
      list, upload));
  }
  section.append(box);
  return section;
}

function editor(panel, collection, doc, reload) {
  const creating = doc === null;
  const area = el('textarea', {
    id: 'document-editor', rows: '14', spellcheck: 'false',
    'aria-label': creating ? 'New document as JSON' : 'Document as JSON',
  });
  area.value = creating ? '{\n  \n}' : JSON.stringify(doc, null, 2);
  const box = errorBox('editor-error');
  const save = async (event) => {
    event.preventDefault();
    showError(box, null);
    let value;
    try {
      value = JSON.parse(area.value);
    } catch (e) {
      showError(box, new Error('Not JSON: ' + e.message));
      return;
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      showError(box, new Error('A document is a JSON object.'));
      return;
    }
    try {
      if (creating) {
        const reply = await call('POST', docPath(collection), value);
        notice('Created ' + reply._id + '.');
        value = await call('GET', docPath(collection, reply._id));
      } else {
        value = await call('PUT', docPath(collection, doc._id), value);
        notice('Saved ' + doc._id + '.');
      }
      reload();
      viewer(panel, collection, value, reload);
    } catch (e) {
      showError(box, e);
    }
  };
  clear(panel).append(el('form', { class: 'card', onsubmit: save, 'aria-label': 'Document editor' },
    el('h3', {}, creating ? 'New document in ' + collection.name : 'Edit ' + doc._id),
    creating ? el('p', { class: 'muted small' }, 'Leave out _id to get a new one.') : null,
    area, box,
    el('div', { class: 'row' },
      el('button', { type: 'submit', id: 'save-document' }, creating ? 'Create' : 'Save'),
      el('button', { type: 'button', class: 'secondary', onclick: () => (creating ? clear(panel) : viewer(panel, collection, doc, reload)) }, 'Cancel'))));
  area.focus();
}

// ----- users -----

function rolesOf(user) {
  return Array.isArray(user.roles) ? user.roles : [];
}

function emailsOf(user) {
  return Array.isArray(user.emails) ? user.emails.map((e) => e && e.address).filter(Boolean) : [];
}

/** "verified" or "not verified" for each address, in the order of emailsOf. */
function verifiedOf(user) {
  return Array.isArray(user.emails)
    ? user.emails.filter((e) => e && e.address).map((e) => (e.verified === true ? 'verified' : 'not verified'))
    : [];
}

function parseRoles(text) {
  return text.split(',').map((r) => r.trim()).filter(Boolean);
}

async function usersView(root) {
  const search = el('input', { id: 'user-search', type: 'search', placeholder: 'name, email or id', 'aria-label': 'Search users' });
  const table = el('div', { class: 'table-wrap', id: 'users' });
  const panel = el('div', { id: 'user-panel' });
  const box = errorBox('users-error');
  const add = el('form', { class: 'card', id: 'add-user', 'aria-label': 'Add a user' },
    el('h3', {}, 'Add a user'),
    el('div', { class: 'grid' },
      el('label', {}, 'Username ', el('input', { name: 'username', autocomplete: 'off' })),
      el('label', {}, 'Email ', el('input', { name: 'email', type: 'email', autocomplete: 'off' })),
      el('label', {}, 'Password ', el('input', { name: 'password', type: 'password', autocomplete: 'new-password' })),
      el('label', {}, 'Roles (comma separated) ', el('input', { name: 'roles', autocomplete: 'off' }))),
    errorBox('add-user-error'),
    el('button', { type: 'submit' }, 'Add user'));
  add.addEventListener('submit', async (event) => {
    event.preventDefault();
    const err = add.querySelector('.error');
    showError(err, null);
    try {
      const reply = await call('POST', 'users', {
        username: add.username.value.trim() || undefined,
        email: add.email.value.trim() || undefined,
        password: add.password.value || undefined,
        roles: parseRoles(add.roles.value),
      });
      notice('Added ' + (add.username.value.trim() || add.email.value.trim()) + '.');
      add.reset();
      await load();
      const user = (await call('GET', 'users?q=' + encodeURIComponent(reply._id))).users[0];
      if (user) manage(user);
    } catch (e) { showError(err, e); }
  });
  root.append(
    el('div', { class: 'title-row' }, el('h2', {}, 'Users'),
      el('form', { role: 'search', class: 'inline', onsubmit: (e) => { e.preventDefault(); load(); } }, search,
        el('button', { type: 'submit' }, 'Search'))),
    box, table, panel, add);

  async function load() {
    showError(box, null);
    let users;
    try {
      users = (await call('GET', 'users?q=' + encodeURIComponent(search.value.trim()))).users;
    } catch (e) { showError(box, e); return; }
    const rows = users.map((u) => el('tr', {},
      el('td', {}, el('button', { type: 'button', class: 'link', onclick: () => manage(u) }, u.username || u._id)),
      el('td', {}, emailsOf(u).join(', ')),
      el('td', { class: 'verified' }, verifiedOf(u).join(', ')),
      el('td', {}, rolesOf(u).join(', ')),
      el('td', {}, cellText(u.createdAt))));
    clear(table).append(el('table', {},
      el('caption', { class: 'sr-only' }, 'Users'),
      el('thead', {}, el('tr', {}, ['User', 'Emails', 'Verified', 'Roles', 'Created'].map((h) => el('th', { scope: 'col' }, h)))),
      el('tbody', {}, rows.length ? rows : el('tr', {}, el('td', { colspan: '5', class: 'muted' }, 'No users match.')))));
  }

  function manage(user) {
    const name = user.username || emailsOf(user)[0] || user._id;
    const err = errorBox('user-error');
    const roles = el('input', { id: 'user-roles', value: rolesOf(user).join(', '), autocomplete: 'off' });
    const password = el('input', { id: 'user-password', type: 'password', autocomplete: 'new-password' });
    const act = (fn) => async (event) => {
      event.preventDefault();
      showError(err, null);
      try { await fn(); } catch (e) { showError(err, e); }
    };
    clear(panel).append(el('section', { class: 'card', 'aria-label': 'User ' + name },
      el('div', { class: 'title-row' }, el('h3', {}, name),
        el('button', { type: 'button', class: 'secondary', onclick: () => clear(panel) }, 'Close')),
      el('p', { class: 'muted small' }, 'id ' + user._id),
      el('form', { class: 'inline', onsubmit: act(async () => {
        const reply = await call('PUT', 'users/' + encodeURIComponent(user._id) + '/roles', { roles: parseRoles(roles.value) });
        user.roles = reply.roles;
        notice('Roles of ' + name + ': ' + (reply.roles.join(', ') || 'none') + '.');
        load();
      }) }, el('label', { for: 'user-roles' }, 'Roles'), roles, el('button', { type: 'submit', id: 'save-roles' }, 'Set roles')),
      el('form', { class: 'inline', onsubmit: act(async () => {
        await call('PUT', 'users/' + encodeURIComponent(user._id) + '/password', { password: password.value });
        password.value = '';
        notice('New password set for ' + name + '.');
      }) }, el('label', { for: 'user-password' }, 'New password'), password, el('button', { type: 'submit' }, 'Set password')),
      el('div', { class: 'row' },
        el('button', { type: 'button', class: 'secondary', id: 'send-reset', disabled: emailsOf(user).length === 0, onclick: act(async () => {
          const reply = await call('POST', 'users/' + encodeURIComponent(user._id) + '/password-reset');
          notice('A password-reset mail is on its way to ' + reply.email + '.');
        }) }, 'Send reset mail'),
        el('button', { type: 'button', class: 'secondary', onclick: act(async () => {
          const reply = await call('POST', 'users/' + encodeURIComponent(user._id) + '/logout');
          notice(name + ' is logged out everywhere (' + reply.tokensRemoved + ' sessions).');
        }) }, 'Log out everywhere'),
        el('button', { type: 'button', class: 'danger', onclick: act(async () => {
          if (!confirm('Remove the user ' + name + '? This cannot be undone.')) return;
          await call('DELETE', 'users/' + encodeURIComponent(user._id));
          clear(panel);
          notice('Removed ' + name + '.');
          load();
        }) }, 'Remove user')),
      err));
    roles.focus();
  }

  load();
}

// ----- API -----

function accessText(access) {
  switch (access && access.kind) {
    case 'public': return 'public';
    case 'optional_user': return 'anyone (a token is used when sent)';
    case 'logged_in': return 'logged in';
    case 'roles': return 'roles: ' + access.roles.join(', ');
    default: return JSON.stringify(access);
  }
}

async function apiView(root) {
  const box = errorBox('api-error');
  const table = el('div', { class: 'table-wrap', id: 'routes' });
  const intro = el('p', {});
  root.append(el('div', { class: 'title-row' }, el('h2', {}, 'API')), intro, box, table);
  let reply;
  try { reply = await call('GET', 'routes'); } catch (e) { showError(box, e); return; }
  intro.append('Every route the server\'s front doors serve, from their own route description. ');
  if (reply.openapi) {
    intro.append('Machine-readable: ', el('a', { href: reply.openapi, id: 'openapi-link' }, 'OpenAPI document'), '.');
  }
  const rows = reply.routes.map((r) => el('tr', {},
    el('td', {}, r.door),
    el('td', {}, el('code', {}, r.method)),
    el('td', {}, el('code', {}, r.path)),
    el('td', {}, accessText(r.access)),
    el('td', {}, (r.rules || []).join('; ')),
    el('td', {}, r.summary || '')));
  clear(table).append(el('table', {},
    el('caption', { class: 'sr-only' }, 'Routes'),
    el('thead', {}, el('tr', {}, ['Door', 'Method', 'Path', 'Who may call', 'Rules', 'Does'].map((h) => el('th', { scope: 'col' }, h)))),
    el('tbody', {}, rows.length ? rows : el('tr', {}, el('td', { colspan: '6', class: 'muted' }, 'No routes are served.')))));
}

// ----- backups -----

function sizeText(bytes) {
  if (bytes >= 1e9) return (bytes / 1e9).toFixed(2) + ' GB';
  if (bytes >= 1e6) return (bytes / 1e6).toFixed(1) + ' MB';
  if (bytes >= 1e3) return Math.round(bytes / 1e3) + ' kB';
  return bytes + ' bytes';
}

/** Downloads a backup: fetched with the token header (never in a URL), saved from a blob. */
async function downloadBackup(name, box) {
  showError(box, null);
  let response;
  try {
    response = await fetch(new URL('backups/' + encodeURIComponent(name), API), {
      headers: { 'X-Auth-Token': token() || '' },
      credentials: 'omit',
      cache: 'no-store',
    });
  } catch (e) {
    showError(box, new Error('The server cannot be reached.'));
    return;
  }
  if (!response.ok) {
    showError(box, new Error('The download failed (' + response.status + ').'));
    return;
  }
  const url = URL.createObjectURL(await response.blob());
  const link = el('a', { href: url, download: name, hidden: true });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60000);
}

async function backupsView(root) {
  const box = errorBox('backups-error');
  const intro = el('p', { class: 'muted' });
  const take = el('button', { type: 'button', id: 'take-backup' }, 'Take a backup now');
  const table = el('div', { class: 'table-wrap', id: 'backups' });
  root.append(el('div', { class: 'title-row' }, el('h2', {}, 'Backups'), take), intro, box, table);

  async function load() {
    let reply;
    try { reply = await call('GET', 'backups'); } catch (e) { showError(box, e); return; }
    clear(intro);
    if (!reply.configured) {
      take.disabled = true;
      intro.append('Backups are not set up on this server: add a [backups] table to its config (SQLite databases only).');
      clear(table);
      return;
    }
    intro.append('Consistent copies of the database, taken while it serves, in ', el('code', {}, reply.dir),
      '; the newest ' + reply.keep + ' are kept.');
    const rows = reply.backups.map((b) => el('tr', {},
      el('td', {}, el('code', {}, b.name)),
      el('td', {}, sizeText(b.bytes)),
      el('td', {}, new Date(b.modifiedMs).toLocaleString()),
      el('td', {}, el('button', { type: 'button', class: 'link', onclick: () => downloadBackup(b.name, box) }, 'Download'))));
    clear(table).append(el('table', {},
      el('caption', { class: 'sr-only' }, 'Backups'),
      el('thead', {}, el('tr', {}, ['File', 'Size', 'Taken', ''].map((h) => el('th', { scope: 'col' }, h)))),
      el('tbody', {}, rows.length ? rows : el('tr', {}, el('td', { colspan: '4', class: 'muted' }, 'No backups yet.')))));
  }

  take.addEventListener('click', async () => {
    showError(box, null);
    take.disabled = true;
    take.textContent = 'Taking a backup…';
    try {
      const made = await call('POST', 'backups');
      notice('Backup ' + made.name + ' taken (' + sizeText(made.bytes) + ').');
    } catch (e) {
      showError(box, e);
    }
    take.disabled = false;
    take.textContent = 'Take a backup now';
    load();
  });

  load();
}

// ----- jobs -----

function timeText(ms) {
  return typeof ms === 'number' && ms > 0 ? new Date(ms).toLocaleString() : '';
}

function jobTable(caption, heads, rows, empty) {
  return el('table', {},
    el('caption', {}, caption),
    el('thead', {}, el('tr', {}, heads.map((h) => el('th', { scope: 'col' }, h)))),
    el('tbody', {}, rows.length ? rows : el('tr', {}, el('td', { colspan: String(heads.length), class: 'muted' }, empty))));
}

async function jobsView(root) {
  const box = errorBox('jobs-error');
  const intro = el('p', { class: 'muted' });
  const tables = el('div', { id: 'jobs' });
  const again = el('button', { type: 'button' }, 'Refresh');
  root.append(el('div', { class: 'title-row' }, el('h2', {}, 'Jobs'), again), intro, box, tables);

  async function act(method, path, done) {
    showError(box, null);
    try {
      await call(method, path);
      notice(done);
    } catch (e) {
      showError(box, e);
    }
    load();
  }

  async function load() {
    let reply;
    try { reply = await call('GET', 'jobs'); } catch (e) { showError(box, e); return; }
    clear(intro).append(reply.queued + ' queued (due, delayed or running), ' + reply.failedCount + ' failed.');
    const schedules = reply.schedules.map((s) => el('tr', {},
      el('td', {}, el('code', {}, s.name)),
      el('td', {}, el('code', {}, s.expression), ' ', el('span', { class: 'muted' }, s.timezone)),
      el('td', {}, timeText(s.nextDueMs)),
      el('td', {}, timeText(s.lastRunAt)),
      el('td', {}, cellText(s.lastResult))));
    const pending = reply.pending.map((j) => el('tr', {},
      el('td', {}, el('code', {}, j._id)),
      el('td', {}, j.name),
      el('td', {}, j.lease > reply.nowMs ? 'running' : timeText(j.runAt)),
      el('td', {}, String(j.attempts || 0)),
      el('td', {}, cellText(j.lastError)),
      el('td', {}, el('button', { type: 'button', class: 'link', onclick: () => act('DELETE', 'jobs/' + encodeURIComponent(j._id), 'Job cancelled.') }, 'Cancel'))));
    const failed = reply.failed.map((j) => el('tr', {},
      el('td', {}, el('code', {}, j.jobId || j._id)),
      el('td', {}, j.name),
      el('td', {}, timeText(j.failedAt)),
      el('td', {}, String(j.attempts || 0)),
      el('td', {}, cellText(j.lastError)),
      el('td', {},
        el('button', { type: 'button', class: 'link', onclick: () => act('POST', 'jobs/' + encodeURIComponent(j._id) + '/retry', 'Job queued again.') }, 'Retry'), ' ',
        el('button', { type: 'button', class: 'link', onclick: () => act('DELETE', 'jobs/' + encodeURIComponent(j._id), 'Failed job dropped.') }, 'Drop'))));
    clear(tables).append(
      el('div', { class: 'table-wrap' }, jobTable('Schedules', ['Name', 'Schedule', 'Next run', 'Last run', 'Last result'], schedules, 'No schedules.')),
      el('div', { class: 'table-wrap' }, jobTable('Pending and running', ['Id', 'Job', 'Due', 'Tries', 'Last error', ''], pending, 'No pending jobs.')),
      el('div', { class: 'table-wrap' }, jobTable('Failed', ['Id', 'Job', 'Failed', 'Tries', 'Last error (a webhook: the receiver\'s answer)', ''], failed, 'No failed jobs.')));
  }

  again.addEventListener('click', load);
  load();
}

// ----- API keys -----

async function keysView(root) {
  const box = errorBox('keys-error');
  const shownOnce = el('div', { id: 'new-key', hidden: true });
  const tableBox = el('div', { class: 'table-wrap', id: 'keys' });
  const name = el('input', { id: 'key-name', name: 'name', required: true, maxlength: '64', pattern: '[A-Za-z0-9._\\-]+', autocomplete: 'off' });
  const roles = el('input', { id: 'key-roles', name: 'roles', placeholder: 'reader, reports', autocomplete: 'off' });
  const days = el('input', { id: 'key-days', name: 'days', type: 'number', min: '1', max: '36500', placeholder: 'never' });
  const form = el('form', { id: 'key-form', class: 'inline', 'aria-label': 'New API key' },
    el('label', { for: 'key-name' }, 'Name'), name,
    el('label', { for: 'key-roles' }, 'Roles'), roles,
    el('label', { for: 'key-days' }, 'Expires after (days)'), days,
    el('button', { type: 'submit' }, 'Add key'));
  root.append(el('h2', {}, 'API keys'),
    el('p', { class: 'muted' }, 'A key lets a server or a script call the API as a service account with the key\'s roles (header Authorization: Bearer KEY or X-Api-Key: KEY). It is shown once, when added; only its hash is kept.'),
    box, form, shownOnce, tableBox);

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    showError(box, null);
    const body = { name: name.value.trim(), roles: roles.value, expiresDays: days.value ? Number(days.value) : null };
    let reply;
    try { reply = await call('POST', 'keys', body); } catch (e) { showError(box, e); return; }
    form.reset();
    const copy = el('button', { type: 'button' }, 'Copy');
    copy.addEventListener('click', () => navigator.clipboard && navigator.clipboard.writeText(reply.key));
    clear(shownOnce).append(el('p', {}, 'The key ', el('strong', {}, reply.name), ', shown this once: copy it now.'),
      el('p', {}, el('code', { id: 'new-key-value' }, reply.key), ' ', copy));
    shownOnce.hidden = false;
    notice('Key added.');
    load();
  });

  async function revoke(key) {
    if (!confirm('Revoke the key ' + key + '? Calls made with it stop working at once.')) return;
    showError(box, null);
    try {
      await call('DELETE', 'keys/' + encodeURIComponent(key));
      notice('Key revoked.');
    } catch (e) {
      showError(box, e);
    }
    load();
  }

  async function load() {
    let reply;
    try { reply = await call('GET', 'keys'); } catch (e) { showError(box, e); return; }
    const rows = reply.keys.map((k) => el('tr', {},
      el('td', {}, el('code', {}, k.name)),
      el('td', {}, k.roles.length ? k.roles.join(', ') : el('span', { class: 'muted' }, 'none')),
      el('td', {}, k.createdAt),
      el('td', {}, k.expires || 'never'),
      el('td', {}, k.lastUsed || 'never'),
      el('td', {}, el('button', { type: 'button', class: 'link', onclick: () => revoke(k.name) }, 'Revoke'))));
    clear(tableBox).append(jobTable('Keys', ['Name', 'Roles', 'Added', 'Expires', 'Last used', ''], rows, 'No keys yet.'));
  }

  load();
}

// ----- start -----

document.getElementById('login-form').addEventListener('submit', login);
document.getElementById('logout').addEventListener('click', logout);
window.addEventListener('hashchange', route);
if (token()) start(); else showLogin();
