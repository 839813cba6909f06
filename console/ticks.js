// Distance ticks along a path: the console's copy of RoboscopeGeometry's DistanceTicks
// (Sources/RoboscopeGeometry/DistanceTicks.swift: the same table and rules; the Swift one
// is unit-tested on hand-worked paths, and the browser test checks this one's ticks).

export const DEFAULT_ZOOM_TABLE = [
  [16, 1], [15, 2], [14, 5], [11, 10], [9, 20], [7, 30], [5, 50],
];

/** The interval for `zoom`: the row with the highest minimum the zoom reaches; null below. */
export function intervalForZoom(zoom, table = DEFAULT_ZOOM_TABLE) {
  let best = null;
  for (const [minimum, interval] of table) {
    if (zoom >= minimum && (best === null || minimum > best[0])) best = [minimum, interval];
  }
  return best ? best[1] : null;
}

export function cumulativeDistances(path) {
  const distances = [];
  let total = 0;
  path.forEach((point, index) => {
    if (index > 0) total += Math.hypot(point.x - path[index - 1].x, point.z - path[index - 1].z);
    distances.push(total);
  });
  return distances;
}

/** Start, every exact multiple of `interval` strictly inside, end. */
export function ticksAlong(path, interval) {
  if (path.length === 0) return [];
  const cumulative = cumulativeDistances(path);
  const length = cumulative[cumulative.length - 1];
  const ticks = [{ kind: 'start', distance: 0, point: path[0] }];
  if (interval > 0 && Number.isFinite(interval)) {
    let segment = 0;
    for (let n = 1; n * interval < length; n += 1) {
      const distance = n * interval;
      while (cumulative[segment + 1] < distance) segment += 1;
      const span = cumulative[segment + 1] - cumulative[segment];
      const fraction = span > 0 ? (distance - cumulative[segment]) / span : 0;
      const a = path[segment], b = path[segment + 1];
      ticks.push({ kind: 'interval', distance, point: { x: a.x + (b.x - a.x) * fraction, z: a.z + (b.z - a.z) * fraction } });
    }
  }
  ticks.push({ kind: 'end', distance: length, point: path[path.length - 1] });
  return ticks;
}
