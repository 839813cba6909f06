// The investigations console: a timeline of a work session's audit trail, a floor plan
// of its markers at any step of its history, a live mode, and the hash chain's verdict.
// It reads only the public API (docs/investigations.md) and never writes.

import { api, allAuditPages, APIError, AuthRequired, Unreachable, UUID } from './api.js';
import { Plan } from './plan.js';
import { localTime, markerLabels, renderEntry, toCSV } from './timeline.js';
import { SessionList } from './sessions.js';
import { newestCheckpoint } from './checkpoint.js';

const $ = (selector) => document.querySelector(selector);
const EVENT_TYPES = ['work_session.created', 'work_session.updated', 'work_session.deleted', 'marker.created', 'marker.updated',
  'marker.deleted', 'marker_details.calculated', 'marker_details.updated', 'marker_details.deleted',
  'work_session.lock_acquired', 'work_session.lock_extended', 'work_session.lock_released', 'work_session.lock_broken'];

const state = {
  sessionID: null,
  steps: [],          // every event of the session, oldest first: { position, entry }
  labels: new Map(),  // each marker's latest label, for the timeline
  step: 0,
  timeline: [],       // the filtered entries shown
  cursor: null,       // the next page's after/before
  live: null,         // { abort: AbortController, since }
  pending: null,      // the plan request in flight
  retry: null,        // what to run again once a token is given
};

const plan = new Plan($('#plan'), { onSelect: showMarkerHistory });
const sessions = new SessionList({
  list: $('#sessions'), filter: $('#sessions-filter'),
  onOpen: (id) => { $('#session-id').value = id; showSessions(false); guarded(() => open(id)); },
});

/** The tenant's sessions instead of the workspace (or back). */
function showSessions(shown) {
  $('#sessions-panel').hidden = !shown;
  if (shown) {
    $('#workspace').hidden = true;
    message(null);
    guarded(() => sessions.load());
  }
}

function message(text, kind = 'error') {
  const box = $('#message');
  box.hidden = !text;
  box.textContent = text ?? '';
  box.className = kind === 'info' ? 'info' : '';
}

/** Runs `action`, turning every failure into words on the page. */
async function guarded(action) {
  try {
    await action();
  } catch (error) {
    if (error.name === 'AbortError') return;
    if (error instanceof AuthRequired) {
      state.retry = action;
      message('This service needs a token with the audit scope: give one (the console never writes).', 'info');
      openTokenDialog();
    } else if (error instanceof Unreachable) {
      message(error.message);
    } else if (error instanceof APIError) {
      message(error.status === 404 ? `Not found: ${error.message}.` : `The server refused: ${error.message}.`);
    } else {
      message(`Something went wrong in the console: ${error.message}`);
      console.error(error);
    }
  }
}

// MARK: Filters and permalinks

function filters() {
  const form = new FormData($('#filters'));
  const values = {};
  for (const [key, value] of form.entries()) if (value) values[key] = value;
  return values;
}

/** A `datetime-local` value (the browser's time zone) as RFC 3339 UTC. */
const utc = (local) => (local ? new Date(local).toISOString().replace(/\.\d{3}Z$/, 'Z') : null);

function auditParams() {
  const values = filters();
  const params = { work_session_id: state.sessionID, order: values.order || 'asc' };
  for (const key of ['actor', 'entity_type', 'type']) if (values[key]) params[key] = values[key];
  if (values.from) params.from = utc(values.from);
  if (values.to) params.to = utc(values.to);
  return params;
}

function permalink() {
  const url = new URL(window.location.href);
  url.search = '';
  if (state.sessionID) url.searchParams.set('session', state.sessionID);
  for (const [key, value] of Object.entries(filters())) if (!(key === 'order' && value === 'asc')) url.searchParams.set(key, value);
  if (state.steps.length > 0 && !state.live) url.searchParams.set('step', String(state.steps[state.step].position));
  if (state.live) url.searchParams.set('live', '1');
  window.history.replaceState(null, '', url);
  $('#permalink').href = url.toString();
}

