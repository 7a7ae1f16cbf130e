// The shape being drawn (draw.js), shown in the 3D view: the zone as it would be, in white, and
// the outline of the points clicked so far.

import * as THREE from "three";
import { dispose } from "./dispose.js";
import { zoneGeometry } from "./shapes.js";

export class Preview {
  /** Previews in `scene`, none shown yet. */
  constructor(scene) {
    this.scene = scene;
    this.group = null;
  }

  /**
   * Shows `zone` ({GeometryType, GeometryData}, or null; 2D shapes between the heights of
   * `zRange`) and `outline` (points `[x, y, z]`) as a line through them, in place of the preview
   * shown before. `set(null)` clears it. Answers whether anything changed on screen.
   */
  set(zone, outline, zRange) {
    let changed = false;
    if (this.group) {
      this.scene.remove(this.group);
      dispose(this.group);
      this.group = null;
      changed = true;
    }
    const group = new THREE.Group();
    const geometry = zone ? zoneGeometry(zone, zRange) : null;
    if (geometry) {
      const material = new THREE.MeshBasicMaterial({ color: 0xffffff, transparent: true, opacity: 0.18, depthWrite: false, side: THREE.DoubleSide });
      group.add(new THREE.Mesh(geometry, material));
      group.add(new THREE.LineSegments(new THREE.EdgesGeometry(geometry, 20), new THREE.LineBasicMaterial({ color: 0xffffff })));
    }
    if (outline.length) {
      const points = new THREE.BufferGeometry().setFromPoints(outline.map((p) => new THREE.Vector3(p[0], p[1], p[2])));
      group.add(new THREE.Line(points, new THREE.LineBasicMaterial({ color: 0xffffff })));
      group.add(new THREE.Points(points.clone(), new THREE.PointsMaterial({ color: 0xffffff, size: 7, sizeAttenuation: false })));
    }
    if (!group.children.length) return changed;
    group.renderOrder = 8;
    this.group = group;
    this.scene.add(group);
    return true;
  }
}
