// Device labels in the 3D view: the device's name from the registry, or its MAC when it has no
// record, on a plate just above its point. Only a few devices get one: the selected device, the
// one pointed at, and those in view nearest the camera; they are chosen again when the camera
// moves and, as devices move, at most every DEVICE_LABEL_EVERY_MS (a pass over every device's
// point, without allocation). A label follows its device whenever the points are drawn.

import * as THREE from "three";
import { labelSprite, labelTexture } from "./labels.js";

/** Devices in view nearest the camera that get a label (besides the selected and pointed-at). */
const DEVICE_LABELS = 10;
/** How often labels are chosen again while devices or the camera move. */
export const DEVICE_LABEL_EVERY_MS = 500;
/** Label textures drawn at most per choice; the others wait for the next frames. */
const DRAWS_PER_PASS = 4;
/** Choices a texture may go unshown before it is let go. */
const IDLE_PASSES = 20;
const COLOUR = "#bff5d6";

export class DeviceLabels {
  /** The labels of the devices of `view` (a SiteView: camera, devices, `deviceName(mac)`). */
  constructor(view) {
    this.view = view;
    this.layer = new THREE.Group();
    this.sprites = [];
    this.textures = new Map(); // MAC → {text, texture, width, height, idle}
    this.placed = []; // [{device, sprite, text}] shown now
    this.nearest = [];
  }

  /** The text of the label shown for `mac` now, or null. */
  textOf(mac) {
    return this.placed.find((p) => p.device.mac === mac)?.text ?? null;
  }

  /** How many device labels are shown. */
  get count() {
    return this.placed.length;
  }

  /**
   * Gives the labels to the selected device, the one pointed at and the devices in view nearest
   * the camera, drawing missing or outdated textures a few at a time. Answers whether some are
   * still to be drawn.
   */
  update() {
    const { camera, devices, deviceLayer } = this.view;
    camera.updateMatrixWorld();
    _frustum.setFromProjectionMatrix(_matrix.multiplyMatrices(camera.projectionMatrix, camera.matrixWorldInverse));
    const wanted = [];
    for (const mac of [this.view.selectedDevice, this.view.hover.device?.mac]) {
      const device = mac ? devices.get(mac) : null;
      if (device && !wanted.includes(device)) wanted.push(device);
    }
    for (const index of this.nearestInView(deviceLayer, camera.position)) {
      const device = deviceLayer.list[index];
      if (!wanted.includes(device)) wanted.push(device);
    }
    let draws = DRAWS_PER_PASS;
    let pending = false;
    this.placed = [];
    for (const device of wanted) {
      const text = this.view.deviceName(device.mac) || device.mac;
      let label = this.textures.get(device.mac);
      if (!label || label.text !== text) {
        if (draws > 0) {
          draws -= 1;
          label?.texture.dispose();
          label = { text, ...labelTexture([text], COLOUR) };
          this.textures.set(device.mac, label);
        } else pending = true;
      }
      if (!label) continue;
      label.idle = 0;
      const sprite = this.sprites[this.placed.length] || this.addSprite();
      if (sprite.material.map !== label.texture) {
        sprite.material.map = label.texture;
        sprite.material.needsUpdate = true;
      }
      sprite.scale.set(label.width * 0.0012, label.height * 0.0012, 1);
      sprite.visible = true;
      this.placed.push({ device, sprite, text: label.text });
    }
    for (let i = this.placed.length; i < this.sprites.length; i++) this.sprites[i].visible = false;
    this.follow();
    this.forgetIdle();
    this.view.stale = true;
    return pending;
  }

  /** The indices of up to DEVICE_LABELS devices of `layer` in view nearest `eye`. */
  nearestInView(layer, eye) {
    const near = this.nearest; // [distance², index] by distance, at most DEVICE_LABELS
    near.length = 0;
    const p = layer.positions;
    for (let i = 0; i < layer.count; i++) {
      _point.fromArray(p, i * 3);
      if (!_frustum.containsPoint(_point)) continue;
      const distance = _point.distanceToSquared(eye);
      if (near.length === DEVICE_LABELS && distance >= near[near.length - 1][0]) continue;
      let at = near.length;
      while (at > 0 && near[at - 1][0] > distance) at -= 1;
      near.splice(at, 0, [distance, i]);
      if (near.length > DEVICE_LABELS) near.pop();
    }
    return near.map(([, index]) => index);
  }

  addSprite() {
    const sprite = labelSprite(null);
    // Just above the device's point, whatever the distance.
    sprite.center.set(0.5, -0.45);
    this.sprites.push(sprite);
    this.layer.add(sprite);
    return sprite;
  }

  /** Moves the labels to where their devices are now. */
  follow() {
    for (const { device, sprite } of this.placed) sprite.position.copy(device.position);
  }

  /** Lets go of the textures of devices not labelled for a while. */
  forgetIdle() {
    for (const [mac, label] of this.textures) {
      label.idle += 1;
      if (label.idle > IDLE_PASSES) {
        label.texture.dispose();
        this.textures.delete(mac);
      }
    }
  }
}

const _point = new THREE.Vector3();
const _matrix = new THREE.Matrix4();
const _frustum = new THREE.Frustum();