function checkRange() {
  const { from, to } = filters();
  if (from && to && new Date(from) >= new Date(to)) {
    message('The time range is backwards: “From” must be before “To”.');
    return false;
  }
  return true;
}

// MARK: Opening a work session

async function open(id) {
  stopLive();
  message(null);
  // Read before anything rewrites the address: a permalink's step.
  const linked = new URLSearchParams(window.location.search);
  const wanted = Number(linked.get('step'));
  const live = linked.get('live') === '1';
  id = id.trim();
  if (!UUID.test(id)) {
    message(`“${id}” is not a work session id: ids are UUIDs such as 5be23675-a6cf-48d1-8afa-869d00eac7ce.`);
    return;
  }
  state.sessionID = id.toLowerCase();
  let session;
  try {
    session = await api.get(`/work-sessions/${state.sessionID}`);
  } catch (error) {
    if (error instanceof APIError && error.status === 404) {
      // A deleted session still has its history.
      session = null;
    } else {
      throw error;
    }
  }
  state.steps = (await allAuditPages('/audit', { work_session_id: state.sessionID, order: 'asc' }))
    .map((entry) => ({ position: entry.position, entry }));
  state.labels = markerLabels(state.steps.map((step) => step.entry));
  if (state.steps.length === 0) {
    $('#workspace').hidden = true;
    message(`There is no work session ${state.sessionID}, and nothing ever happened under that id.`);
    return;
  }
  $('#workspace').hidden = false;
  $('#session-label').textContent = session
    ? `· ${session.session_type} ${session.status} · ${state.sessionID.slice(0, 8)}`
    : `· ${state.sessionID.slice(0, 8)} (deleted)`;
  const slider = $('#slider');
  slider.max = String(state.steps.length - 1);
  plan.fit(everyPlacement());
  const index = state.steps.findIndex((step) => step.position === wanted);
  state.step = index >= 0 ? index : state.steps.length - 1;
  await loadTimeline();
  await goTo(state.step);
  checkIntegrity();
  if (live) {
    $('#live').checked = true;
    startLive();
  }
}

/** Every quad any marker ever had, for a view that holds still across the history. */
function everyPlacement() {
  const quads = new Map();
  for (const { entry } of state.steps) {
    if (entry.entity.type !== 'marker') continue;
    const last = quads.get(entry.entity.id) ?? {};
    const quad = { ...last };
    for (const corner of ['p1', 'p2', 'p3', 'p4']) if (entry.changes?.[corner]?.after) quad[corner] = entry.changes[corner].after;
    if (quad.p1 && quad.p2 && quad.p3 && quad.p4) quads.set(`${entry.entity.id}@${entry.position}`, quad);
    quads.set(entry.entity.id, quad);
  }
  return [...quads.values()].filter((q) => q.p1 && q.p2 && q.p3 && q.p4);
}

// MARK: Timeline

async function loadTimeline(more = false) {
  if (!checkRange()) return;
  const params = auditParams();
  const query = new URLSearchParams({ ...params, limit: '50' });
  if (more && state.cursor !== null) query.set(params.order === 'desc' ? 'before' : 'after', String(state.cursor));
  const page = await api.get(`/audit?${query}`);
  if (!more) {
    state.timeline = [];
    $('#timeline').replaceChildren();
  }
  state.timeline.push(...page.data);
  for (const entry of page.data) {
    const item = renderEntry(entry, state.labels);
    item.addEventListener('click', () => guarded(() => goToPosition(entry.position)));
    $('#timeline').append(item);
  }
  state.cursor = params.order === 'desc' ? page.next_before : page.next_after;
  $('#more').hidden = state.cursor === null || state.cursor === undefined;
  if (state.timeline.length === 0) {
    const empty = document.createElement('li');
    empty.textContent = 'No change matches these filters.';
    $('#timeline').append(empty);
  }
  markSelected();
  permalink();
}

