// The floor plan: a work session's markers seen from above (x = cross axis across,
// z = long axis up, metres), labelled, filled with their colour, the markers a step
// changed outlined and badged (not by colour alone), a scale bar, and a ruler along the
// long axis with ticks at an interval the zoom picks.

import { intervalForZoom, ticksAlong } from './ticks.js';

const SVG = 'http://www.w3.org/2000/svg';
const MARGIN = 48;
/** Room left of the plan for the ruler and its labels (`120 m` fits whole). */
const LEFT = 96;

function element(name, attributes = {}, text) {
  const node = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, value);
  if (text !== undefined) node.textContent = text;
  return node;
}

const centre = (marker) => ({
  x: (marker.p1[0] + marker.p2[0] + marker.p3[0] + marker.p4[0]) / 4,
  z: (marker.p1[2] + marker.p2[2] + marker.p3[2] + marker.p4[2]) / 4,
});

export class Plan {
  constructor(svg, { onSelect }) {
    this.svg = svg;
    this.onSelect = onSelect;
    this.scale = 40; // pixels per metre
    this.bounds = { minX: -5, maxX: 5, minZ: 0, maxZ: 10 };
    this.markers = [];
    this.changed = new Set();
  }

  /** The map-style zoom level the tick table reads: log2 of pixels per metre, plus 10. */
  get zoom() { return Math.log2(this.scale) + 10; }

  /** Frames every marker of `everything` (the whole history, so the view holds still). */
  fit(everything) {
    if (everything.length === 0) return;
    const xs = everything.flatMap((m) => [m.p1[0], m.p2[0], m.p3[0], m.p4[0]]);
    const zs = everything.flatMap((m) => [m.p1[2], m.p2[2], m.p3[2], m.p4[2]]);
    this.bounds = { minX: Math.min(...xs) - 1, maxX: Math.max(...xs) + 1, minZ: Math.min(0, ...zs) - 0.5, maxZ: Math.max(...zs) + 1 };
    const { width, height } = this.size();
    const spanX = this.bounds.maxX - this.bounds.minX, spanZ = this.bounds.maxZ - this.bounds.minZ;
    this.scale = Math.max(0.05, Math.min((width - LEFT - MARGIN) / spanX, (height - 2 * MARGIN) / spanZ));
  }

  size() {
    const box = this.svg.getBoundingClientRect();
    return { width: box.width || 800, height: box.height || 500 };
  }

  zoomBy(factor) {
    this.scale = Math.min(5000, Math.max(0.05, this.scale * factor));
    this.draw(this.markers, this.changed);
  }

  toScreen(x, z) {
    const { height } = this.size();
    return [LEFT + (x - this.bounds.minX) * this.scale, height - MARGIN - (z - this.bounds.minZ) * this.scale];
  }

  draw(markers, changed = new Set()) {
    this.markers = markers;
    this.changed = changed;
    const { width, height } = this.size();
    this.svg.setAttribute('viewBox', `0 0 ${width} ${height}`);
    this.svg.replaceChildren();
    this.drawRuler(height);
    this.drawScale(width, height);
    for (const marker of markers) {
      const corners = [marker.p1, marker.p2, marker.p3, marker.p4];
      const points = corners.map(([x, , z]) => this.toScreen(x, z).map((v) => v.toFixed(1)).join(',')).join(' ');
      const isChanged = changed.has(marker.id);
      const group = element('g', {
        class: `marker${isChanged ? ' changed' : ''}`, 'data-id': marker.id, 'data-version': marker.version,
        'data-points': corners.map(([x, , z]) => `${x},${z}`).join(' '), tabindex: '0', role: 'button',
        'aria-label': `marker ${marker.label ?? marker.id.slice(0, 8)}${isChanged ? ', changed in this step' : ''}`,
      });
      group.append(element('title', {}, `${marker.label ?? 'unlabelled'} (${marker.id}) version ${marker.version}`));
      group.append(element('polygon', { points, fill: /^#[0-9a-fA-F]{6}$/.test(marker.color ?? '') ? marker.color : '#9aa3b2' }));
      const c = centre(marker);
      const [cx, cy] = this.toScreen(c.x, c.z);
      group.append(element('text', { x: cx.toFixed(1), y: (cy + 4).toFixed(1), 'text-anchor': 'middle' }, marker.label ?? marker.id.slice(0, 8)));
      if (isChanged) group.append(element('text', { x: cx.toFixed(1), y: (cy - 10).toFixed(1), 'text-anchor': 'middle', class: 'badge' }, 'changed'));
      group.addEventListener('click', () => this.onSelect(marker));
      group.addEventListener('keydown', (event) => { if (event.key === 'Enter' || event.key === ' ') this.onSelect(marker); });
      this.svg.append(group);
    }
  }

  /** Ticks along the long axis (z), at the left edge, from z = 0 up. */
  drawRuler(height) {
    const interval = intervalForZoom(this.zoom);
    const x = this.bounds.minX;
    const top = Math.max(this.bounds.maxZ, 0) + (height / this.scale);
    const path = [{ x, z: 0 }, { x, z: top }];
    const ruler = element('g', { class: 'ruler', 'data-interval': interval ?? 'none' });
    const [x0, y0] = this.toScreen(x, 0);
    const [, y1] = this.toScreen(x, top);
    ruler.append(element('line', { x1: x0 - 20, y1: y0, x2: x0 - 20, y2: y1 }));
    for (const tick of ticksAlong(path, interval)) {
      if (tick.kind === 'end') continue;
      const [, y] = this.toScreen(x, tick.point.z);
      if (y < 0) break;
      ruler.append(element('line', { x1: x0 - 26, y1: y, x2: x0 - 14, y2: y }));
      ruler.append(element('text', { x: x0 - 30, y: y + 3, 'text-anchor': 'end', 'data-distance': tick.distance }, `${+tick.distance.toFixed(2)} m`));
    }
    this.svg.append(ruler);
  }

  drawScale(width, height) {
    const interval = intervalForZoom(this.zoom) ?? 100;
    const length = interval * this.scale;
    const scale = element('g', { class: 'ruler scale' });
    scale.append(element('line', { x1: width - 20 - length, y1: height - 16, x2: width - 20, y2: height - 16 }));
    scale.append(element('text', { x: width - 20 - length / 2, y: height - 22, 'text-anchor': 'middle' }, `${interval} m`));
    this.svg.append(scale);
  }

  /** The plan as a standalone SVG document (styles inlined), for a report. */
  exportSVG(title) {
    const copy = this.svg.cloneNode(true);
    copy.setAttribute('xmlns', SVG);
    const style = element('style', {}, `
      .marker polygon { stroke: #333; stroke-width: 1; fill-opacity: 0.55 }
      .marker.changed polygon { stroke: #d97706; stroke-width: 4; stroke-dasharray: 6 3 }
      text { font: 11px sans-serif } .badge { font-weight: 700; fill: #d97706 } .ruler line { stroke: #5b6475 }`);
    copy.prepend(style);
    copy.prepend(element('title', {}, title));
    return new XMLSerializer().serializeToString(copy);
  }
}
