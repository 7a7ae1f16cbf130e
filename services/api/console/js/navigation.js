// Moving about the 3D view: orbit, pan and zoom with the mouse (three.js's OrbitControls),
// framing the whole site, looking straight down on it, turning about a zone, turning without end
// (for measuring), and telling whether the camera moved visibly since the last frame. The box
// of the site, for framing, is `siteBox`.

import * as THREE from "three";
import { OrbitControls } from "/console/vendor/three/examples/jsm/controls/OrbitControls.js";
import { isFlat } from "./shapes.js";

/** The camera moves when it turns or shifts by more than this share of the view's height a
 * frame (half a pixel at 800 pixels): the last creeping frames of a damped turn count as rest. */
const MOVE_SHARE = 0.5 / 800;

/** The box holding the shown `zones` (entries of the view, 2D shapes at height `floorZ`) and the
 * devices of `deviceLayer`, or a default site. */
export function siteBox(zones, floorZ, deviceLayer) {
  const box = new THREE.Box3();
  for (const entry of zones) {
    if (!entry.shown) continue;
    const b = _box.copy(entry.shape.box).translate(entry.offset);
    if (!isFlat(entry.zone)) box.union(b);
    else {
      box.expandByPoint(_point.set(b.min.x, b.min.y, floorZ));
      box.expandByPoint(_point.set(b.max.x, b.max.y, floorZ));
    }
  }
  const p = deviceLayer.positions;
  for (let i = 0; i < deviceLayer.count; i++) box.expandByPoint(_point.fromArray(p, i * 3));
  if (box.isEmpty()) return new THREE.Box3(new THREE.Vector3(-10, -10, 0), new THREE.Vector3(10, 10, 3));
  return box;
}

/** How the user moves `camera` about, with the mouse on `canvas`; `onChange` is called whenever
 * the camera moves. */
export class Navigation {
  constructor(camera, canvas, onChange) {
    this.camera = camera;
    this.controls = new OrbitControls(camera, canvas);
    this.controls.enableDamping = true;
    this.controls.screenSpacePanning = true;
    this.controls.addEventListener("change", onChange);
    this.last = { position: new THREE.Vector3(), quaternion: new THREE.Quaternion() };
  }

  /** Moves the camera on by a frame (damping, turning without end). */
  update() {
    this.controls.update();
  }

  /** Whether the camera moved visibly since the last frame (more than MOVE_SHARE). */
  moved() {
    const { position, quaternion } = this.camera;
    const last = this.last;
    const distance = Math.max(position.distanceTo(this.controls.target), 1e-3);
    const shift = position.distanceTo(last.position) / distance;
    // 1 − |q·q'| is about a turn's angle squared over 8.
    const turn = Math.sqrt(8 * Math.max(0, 1 - Math.abs(quaternion.dot(last.quaternion))));
    last.position.copy(position);
    last.quaternion.copy(quaternion);
    const share = MOVE_SHARE * THREE.MathUtils.degToRad(this.camera.fov);
    return shift > share || turn > share;
  }

  /** Frames `box` (the whole site) from an oblique angle. */
  fit(box) {
    const centre = box.getCenter(new THREE.Vector3());
    const radius = Math.max(box.getSize(new THREE.Vector3()).length() / 2, 3);
    const distance = radius / Math.sin(THREE.MathUtils.degToRad(this.camera.fov / 2));
    this.controls.target.copy(centre);
    this.camera.position.copy(centre).add(new THREE.Vector3(-0.45, -0.7, 0.55).normalize().multiplyScalar(distance));
    this.controls.update();
  }

  /** Looks straight down on `box` (the whole site), north (+y) up. */
  topView(box) {
    const centre = box.getCenter(new THREE.Vector3());
    const size = box.getSize(new THREE.Vector3());
    const half = Math.max(size.x / this.camera.aspect, size.y, 6) / 2 + 1;
    const distance = half / Math.tan(THREE.MathUtils.degToRad(this.camera.fov / 2));
    this.controls.target.copy(centre);
    // A hair off vertical: straight down, the orbit's up direction would be undefined.
    this.camera.position.set(centre.x, centre.y - distance * 1e-4, box.max.z + distance);
    this.controls.update();
  }

  /** Turns the view about the middle of `box` moved by `offset` (a zone's shape, where it is now). */
  focus(box, offset) {
    box.getCenter(this.controls.target).add(offset);
    this.controls.update();
  }

  /** Turns the view about `point` (a device, where it is now). */
  focusOn(point) {
    this.controls.target.copy(point);
    this.controls.update();
  }

  /** Turns the camera about the site without end (`on`), or stops it. */
  orbit(on) {
    this.controls.autoRotate = Boolean(on);
    this.controls.autoRotateSpeed = 4;
  }

  /** Turns orbit, pan and zoom with the mouse on or off. */
  setEnabled(on) {
    this.controls.enabled = on;
  }
}

const _box = new THREE.Box3();
const _point = new THREE.Vector3();