function markSelected() {
  const position = state.steps[state.step]?.position;
  for (const item of document.querySelectorAll('#timeline li')) {
    const selected = Number(item.dataset.position) === position;
    item.setAttribute('aria-selected', selected ? 'true' : 'false');
    if (selected) item.scrollIntoView({ block: 'nearest' });
  }
}

// MARK: The plan through time

async function goToPosition(position) {
  const index = state.steps.findIndex((step) => step.position === position);
  if (index >= 0) await goTo(index);
}

/** Shows the session as it was right after step `index`: `as_of` that event's position. */
async function goTo(index) {
  if (state.steps.length === 0) return;
  state.step = Math.max(0, Math.min(index, state.steps.length - 1));
  const step = state.steps[state.step];
  $('#slider').value = String(state.step);
  $('#step-label').textContent = `Step ${state.step + 1} of ${state.steps.length} · #${step.position} · ${step.entry.type} by `
    + `${step.entry.actor} · ${localTime(step.entry.recorded_at)}`;
  state.pending?.abort();
  const controller = new AbortController();
  state.pending = controller;
  const markers = await api.get(`/markers?work_session_id=${state.sessionID}&as_of=${step.position}`, { signal: controller.signal })
    .catch((error) => {
      // Before the session existed, or after it was deleted: nothing to draw.
      if (error instanceof APIError && error.status === 404) return [];
      throw error;
    });
  const changed = new Set(['marker', 'marker_details'].includes(step.entry.entity.type) ? [step.entry.entity.id] : []);
  plan.draw(markers, changed);
  $('#plan').dataset.position = String(step.position);
  $('#zoom-label').textContent = `zoom ${plan.zoom.toFixed(1)}`;
  markSelected();
  permalink();
}

async function showMarkerHistory(marker) {
  await guarded(async () => {
    const history = await allAuditPages(`/markers/${marker.id}/history`, { order: 'asc' });
    const list = $('#marker-history-list');
    const labels = markerLabels(history);
    list.replaceChildren(...history.map((entry) => renderEntry(entry, labels)));
    $('#marker-history-title').textContent = `History of marker ${marker.label ? `“${marker.label}”` : marker.id.slice(0, 8)}`;
    $('#marker-history').hidden = false;
    $('#marker-history').scrollIntoView({ block: 'nearest' });
  });
}

// MARK: Live mode

function stopLive() {
  state.live?.abort.abort();
  state.live = null;
  $('#live-panel').hidden = true;
  $('#live-state').textContent = '';
}

/** Follows the session through the changes feed (a long poll that resumes from the
 *  last position seen, so a network loss loses nothing), with presence and the lock. */
