// What is under the pointer in the 3D view, and where things are on screen: the device drawn
// nearest a pixel, the zone a ray from the camera meets first, the tooltip that names them (worked
// out when the pointer moves, and again every HOVER_EVERY_MS while it rests, not every frame),
// the floor under a pixel and the pixel of a site point.

import * as THREE from "three";

/** How often what is under a resting pointer is worked out again (devices move under it). */
const HOVER_EVERY_MS = 250;

/** The device of `deviceLayer` drawn nearest to pixel (`x`, `y`) of a `w` × `h` view through
 * `camera`, within 10 pixels, or null. */
export function deviceAt(camera, deviceLayer, x, y, w, h) {
  _matrix.multiplyMatrices(camera.projectionMatrix, camera.matrixWorldInverse);
  const m = _matrix.elements;
  const p = deviceLayer.positions;
  let best = -1;
  let bestDistance = 10;
  for (let i = 0; i < deviceLayer.count; i++) {
    const px = p[i * 3];
    const py = p[i * 3 + 1];
    const pz = p[i * 3 + 2];
    const cw = m[3] * px + m[7] * py + m[11] * pz + m[15];
    if (cw <= 0) continue;
    const sx = (((m[0] * px + m[4] * py + m[8] * pz + m[12]) / cw + 1) / 2) * w;
    const sy = ((1 - (m[1] * px + m[5] * py + m[9] * pz + m[13]) / cw) / 2) * h;
    const distance = Math.hypot(sx - x, sy - y);
    if (distance < bestDistance) {
      best = i;
      bestDistance = distance;
    }
  }
  return best < 0 ? null : deviceLayer.list[best];
}

/** The point `[x, y, z]` of the plane at height `z` under the page's CSS pixel, seen through
 * `camera` on `canvas`, or null. */
export function floorPoint(camera, canvas, clientX, clientY, z = 0) {
  const rect = canvas.getBoundingClientRect();
  const at = new THREE.Vector2(((clientX - rect.left) / rect.width) * 2 - 1, 1 - ((clientY - rect.top) / rect.height) * 2);
  const ray = new THREE.Raycaster();
  ray.setFromCamera(at, camera);
  const floor = new THREE.Plane(new THREE.Vector3(0, 0, 1), -z);
  const hit = ray.ray.intersectPlane(floor, new THREE.Vector3());
  return hit ? hit.toArray() : null;
}

/** Where the site point `[x, y, z]` is drawn through `camera` on `canvas`, in the page's CSS
 * pixels, or null out of view. */
export function pixelOf(camera, canvas, [x, y, z]) {
  const p = new THREE.Vector3(x, y, z).project(camera);
  if (Math.abs(p.x) > 1 || Math.abs(p.y) > 1 || p.z > 1) return null;
  const rect = canvas.getBoundingClientRect();
  return { x: rect.left + ((p.x + 1) / 2) * rect.width, y: rect.top + ((1 - p.y) / 2) * rect.height };
}

/**
 * The pointer over `view` (a SiteView: its camera, zones, devices and occupants) and what is
 * under it, named in `tooltip`: `at` is where the pointer is (view pixels), `entry` the zone
 * entry pointed at and `device` the device pointed at (each gets a label even when it is not
 * among the nearest).
 */
export class Hover {
  constructor(view, tooltip) {
    this.view = view;
    this.tooltip = tooltip;
    this.at = null;
    this.entry = null;
    this.device = null;
  }

  /** Follows the pointer over `canvas`. */
  listen(canvas) {
    canvas.addEventListener("pointermove", (e) => {
      const rect = canvas.getBoundingClientRect();
      this.at = { x: e.clientX - rect.left, y: e.clientY - rect.top, due: true };
    });
    canvas.addEventListener("pointerleave", () => {
      this.at = null;
      this.set(null);
      this.setDevice(null);
      this.tooltip.hidden = true;
    });
  }

  /** At frame time `now`: shows what is under the pointer if it moved, or rested long enough. */
  frame(now) {
    if (this.at && (this.at.due || now - this.last > HOVER_EVERY_MS)) {
      this.at.due = false;
      this.last = now;
      this.show();
    }
  }

  /** Shows what is under the pointer: a device (name, MAC and zones) or a zone. */
  show() {
    const { camera, renderer, deviceLayer, zoneLayer, zones, occupants } = this.view;
    const { x, y } = this.at;
    const w = renderer.domElement.clientWidth;
    const h = renderer.domElement.clientHeight;
    const device = deviceAt(camera, deviceLayer, x, y, w, h);
    let text = null;
    let zoneEntry = null;
    if (device) {
      const inside = [];
      for (const [zoneId, macs] of occupants) {
        if (macs.has(device.mac)) inside.push(zones.get(zoneId)?.zone.Name || zoneId.slice(0, 8));
      }
      const at = device.position.toArray().map((c) => c.toFixed(2)).join(", ");
      const name = this.view.deviceName(device.mac);
      text = `${name ? `${name}\n` : ""}${device.mac}\n[${at}]\n${inside.length ? `in ${inside.join(", ")}` : "in no zone"}`;
    } else {
      _raycaster.setFromCamera(_pointer.set((x / w) * 2 - 1, 1 - (y / h) * 2), camera);
      zoneEntry = zoneLayer.pick(_raycaster.ray, zones.values());
      if (zoneEntry) {
        const { zone } = zoneEntry;
        const count = occupants.get(zone.ZoneID)?.size || 0;
        const state = [zone.Active ? "active" : "inactive", zone.IsGeometryLocked ? "locked" : null].filter(Boolean);
        text = `${zone.Name || "(no name)"} · ${zone.GeometryType}\nAlertLevel ${zone.AlertLevel} · ${state.join(", ")}\n${count} inside`;
      }
    }
    this.set(zoneEntry);
    this.setDevice(device);
    this.tooltip.hidden = !text;
    if (text) {
      this.tooltip.textContent = text;
      this.tooltip.style.left = `${x + 14}px`;
      this.tooltip.style.top = `${y + 14}px`;
    }
  }

  /** The device pointed at gets a label even when it is not among the nearest. */
  setDevice(device) {
    if (device === this.device) return;
    this.device = device;
    this.view.namesChanged();
  }

  /** The zone pointed at gets a label even when it is not among the nearest. */
  set(entry) {
    if (entry === this.entry) return;
    this.entry = entry;
    this.view.labelsDue = true;
  }
}

const _matrix = new THREE.Matrix4();
const _raycaster = new THREE.Raycaster();
const _pointer = new THREE.Vector2();
