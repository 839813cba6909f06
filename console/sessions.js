// The tenant's work sessions, newest first, to pick one without knowing its id: every
// space the token sees (GET /spaces), then each space's sessions (GET /work-sessions),
// filtered as the investigator types (space name or key, session type, status, id).

import { api } from './api.js';
import { localTime } from './timeline.js';

/** Most spaces and sessions per space read: a list to pick from, not an export. */
const SPACES = 200;
const SESSIONS_PER_SPACE = 200;

export class SessionList {
  constructor({ list, filter, onOpen }) {
    this.list = list;
    this.filter = filter;
    this.onOpen = onOpen;
    this.rows = [];
    filter.addEventListener('input', () => this.render());
  }

  async load() {
    const spaces = await api.get(`/spaces?limit=${SPACES}`);
    const rows = [];
    for (const space of spaces ?? []) {
      const query = new URLSearchParams({ space_id: space.id, limit: String(SESSIONS_PER_SPACE) });
      for (const session of (await api.get(`/work-sessions?${query}`)) ?? []) rows.push({ space, session });
    }
    rows.sort((a, b) => (b.session.created_at ?? '').localeCompare(a.session.created_at ?? ''));
    this.rows = rows;
    this.render();
  }

  render() {
    const words = this.filter.value.trim().toLowerCase().split(/\s+/).filter(Boolean);
    const matching = this.rows.filter(({ space, session }) => {
      const text = [space.name, space.key, session.session_type, session.status, session.id, space.id].join(' ').toLowerCase();
      return words.every((word) => text.includes(word));
    });
    this.list.replaceChildren(...matching.map(({ space, session }) => this.item(space, session)));
    if (matching.length === 0) {
      const empty = document.createElement('li');
      empty.textContent = this.rows.length === 0 ? 'Your tenant has no work session yet.' : 'No work session matches.';
      this.list.append(empty);
    }
  }

  item(space, session) {
    const item = document.createElement('li');
    item.dataset.session = session.id;
    const link = document.createElement('a');
    link.href = `?session=${session.id}`;
    link.textContent = `${space.name} (${space.key}) · ${session.session_type} · ${session.status}`;
    link.addEventListener('click', (event) => {
      event.preventDefault();
      this.onOpen(session.id);
    });
    const details = document.createElement('span');
    details.className = 'muted';
    details.textContent = ` · started ${session.created_at ? localTime(session.created_at) : 'unknown'} · ${session.id}`;
    item.append(link, details);
    return item;
  }
}
