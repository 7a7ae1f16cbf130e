// The zones' shapes as the 3D view holds them: each built once (zone-layer.js's shapeOf) and
// reused while a zone keeps its shape, keyed by what decides it; and the site's height, which
// the 2D shapes span.

import { isFlat } from "./shapes.js";
import { shapeOf } from "./zone-layer.js";

/** What decides a zone's drawn shape; 2D shapes also depend on the site's height. */
export function shapeKey(zone, zRange) {
  return JSON.stringify([zone.GeometryType, zone.GeometryData, isFlat(zone) ? zRange : null]);
}

export class ShapeCache {
  constructor() {
    this.shapes = new Map(); // shapeKey → shape
  }

  /** The shape of `zone` within `zRange`, built once per shape. */
  get(zone, zRange) {
    const key = shapeKey(zone, zRange);
    if (!this.shapes.has(key)) this.shapes.set(key, shapeOf(zone, zRange));
    return this.shapes.get(key);
  }

  /** Forgets the shapes whose keys are not in `used` (a Set). */
  keepOnly(used) {
    for (const key of this.shapes.keys()) if (!used.has(key)) this.shapes.delete(key);
  }

  /** The site's height, for the 2D shapes: from the 3D `zones` (shapes within `zRange`) and the
   * devices of `deviceLayer`, at least 0 to 3 m. */
  siteHeight(zones, zRange, deviceLayer) {
    let low = 0;
    let high = 3;
    for (const zone of zones) {
      if (isFlat(zone)) continue;
      const shape = this.get(zone, zRange);
      if (!shape) continue;
      low = Math.min(low, shape.box.min.z);
      high = Math.max(high, shape.box.max.z);
    }
    const p = deviceLayer.positions;
    for (let i = 0; i < deviceLayer.count; i++) {
      low = Math.min(low, p[i * 3 + 2]);
      high = Math.max(high, p[i * 3 + 2]);
    }
    return [low, high];
  }
}
