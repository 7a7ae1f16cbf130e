// The floor grid of the 3D view: 5 m lines (1 m lines too on floors up to FINE_GRID_UP_TO
// across), the axes at the origin and metre marks, under the site's box at the site's lowest
// height. The 1 m lines and the marks are detail (`detail`), left out while the camera moves.

import * as THREE from "three";
import { dispose } from "./dispose.js";
import { labelSprite, labelTexture } from "./labels.js";

/** Largest floor (metres across) drawn with 1 m lines; larger ones have the 5 m lines only. */
const FINE_GRID_UP_TO = 120;

export class Floor {
  /** A floor in `scene`, empty until `build`. */
  constructor(scene) {
    this.group = new THREE.Group();
    this.detail = new THREE.Group();
    scene.add(this.group);
  }

  /**
   * The floor grid (1 m lines, 5 m and 10 m emphasised) under `box` at height `z`, with metre
   * marks. Answers whether it was built again (false when the same grid is there already).
   */
  build(box, z) {
    const step = 5;
    const minX = Math.floor(Math.min(box.min.x, 0) / step) * step - step;
    const minY = Math.floor(Math.min(box.min.y, 0) / step) * step - step;
    const maxX = Math.ceil(Math.max(box.max.x, 0) / step) * step + step;
    const maxY = Math.ceil(Math.max(box.max.y, 0) / step) * step + step;
    const key = [minX, minY, maxX, maxY, z].join();
    if (key === this.key) return false;
    this.key = key;
    for (const group of [this.group, this.detail]) {
      group.children.slice().forEach((c) => {
        group.remove(c);
        dispose(c);
      });
    }
    const fine = [];
    const coarse = [];
    // Metre lines only where they are a few pixels apart at least: on large floors they would
    // make a grey plane, and cost as much to draw as the zones.
    const metres = Math.max(maxX - minX, maxY - minY) <= FINE_GRID_UP_TO ? 1 : step;
    for (let x = minX; x <= maxX; x += metres) (x % step === 0 ? coarse : fine).push(x, minY, z, x, maxY, z);
    for (let y = minY; y <= maxY; y += metres) (y % step === 0 ? coarse : fine).push(minX, y, z, maxX, y, z);
    const lines = (points, colour) => {
      const g = new THREE.BufferGeometry();
      g.setAttribute("position", new THREE.Float32BufferAttribute(points, 3));
      return new THREE.LineSegments(g, new THREE.LineBasicMaterial({ color: colour, transparent: true, opacity: 0.9 }));
    };
    // The metre lines and marks are detail, left out while the camera moves.
    this.group.add(lines(coarse, 0x3a4654), this.detail);
    this.detail.add(lines(fine, 0x222a33));
    const axes = new THREE.AxesHelper(2);
    axes.position.z = z + 0.001;
    this.group.add(axes);
    const every = maxX - minX > 120 ? 20 : maxX - minX > 60 ? 10 : step;
    const mark = (text, x, y) => {
      const sprite = labelSprite(labelTexture([text], "#8a97a6"));
      sprite.position.set(x, y, z);
      sprite.scale.multiplyScalar(0.8);
      this.detail.add(sprite);
    };
    for (let x = minX; x <= maxX; x += every) mark(`${x} m`, x, minY - 0.5);
    for (let y = minY + every; y <= maxY; y += every) mark(`${y} m`, minX - 1.2, y);
    this.box = new THREE.Box3(new THREE.Vector3(minX, minY, z), new THREE.Vector3(maxX, maxY, z));
    return true;
  }
}
