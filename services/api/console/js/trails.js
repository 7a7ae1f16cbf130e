// Which device trails the 3D view draws: on a site of more than TRAILS devices, those of the
// devices in view nearest the camera; with fewer, every device's. device-layer.js draws them.

import * as THREE from "three";
import { TRAILS } from "./device-layer.js";

export class Trails {
  /** The trails of the devices of `deviceLayer`. */
  constructor(deviceLayer) {
    this.layer = deviceLayer;
    this.count = 0;
  }

  /**
   * Gives the trails to the devices in view of `camera` nearest it (every device when there are
   * TRAILS or fewer). Answers whether the trails drawn changed to a choice of them.
   */
  choose(camera) {
    const layer = this.layer;
    if (layer.count <= TRAILS) {
      layer.showTrails(null);
      return false;
    }
    camera.updateMatrixWorld();
    _frustum.setFromProjectionMatrix(_matrix.multiplyMatrices(camera.projectionMatrix, camera.matrixWorldInverse));
    if (!this.distance || this.distance.length < layer.count) {
      this.distance = new Float64Array(layer.capacity);
      this.order = new Uint32Array(layer.capacity);
    }
    const p = layer.positions;
    let inView = 0;
    for (let i = 0; i < layer.count; i++) {
      _point.fromArray(p, i * 3);
      if (!_frustum.containsPoint(_point)) continue;
      this.distance[i] = _point.distanceToSquared(camera.position);
      this.order[inView++] = i;
    }
    const order = this.order.subarray(0, inView).sort((a, b) => this.distance[a] - this.distance[b]);
    layer.showTrails(order.subarray(0, TRAILS));
    this.count = Math.min(inView, TRAILS);
    return true;
  }

  /** Trails drawn now among `devices` devices (all of them up to TRAILS). */
  shown(devices) {
    return Math.min(devices, devices <= TRAILS ? Infinity : this.count);
  }
}

const _point = new THREE.Vector3();
const _matrix = new THREE.Matrix4();
const _frustum = new THREE.Frustum();
