// The console's progressive enhancement: relative times, the fleet's instant search, selects that
// submit their form, copy buttons (a new key, shown once), and live pages. Every page works
// without it; nothing here is inline (CSP).
// Live updates come from the server as HTML it rendered and escaped (html.ts): block regions are
// replaced whole, row regions row by row (keyed by data-key), chart data is handed to charts.js.

const RELATIVE_REFRESH_MS = 15_000;

function relative(ms, nowMs) {
  const s = Math.round((nowMs - ms) / 1000);
  // A time to come (a pending condition's deadline).
  if (s <= -7200) return `in ${Math.round(-s / 3600)} h`;
  if (s <= -60) return `in ${Math.ceil(-s / 60)} min`;
  if (s <= -10) return `in ${-s} s`;
  if (s < 10) return 'just now';
  if (s < 60) return `${s} s ago`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ago`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h} h ago`;
  return `${Math.floor(h / 24)} days ago`;
}

function refreshTimes(root) {
  const now = Date.now();
  for (const el of root.querySelectorAll('time[data-rel]')) {
    const ms = Date.parse(el.getAttribute('datetime') ?? '');
    if (Number.isFinite(ms)) el.textContent = relative(ms, now);
  }
}

/** Shows the rows of `tbody` whose data-search holds the text (the fleet's search box). */
function filterRows(input) {
  const target = document.getElementById(input.dataset.filterRows ?? '');
  if (!target) return;
  const text = input.value.trim().toLowerCase();
  let shown = 0;
  for (const row of target.children) {
    const hit = text === '' || (row.dataset.search ?? '').includes(text);
    row.hidden = !hit;
    if (hit) shown += 1;
  }
  const empty = document.getElementById('fleet-empty');
  if (empty) empty.hidden = shown > 0;
}

function parseRow(container, markup) {
  const template = document.createElement('template');
  // Rows of a table body are parsed in a table, so that <tr> survives.
  if (container.tagName === 'TBODY') {
    template.innerHTML = `<table><tbody>${markup}</tbody></table>`;
    return template.content.querySelector('tbody')?.firstElementChild ?? null;
  }
  template.innerHTML = markup;
  return template.content.firstElementChild;
}

function applyRows(id, change) {
  const container = document.getElementById(id);
  if (!container) return;
  const byKey = new Map();
  for (const el of container.children) byKey.set(el.dataset.key ?? '', el);
  for (const [key, markup] of Object.entries(change.set ?? {})) {
    const el = parseRow(container, markup);
    if (!el) continue;
    el.dataset.key = key;
    el.classList.add('flash');
    const old = byKey.get(key);
    if (old) old.replaceWith(el);
    else container.append(el);
    byKey.set(key, el);
    refreshTimes(el);
  }
  if (change.order) {
    const keep = new Set(change.order);
    for (const [key, el] of byKey) if (!keep.has(key)) el.remove();
    for (const key of change.order) {
      const el = byKey.get(key);
      if (el) container.append(el);
    }
  }
  const search = document.querySelector(`[data-filter-rows="${id}"]`);
  if (search) filterRows(search);
  const empty = document.querySelector(`[data-empty-for="${id}"]`);
  if (empty) empty.hidden = container.children.length > 0;
}

function applyUpdate(update) {
  for (const [id, markup] of Object.entries(update.html ?? {})) {
    const el = document.getElementById(id);
    if (!el) continue;
    el.innerHTML = markup;
    refreshTimes(el);
  }
  for (const [id, change] of Object.entries(update.rows ?? {})) applyRows(id, change);
  for (const [id, data] of Object.entries(update.data ?? {})) {
    document.dispatchEvent(new CustomEvent('vigil:data', { detail: { id, data } }));
  }
  const status = document.getElementById('live-status');
  if (status) status.dataset.updated = String(Date.now());
}

function startLive(url) {
  const indicator = document.getElementById('live-status');
  const source = new EventSource(url);
  const set = (state, text) => {
    if (!indicator) return;
    indicator.dataset.state = state;
    indicator.textContent = text;
  };
  source.addEventListener('open', () => set('on', 'Live'));
  source.addEventListener('error', () => set('off', 'Reconnecting…'));
  source.addEventListener('update', (e) => applyUpdate(JSON.parse(e.data)));
  // A form being sent (Sign out itself) navigates anyway; otherwise the reload meets the sign-in.
  let leaving = false;
  document.addEventListener('submit', () => (leaving = true));
  source.addEventListener('signed-out', () => {
    source.close();
    if (!leaving) window.location.reload();
  });
  window.addEventListener('pagehide', () => source.close());
}

/** A copy button (data-copy: the id of the field whose value it copies). */
function copyButton(button) {
  button.addEventListener('click', async () => {
    const field = document.getElementById(button.dataset.copy ?? '');
    if (!field) return;
    field.select();
    try {
      await window.navigator.clipboard.writeText(field.value);
      button.textContent = 'Copied';
    } catch {
      // No clipboard (an insecure origin): the text is selected for Ctrl+C.
      button.textContent = 'Selected: press Ctrl+C';
    }
  });
}

function init() {
  refreshTimes(document);
  setInterval(() => refreshTimes(document), RELATIVE_REFRESH_MS);
  for (const input of document.querySelectorAll('input[data-filter-rows]')) {
    input.addEventListener('input', () => filterRows(input));
    if (input.value) filterRows(input);
  }
  for (const select of document.querySelectorAll('select[data-autosubmit]')) {
    select.addEventListener('change', () => select.form?.requestSubmit());
  }
  for (const button of document.querySelectorAll('button[data-copy]')) copyButton(button);
  for (const form of document.querySelectorAll('form[data-busy]')) {
    form.addEventListener('submit', () => form.classList.add('is-busy'));
  }
  const live = document.body.dataset.live;
  if (live) startLive(live);
}

if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init);
else init();