function startLive() {
  stopLive();
  const abort = new AbortController();
  const since = state.steps.length > 0 ? state.steps[state.steps.length - 1].position : 0;
  state.live = { abort, since };
  $('#live-panel').hidden = false;
  permalink();
  const topic = `work_session:${state.sessionID}`;
  (async () => {
    let failures = 0;
    await refreshLiveState(abort.signal);
    await showCurrent(abort.signal);
    while (!abort.signal.aborted) {
      try {
        $('#live-state').textContent = 'live';
        $('#live-state').className = '';
        const page = await api.get(`/changes?topic=${topic}&since=${state.live.since}&wait=25`, { signal: abort.signal });
        failures = 0;
        if (page.data.length > 0) {
          state.live.since = page.next_since;
          const entries = await allAuditPages('/audit', { work_session_id: state.sessionID, order: 'asc' });
          state.steps = entries.map((entry) => ({ position: entry.position, entry }));
          $('#slider').max = String(state.steps.length - 1);
          await loadTimeline();
          await showCurrent(abort.signal);
          if (page.data.some((event) => event.op === 'lock')) await refreshLiveState(abort.signal);
        }
      } catch (error) {
        if (abort.signal.aborted) return;
        if (error instanceof AuthRequired) return guarded(() => { throw error; });
        failures += 1;
        const wait = Math.min(15000, 500 * 2 ** failures * Math.random());
        $('#live-state').textContent = `offline: retrying in ${(wait / 1000).toFixed(1)} s (nothing is missed)`;
        $('#live-state').className = 'offline';
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    }
  })();
  (async () => {
    while (!abort.signal.aborted) {
      await new Promise((resolve) => setTimeout(resolve, 5000));
      await refreshLiveState(abort.signal).catch(() => {});
    }
  })();
}

/** The newest state: the last step, drawn from the current markers. */
async function showCurrent(signal) {
  state.step = state.steps.length - 1;
  $('#slider').value = String(state.step);
  const markers = await api.get(`/markers?work_session_id=${state.sessionID}`, { signal }).catch(() => []);
  const last = state.steps[state.step]?.entry;
  plan.draw(markers, new Set(last && ['marker', 'marker_details'].includes(last.entity.type) ? [last.entity.id] : []));
  $('#plan').dataset.position = String(state.steps[state.step]?.position ?? 0);
  $('#step-label').textContent = `Live · ${state.steps.length} steps · last #${state.steps[state.step]?.position ?? 0}`;
  markSelected();
}

async function refreshLiveState(signal) {
  const [presence, lock] = await Promise.all([
    api.get(`/presence/${state.sessionID}`, { signal }).catch(() => null),
    api.get(`/locks/${state.sessionID}`, { signal }).catch(() => null),
  ]);
  if (presence) $('#presence').textContent = presence.users.length > 0 ? presence.users.join(', ') : 'nobody';
  if (lock) $('#lock-holder').textContent = lock.locked ? `held by ${lock.holder} until ${lock.expires_at} (fencing ${lock.fencing_token})` : 'free';
}

// MARK: Integrity

async function checkIntegrity() {
  const result = $('#integrity-result');
  result.className = '';
  result.textContent = 'Checking the hash chain…';
  await guarded(async () => {
    const report = await api.get(`/integrity?work_session_id=${state.sessionID}`);
    const unsigned = report.signatures?.first_invalid;
    if (report.intact) {
      result.className = 'intact';
      result.textContent = `Intact: ${report.checked_events} events in ${report.streams} streams recomputed at ${report.checked_at}`
        + (report.signatures ? `, each signed by the service.` : '.');
    } else if (report.first_broken_link) {
      const link = report.first_broken_link;
      result.className = 'broken';
      result.textContent = `Broken: the chain breaks at position ${link.position} (${link.stream_type.replace(/_/g, ' ')} `
        + `${link.stream_id}, version ${link.version}): ${link.problem}. Someone changed the log by hand.`;
    } else if (unsigned) {
      result.className = 'broken';
      result.textContent = `Not signed: ${report.signatures.invalid_events} events lack a valid signature of the service, `
        + `the first at position ${unsigned.position ?? '?'} (tenant_seq ${unsigned.tenant_seq ?? '?'}): ${unsigned.problem}.`;
    } else {
      result.className = 'broken';
      result.textContent = `Rolled back: ${report.history}.`;
    }
    await showCheckpoint();
  });
}

async function showCheckpoint() {
  const result = $('#checkpoint-result');
  const checkpoint = await newestCheckpoint();
  result.className = checkpoint.state;
  const tree = `${checkpoint.origin}: ${checkpoint.size} events, root ${checkpoint.root}`;
  result.textContent = {
    verified: `Signed checkpoint, verified here with the service's key: ${tree}.`,
    unchecked: `Signed checkpoint (this browser cannot check Ed25519; roboscope-client verify can): ${tree}.`,
    bad: `The newest checkpoint does not verify with the service's key${checkpoint.message ? ` (${checkpoint.message})` : ''}: ${tree}.`,
    none: `No signed checkpoint: ${checkpoint.message}.`,
  }[checkpoint.state];
}

// MARK: Exports

function download(name, type, text) {
  const link = document.createElement('a');
  link.href = URL.createObjectURL(new Blob([text], { type }));
  link.download = name;
  document.body.append(link);
  link.click();
  link.remove();
}

async function exportTimeline(format) {
  if (!checkRange()) return;
  const entries = await allAuditPages('/audit', auditParams());
  const name = `timeline-${state.sessionID.slice(0, 8)}`;
  if (format === 'csv') download(`${name}.csv`, 'text/csv', toCSV(entries));
  else download(`${name}.json`, 'application/json', JSON.stringify(entries, null, 2));
}

// MARK: Tokens

function openTokenDialog() {
  const dialog = $('#token-dialog');
  $('#token-input').value = api.token ?? '';
  if (!dialog.open) dialog.showModal();
}

// MARK: Wiring

function wire() {
  const select = document.querySelector('#filters select[name="type"]');
  for (const type of EVENT_TYPES) select.append(new Option(type, type));
  $('#scope').addEventListener('submit', (event) => {
    event.preventDefault();
    showSessions(false);
    guarded(() => open($('#session-id').value));
  });
  $('#sessions-button').addEventListener('click', () => showSessions(true));
  $('#filters').addEventListener('submit', (event) => {
    event.preventDefault();
    guarded(() => loadTimeline());
  });
  $('#more').addEventListener('click', () => guarded(() => loadTimeline(true)));
  $('#slider').addEventListener('input', () => {
    if (state.live) { $('#live').checked = false; stopLive(); }
    guarded(() => goTo(Number($('#slider').value)));
  });
  $('#step-back').addEventListener('click', () => guarded(() => goTo(state.step - 1)));
  $('#step-forward').addEventListener('click', () => guarded(() => goTo(state.step + 1)));
  $('#zoom-in').addEventListener('click', () => { plan.zoomBy(1.5); $('#zoom-label').textContent = `zoom ${plan.zoom.toFixed(1)}`; });
  $('#zoom-out').addEventListener('click', () => { plan.zoomBy(1 / 1.5); $('#zoom-label').textContent = `zoom ${plan.zoom.toFixed(1)}`; });
  $('#live').addEventListener('change', () => ($('#live').checked ? startLive() : (stopLive(), permalink())));
  $('#integrity-check').addEventListener('click', () => checkIntegrity());
  $('#export-csv').addEventListener('click', () => guarded(() => exportTimeline('csv')));
  $('#export-json').addEventListener('click', () => guarded(() => exportTimeline('json')));
  $('#export-svg').addEventListener('click', () => {
    const at = state.steps[state.step];
    download(`plan-${state.sessionID.slice(0, 8)}-${at?.position ?? 0}.svg`, 'image/svg+xml',
      plan.exportSVG(`Work session ${state.sessionID} at position ${at?.position}`));
  });
  // Arrow keys walk the timeline; Enter shows that step on the plan.
  $('#timeline').addEventListener('keydown', (event) => {
    const items = [...document.querySelectorAll('#timeline li[data-position]')];
    const current = items.indexOf(document.activeElement);
    if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
      event.preventDefault();
      const next = items[Math.max(0, Math.min(items.length - 1, current + (event.key === 'ArrowDown' ? 1 : -1)))];
      next?.focus();
    } else if (event.key === 'Enter' && current >= 0) {
      guarded(() => goToPosition(Number(items[current].dataset.position)));
    }
  });
  $('#token-button').addEventListener('click', openTokenDialog);
  $('#token-cancel').addEventListener('click', () => $('#token-dialog').close());
  $('#token-form').addEventListener('submit', () => {
    api.token = $('#token-input').value.trim() || null;
    message(null);
    const retry = state.retry;
    state.retry = null;
    if (retry) guarded(retry);
    else if (!$('#sessions-panel').hidden) guarded(() => sessions.load());
  });
  window.addEventListener('resize', () => plan.draw(plan.markers, plan.changed));
}

function start() {
  wire();
  const params = new URLSearchParams(window.location.search);
  const form = $('#filters');
  for (const key of ['actor', 'entity_type', 'type', 'from', 'to', 'order']) {
    if (params.get(key) && form.elements[key]) form.elements[key].value = params.get(key);
  }
  const session = params.get('session');
  if (session) {
    $('#session-id').value = session;
    guarded(() => open(session));
  } else {
    // Nothing asked for yet: the tenant's sessions to pick from.
    showSessions(true);
  }
}

start();
