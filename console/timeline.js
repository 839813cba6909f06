// The timeline: who did what, when, from which device, with each change's fields
// before and after.

const pad = (n) => String(n).padStart(2, '0');

/** `2026-11-22 21:40:03` in the browser's time zone. */
export function localTime(iso) {
  const date = new Date(iso);
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
}

const show = (value) => (value === null || value === undefined ? '—' : typeof value === 'object' ? JSON.stringify(value) : String(value));

/** What the timeline calls an entity: a marker (and its details) by its label, else the id's start. */
export function entityName(entity, labels = new Map()) {
  const kind = entity.type.replace(/_/g, ' ');
  const label = labels.get(entity.id);
  return label ? `${kind} “${label}”` : `${kind} ${entity.id.slice(0, 8)}`;
}

/** Each marker's latest label in `entries` (audit entries, oldest first). */
export function markerLabels(entries) {
  const labels = new Map();
  for (const entry of entries) {
    if (entry.entity.type !== 'marker') continue;
    const label = entry.changes?.label?.after;
    if (typeof label === 'string' && label) labels.set(entry.entity.id, label);
  }
  return labels;
}

/** The `<li>` of one audit entry; `labels` names markers by their label. */
export function renderEntry(entry, labels = new Map()) {
  const item = document.createElement('li');
  item.dataset.position = entry.position;
  item.dataset.entity = entry.entity.id;
  item.tabIndex = -1;
  item.setAttribute('role', 'option');
  const head = document.createElement('div');
  head.className = 'entry-head';
  const what = document.createElement('span');
  what.className = 'entry-what';
  what.textContent = `${entry.type} · ${entityName(entry.entity, labels)} · v${entry.version}`;
  const when = document.createElement('span');
  when.className = 'entry-when';
  when.textContent = `${localTime(entry.recorded_at)} local · ${entry.recorded_at} UTC · #${entry.position}`;
  head.append(what, when);
  const who = document.createElement('div');
  who.className = 'entry-who';
  const principal = entry.tenant ? ` (${entry.tenant}${entry.scope ? `, scope ${entry.scope}` : ''})` : '';
  who.textContent = `by ${entry.actor}${principal} · device ${entry.client?.user_agent ?? 'unknown'} · from ${entry.client?.address ?? 'unknown'}`
    + ` · request ${entry.request_id}${entry.client_mutation_id ? ` · mutation ${entry.client_mutation_id}` : ''}`;
  item.append(head, who);
  const fields = Object.entries(entry.changes ?? {});
  if (fields.length > 0) {
    const table = document.createElement('table');
    table.className = 'diff';
    table.innerHTML = '<thead><tr><th scope="col">field</th><th scope="col">before</th><th scope="col">after</th></tr></thead>';
    const body = document.createElement('tbody');
    for (const [field, change] of fields) {
      const row = document.createElement('tr');
      row.dataset.field = field;
      const name = document.createElement('th');
      name.scope = 'row';
      name.textContent = field;
      const before = document.createElement('td');
      before.className = 'before';
      before.textContent = show(change.before);
      const after = document.createElement('td');
      after.className = 'after';
      after.textContent = show(change.after);
      row.append(name, before, after);
      body.append(row);
    }
    table.append(body);
    item.append(table);
  }
  return item;
}

/** The filtered timeline as CSV (one row per entry, changes as JSON). */
export function toCSV(entries) {
  // A cell a spreadsheet would run as a formula (=, +, -, @, a tab or a return first:
  // actors and user agents are whatever clients sent) starts with a quote mark instead.
  const quote = (value) => {
    const text = String(value ?? '');
    const inert = /^[=+\-@\t\r]/.test(text) ? `'${text}` : text;
    return `"${inert.replace(/"/g, '""')}"`;
  };
  const header = ['position', 'recorded_at_utc', 'actor', 'user_agent', 'address', 'request_id', 'client_mutation_id',
    'type', 'entity_type', 'entity_id', 'version', 'changes', 'tenant', 'scope'];
  const rows = entries.map((e) => [e.position, e.recorded_at, e.actor, e.client?.user_agent, e.client?.address, e.request_id,
    e.client_mutation_id, e.type, e.entity.type, e.entity.id, e.version, JSON.stringify(e.changes), e.tenant,
    e.scope].map(quote).join(','));
  return [header.join(','), ...rows].join('\r\n') + '\r\n';
}
