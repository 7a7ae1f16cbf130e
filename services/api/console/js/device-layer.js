// Every device as one point of one buffer, and every trail as segments of one other buffer, so
// that ten thousand moving devices are two draw calls. Moving a device writes its point and one
// trail segment (from where it was to where it is) in place, over its oldest segment; the
// buffers go to the GPU at most once a frame, and only when something moved. While the camera
// moves the trails are not drawn, and not sent to the GPU either.

import * as THREE from "three";

/** Positions a trail shows. */
export const TRAIL = 24;
const SEGMENTS = TRAIL - 1;
/** Most devices whose trails are drawn: past it, those the caller chooses (`showTrails`). */
export const TRAILS = 1000;
/** A device's dot, in CSS pixels; smaller on sites with more than TRAILS devices, where large
 * dots would cover each other (and cost more to draw than the zones). */
const DOT = 9;
const SMALL_DOT = 6;
const COLOUR = 0x35d07f;

export class DeviceLayer {
  /** Adds the points and trails to `parent`. */
  constructor(parent) {
    this.count = 0;
    this.capacity = 0;
    this.list = []; // index → device
    this.points = new THREE.Points(
      new THREE.BufferGeometry(),
      new THREE.PointsMaterial({ color: COLOUR, size: DOT, sizeAttenuation: false }),
    );
    this.trails = new THREE.LineSegments(
      new THREE.BufferGeometry(),
      new THREE.LineBasicMaterial({ color: COLOUR, transparent: true, opacity: 0.45 }),
    );
    // The buffers change every frame: their bounding volumes would be out of date at once.
    this.points.frustumCulled = false;
    this.trails.frustumCulled = false;
    this.points.renderOrder = 5;
    parent.add(this.trails, this.points);
    this.grow(64);
    this.dirty = false;
    this.trailsDirty = false;
  }

  /** Makes room for `n` devices, keeping what is there. */
  grow(n) {
    if (n <= this.capacity) return;
    this.capacity = Math.max(n, this.capacity * 2);
    const positions = new Float32Array(this.capacity * 3);
    const trail = new Float32Array(this.capacity * SEGMENTS * 6);
    if (this.positions) {
      positions.set(this.positions);
      trail.set(this.trail);
    }
    this.positions = positions;
    this.trail = trail;
    this.points.geometry.dispose();
    this.trails.geometry.dispose();
    this.points.geometry = geometry(positions);
    this.trails.geometry = geometry(trail);
    if (this.trailIndex) this.trails.geometry.setIndex(this.trailIndex);
    this.setRanges();
  }

  setRanges() {
    this.points.geometry.setDrawRange(0, this.count);
    this.points.material.size = this.count > TRAILS ? SMALL_DOT : DOT;
    if (this.count <= TRAILS) this.trails.geometry.setDrawRange(0, this.count * SEGMENTS * 2);
  }

  /**
   * Draws the trails of the devices numbered in `chosen` (at most TRAILS) only; with no more
   * devices than that, every trail is drawn and `chosen` is not needed.
   */
  showTrails(chosen) {
    const geometry = this.trails.geometry;
    if (this.count <= TRAILS) {
      if (geometry.index) {
        geometry.setIndex(null);
        this.setRanges();
      }
      return;
    }
    const per = SEGMENTS * 2;
    if (!this.trailIndex) this.trailIndex = new THREE.BufferAttribute(new Uint32Array(TRAILS * per), 1);
    const index = this.trailIndex.array;
    const shown = Math.min(chosen.length, TRAILS);
    for (let k = 0; k < shown; k++) {
      const first = chosen[k] * per;
      for (let v = 0; v < per; v++) index[k * per + v] = first + v;
    }
    this.trailIndex.needsUpdate = true;
    if (geometry.index !== this.trailIndex) geometry.setIndex(this.trailIndex);
    geometry.setDrawRange(0, shown * per);
  }

  /** A new device at `x, y, z`, its trail empty (every segment a point where it is). */
  add(mac, x, y, z) {
    this.grow(this.count + 1);
    const device = { mac, index: this.count, position: new THREE.Vector3(x, y, z), head: 0 };
    this.list.push(device);
    this.count += 1;
    const base = device.index * SEGMENTS * 6;
    for (let k = base; k < base + SEGMENTS * 6; k += 3) {
      this.trail[k] = x;
      this.trail[k + 1] = y;
      this.trail[k + 2] = z;
    }
    this.setPoint(device.index, x, y, z);
    this.trailsDirty = true;
    this.setRanges();
    return device;
  }

  setPoint(index, x, y, z) {
    const p = this.positions;
    p[index * 3] = x;
    p[index * 3 + 1] = y;
    p[index * 3 + 2] = z;
    this.dirty = true;
  }

  /** Moves `device` to `x, y, z`: its point, and a trail segment from where it was. */
  move(device, x, y, z) {
    const from = device.position;
    const t = this.trail;
    const s = (device.index * SEGMENTS + device.head) * 6;
    t[s] = from.x;
    t[s + 1] = from.y;
    t[s + 2] = from.z;
    t[s + 3] = x;
    t[s + 4] = y;
    t[s + 5] = z;
    device.head = (device.head + 1) % SEGMENTS;
    this.trailsDirty = true;
    from.set(x, y, z);
    this.setPoint(device.index, x, y, z);
  }

  /** Leaves the trails out (`moving`: while the camera moves) or draws them again. */
  setMoving(moving) {
    this.trails.visible = !moving;
  }

  /** Sends what moved to the GPU (the trails only while they are drawn); answers whether
   * anything did. */
  commit() {
    if (this.trailsDirty && this.trails.visible) {
      this.trails.geometry.getAttribute("position").needsUpdate = true;
      this.trailsDirty = false;
    }
    if (!this.dirty) return false;
    this.points.geometry.getAttribute("position").needsUpdate = true;
    this.dirty = false;
    return true;
  }
}

function geometry(array) {
  const attribute = new THREE.BufferAttribute(array, 3);
  attribute.setUsage(THREE.DynamicDrawUsage);
  return new THREE.BufferGeometry().setAttribute("position", attribute);
}
