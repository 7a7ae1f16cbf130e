// The 3D view of the site: zones as translucent shapes coloured by their alarm kind, devices as
// points with a short trail, a floor grid in metres, orbit/pan/zoom, a top view and fit-to-site.
// It draws what it is told (setZones, setOccupants, moveDevice); it fetches nothing.
//
// Built for large sites: all zones are one mesh and one set of edges (zone-layer.js), all
// devices one point buffer and all trails one segment buffer (device-layer.js); a frame is drawn
// only when something changed, labels are kept for the zones nearest the camera, and hover is
// worked out when the pointer moves, not every frame. While the camera moves, a coarse view is
// drawn (fewer facets around round zones, no edges, labels, trails or metre marks): in software
// WebGL a frame costs per triangle, line and point, and turning the full view reaches a third of
// the frame rate. The exact view is drawn again as soon as the camera rests (REST_MS).

import * as THREE from "three";
import { OrbitControls } from "/console/vendor/three/examples/jsm/controls/OrbitControls.js";
import { isFlat, zoneGeometry } from "./shapes.js";
import { ZoneLayer, shapeOf } from "./zone-layer.js";
import { DeviceLayer, TRAILS } from "./device-layer.js";

const COLOURS = {
  site: 0xe5484d,
  device: 0xf5a524,
  log: 0x3e9bff,
  inactive: 0x7a7f87,
};
/** Most zone labels shown at once: the zones nearest the camera get them (the one pointed at
 * always does). A site with fewer zones has every zone labelled. */
const LABELS = 32;
/** Label textures drawn at most per frame; the others wait for the next frames. */
const LABEL_DRAWS_PER_FRAME = 6;
/** Label choices a label may go unshown before its texture is let go. */
const LABEL_IDLE_PASSES = 40;
/** How often labels and trails are chosen again while the camera moves, and hover while the
 * pointer rests. */
const LABEL_EVERY_MS = 150;
const TRAIL_EVERY_MS = 500;
const HOVER_EVERY_MS = 250;
/** Shortest time between two frames drawn for data alone (devices, zone looks, labels): the
 * position stream's default rate. */
const DATA_EVERY_MS = 200;
/** Largest floor (metres across) drawn with 1 m lines; larger ones have the 5 m lines only. */
const FINE_GRID_UP_TO = 120;
/** The full view is drawn again once the camera has not moved for this long. */
const REST_MS = 100;
/** The camera moves when it turns or shifts by more than this share of the view's height a
 * frame (half a pixel at 800 pixels): the last creeping frames of a damped turn count as rest. */
const MOVE_SHARE = 0.5 / 800;
/** The share of the view's resolution (across) drawn while the camera moves, in software WebGL:
 * there a frame costs per pixel of the translucent zones as much as per triangle. */
const MOVING_RESOLUTION = 0.5;
/** Frame intervals kept for the percentiles of `stats()`. */
const FRAME_SAMPLES = 240;

/**
 * Whether WebGL runs on a graphics card. In software (SwiftShader, llvmpipe: machines without
 * one) antialiasing by multisampling costs more than everything the view draws.
 */
function onGraphicsCard() {
  const gl = document.createElement("canvas").getContext("webgl2");
  if (!gl) return true;
  const name = rendererName(gl);
  gl.getExtension("WEBGL_lose_context")?.loseContext();
  return !/swiftshader|llvmpipe|software/i.test(name);
}

/** What draws the WebGL context `gl`: the graphics card's or software renderer's name. */
function rendererName(gl) {
  const info = gl.getExtension("WEBGL_debug_renderer_info");
  return String(gl.getParameter(info ? info.UNMASKED_RENDERER_WEBGL : gl.RENDERER));
}

/** The alarm kind an entry into a zone of `level` raises, under the site's thresholds. */
export function alarmKind(level, thresholds) {
  if (level >= thresholds.site) return "site";
  if (level >= thresholds.device) return "device";
  return "log";
}

/** A text label's texture: the lines on a dark plate, and its size in CSS pixels. */
function labelTexture(lines, colour) {
  const scale = 2;
  const font = `${13 * scale}px system-ui, sans-serif`;
  const canvas = document.createElement("canvas");
  const ctx = canvas.getContext("2d");
  ctx.font = font;
  const width = Math.ceil(Math.max(...lines.map((l) => ctx.measureText(l).width))) + 12 * scale;
  const lineHeight = 17 * scale;
  canvas.width = width;
  canvas.height = lineHeight * lines.length + 6 * scale;
  ctx.font = font;
  ctx.fillStyle = "rgba(16, 20, 26, 0.78)";
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  ctx.fillStyle = colour;
  ctx.textBaseline = "top";
  lines.forEach((l, i) => ctx.fillText(l, 6 * scale, 4 * scale + i * lineHeight));
  const texture = new THREE.CanvasTexture(canvas);
  texture.colorSpace = THREE.SRGBColorSpace;
  return { texture, width: canvas.width / scale, height: canvas.height / scale };
}

/** A sprite that keeps its size on screen, showing `label` (from labelTexture). */
function labelSprite(label) {
  const material = new THREE.SpriteMaterial({ depthTest: false, transparent: true, sizeAttenuation: false });
  const sprite = new THREE.Sprite(material);
  sprite.center.set(0.5, 0);
  sprite.renderOrder = 10;
  if (label) showLabel(sprite, label);
  return sprite;
}

function showLabel(sprite, label) {
  if (sprite.material.map !== label.texture) {
    sprite.material.map = label.texture;
    sprite.material.needsUpdate = true;
  }
  // Without size attenuation a sprite's scale is about its share of the view's height.
  sprite.scale.set(label.width * 0.0012, label.height * 0.0012, 1);
}

function dispose(object) {
  object.traverse((o) => {
    o.geometry?.dispose();
    if (o.material) {
      o.material.map?.dispose();
      o.material.dispose();
    }
  });
}

/** What decides a zone's drawn shape; 2D shapes also depend on the site's height. */
function shapeKey(zone, zRange) {
  return JSON.stringify([zone.GeometryType, zone.GeometryData, isFlat(zone) ? zRange : null]);
}

/** The `p`-quantile of the sorted numbers `sorted`. */
function quantile(sorted, p) {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.round((sorted.length - 1) * p))] : 0;
}

export class SiteView {
  constructor(container, tooltip) {
    this.container = container;
    this.tooltip = tooltip;
    this.zones = new Map(); // ZoneID → {zone, shape, range, offset, shown, look, kind, label…}
    this.devices = new Map(); // MAC → {mac, index, position, head}
    this.occupants = new Map(); // ZoneID → Set(MAC)
    this.mobile = new Map(); // source MAC → [zone entries that follow it]
    this.shapes = new Map(); // shapeKey → shape, reused while the zone keeps its shape
    this.thresholds = { site: 8, device: 4 };
    this.frames = 0;
    this.rendered = 0;
    this.fps = 0;
    this.frameTimes = new Float32Array(FRAME_SAMPLES);
    this.zRange = [0, 3];
    this.hoverAt = null;
    this.hovered = null;
    this.invalid = true;
    this.labelsDue = true;
    this.coarse = false;
    this.lastMove = -Infinity;
    this.movedBefore = false;
    this.settledMs = null;
    this.drawn = { triangles: 0, lines: 0, points: 0 };
    this.webgl = this.start();
  }

  start() {
    try {
      this.onGraphicsCard = onGraphicsCard();
      this.renderer = new THREE.WebGLRenderer({ antialias: this.onGraphicsCard });
    } catch (e) {
      this.container.textContent = `The 3D view needs WebGL, which this browser does not offer (${e.message}).`;
      this.container.classList.add("no-webgl");
      return false;
    }
    this.rendererName = rendererName(this.renderer.getContext());
    this.renderer.setPixelRatio(window.devicePixelRatio);
    this.renderer.setClearColor(0x12161c);
    this.container.appendChild(this.renderer.domElement);

    this.scene = new THREE.Scene();
    this.camera = new THREE.PerspectiveCamera(50, 1, 0.05, 5000);
    this.camera.up.set(0, 0, 1);
    this.camera.position.set(-15, -25, 20);
    this.controls = new OrbitControls(this.camera, this.renderer.domElement);
    this.controls.enableDamping = true;
    this.controls.screenSpacePanning = true;
    this.controls.addEventListener("change", () => {
      this.invalidate();
      this.labelsDue = true;
      this.trailsDue = true;
    });

    this.floor = new THREE.Group();
    this.floorDetail = new THREE.Group();
    this.lastCamera = { position: new THREE.Vector3(), quaternion: new THREE.Quaternion() };
    this.labelLayer = new THREE.Group();
    this.scene.add(this.floor);
    this.zoneLayer = new ZoneLayer(this.scene);
    this.deviceLayer = new DeviceLayer(this.scene);
    this.scene.add(this.labelLayer);
    this.labelSprites = [];
    this.buildFloor(new THREE.Box3(new THREE.Vector3(-10, -10, 0), new THREE.Vector3(10, 10, 3)));

    new ResizeObserver(() => this.resize()).observe(this.container);
    this.resize();
    this.renderer.domElement.addEventListener("pointermove", (e) => {
      const rect = this.renderer.domElement.getBoundingClientRect();
      this.hoverAt = { x: e.clientX - rect.left, y: e.clientY - rect.top, due: true };
    });
    this.renderer.domElement.addEventListener("pointerleave", () => {
      this.hoverAt = null;
      this.setHovered(null);
      this.tooltip.hidden = true;
    });
    requestAnimationFrame((now) => this.frame(now));
    return true;
  }

  /**
   * One animation frame: camera, labels, trails and hover when due, and a render if something
   * is to be seen differently: at once for the camera, the view's size or the zone set, at most
   * every DATA_EVERY_MS for moved devices, restyled or moved zones and labels (a busy site changes
   * them every frame; drawing them five times a second keeps the page free for the rest).
   */
  frame(now) {
    requestAnimationFrame((t) => this.frame(t));
    this.countFrame(now);
    this.controls.update();
    // Moving in two frames running: a jump (Fit site, Top view) is drawn in full at once.
    const moved = this.cameraMoved();
    if (moved && this.movedBefore) this.lastMove = now;
    this.movedBefore = moved;
    const coarse = now - this.lastMove < REST_MS;
    if (coarse !== this.coarse) this.setCoarse(coarse, now);
    if (this.hoverAt && (this.hoverAt.due || now - this.lastHover > HOVER_EVERY_MS)) {
      this.hoverAt.due = false;
      this.lastHover = now;
      this.hover();
    }
    if (this.trailsDue && !this.coarse && !(now - this.lastTrails < TRAIL_EVERY_MS)) {
      this.lastTrails = now;
      this.trailsDue = false;
      this.chooseTrails();
    }
    if (!this.coarse && (this.labelsPending || (this.labelsDue && !(now - this.lastLabels < LABEL_EVERY_MS)))) {
      this.lastLabels = now;
      this.labelsDue = false;
      this.labelsPending = this.updateLabels();
    }
    const data = this.stale || this.deviceLayer.dirty || this.zoneLayer.changed();
    if (!this.invalid && !(data && !(now - this.lastRender < DATA_EVERY_MS))) return;
    this.invalid = false;
    this.stale = false;
    this.lastRender = now;
    this.deviceLayer.commit();
    this.zoneLayer.commit();
    this.renderer.render(this.scene, this.camera);
    this.rendered += 1;
    const { triangles, lines, points } = this.renderer.info.render;
    this.drawn = { triangles, lines, points };
    if (this.restAt !== undefined && !this.coarse) {
      this.settledMs = now - this.restAt;
      this.restAt = undefined;
    }
  }

  /** Whether the camera moved visibly since the last frame (more than MOVE_SHARE). */
  cameraMoved() {
    const { position, quaternion } = this.camera;
    const last = this.lastCamera;
    const distance = Math.max(position.distanceTo(this.controls.target), 1e-3);
    const shift = position.distanceTo(last.position) / distance;
    // 1 − |q·q'| is about a turn's angle squared over 8.
    const turn = Math.sqrt(8 * Math.max(0, 1 - Math.abs(quaternion.dot(last.quaternion))));
    last.position.copy(position);
    last.quaternion.copy(quaternion);
    const share = MOVE_SHARE * THREE.MathUtils.degToRad(this.camera.fov);
    return shift > share || turn > share;
  }

  /**
   * Draws the coarse view (`coarse`: the camera moves) or the full one, from the next frame on.
   * Labels and trails are chosen again for the full view at once, from where the camera rests.
   */
  setCoarse(coarse, now) {
    this.coarse = coarse;
    this.zoneLayer.setCoarse(coarse);
    this.deviceLayer.setMoving(coarse);
    this.labelLayer.visible = !coarse;
    this.floorDetail.visible = !coarse;
    const resolution = coarse && !this.onGraphicsCard ? MOVING_RESOLUTION : 1;
    this.renderer.setPixelRatio(window.devicePixelRatio * resolution);
    if (!coarse) {
      this.restAt = this.lastMove;
      this.labelsDue = true;
      this.trailsDue = true;
      this.lastLabels = -Infinity;
      this.lastTrails = -Infinity;
    }
    this.invalidate();
  }

  countFrame(now) {
    if (this.lastFrame !== undefined) this.frameTimes[this.frames % FRAME_SAMPLES] = now - this.lastFrame;
    this.lastFrame = now;
    this.frames += 1;
    this.counted = (this.counted || 0) + 1;
    if (this.fpsSince === undefined) this.fpsSince = now;
    if (now - this.fpsSince >= 1000) {
      this.fps = Math.round((this.counted * 1000) / (now - this.fpsSince));
      this.counted = 0;
      this.fpsSince = now;
    }
  }

  /** Something changed: draw at the next frame. */
  invalidate() {
    this.invalid = true;
  }

  resize() {
    const { clientWidth: w, clientHeight: h } = this.container;
    if (!w || !h) return;
    this.renderer.setSize(w, h, false);
    this.camera.aspect = w / h;
    this.camera.updateProjectionMatrix();
    this.invalidate();
  }

  /** The floor grid (1 m lines, 5 m and 10 m emphasised) under `box`, with metre marks. */
  buildFloor(box) {
    const step = 5;
    const minX = Math.floor(Math.min(box.min.x, 0) / step) * step - step;
    const minY = Math.floor(Math.min(box.min.y, 0) / step) * step - step;
    const maxX = Math.ceil(Math.max(box.max.x, 0) / step) * step + step;
    const maxY = Math.ceil(Math.max(box.max.y, 0) / step) * step + step;
    const z = this.zRange[0];
    const key = [minX, minY, maxX, maxY, z].join();
    if (key === this.floorKey) return;
    this.floorKey = key;
    for (const group of [this.floor, this.floorDetail]) {
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
    this.floor.add(lines(coarse, 0x3a4654), this.floorDetail);
    this.floorDetail.add(lines(fine, 0x222a33));
    const axes = new THREE.AxesHelper(2);
    axes.position.z = z + 0.001;
    this.floor.add(axes);
    const every = maxX - minX > 120 ? 20 : maxX - minX > 60 ? 10 : step;
    const mark = (text, x, y) => {
      const sprite = labelSprite(labelTexture([text], "#8a97a6"));
      sprite.position.set(x, y, z);
      sprite.scale.multiplyScalar(0.8);
      this.floorDetail.add(sprite);
    };
    for (let x = minX; x <= maxX; x += every) mark(`${x} m`, x, minY - 0.5);
    for (let y = minY + every; y <= maxY; y += every) mark(`${y} m`, minX - 1.2, y);
    this.floorBox = new THREE.Box3(new THREE.Vector3(minX, minY, z), new THREE.Vector3(maxX, maxY, z));
    this.invalidate();
  }

  /** Alarm thresholds from the zone settings (SiteAlarmMinLevel, DeviceAlarmMinLevel). */
  setThresholds(thresholds) {
    this.thresholds = thresholds;
    for (const entry of this.zones.values()) this.style(entry);
  }

  /** The site's height, for the 2D shapes: from the 3D zones and the devices seen, at least 3 m. */
  siteHeight(zones) {
    let low = 0;
    let high = 3;
    for (const zone of zones) {
      if (isFlat(zone)) continue;
      const shape = this.shape(zone, this.zRange);
      if (!shape) continue;
      low = Math.min(low, shape.box.min.z);
      high = Math.max(high, shape.box.max.z);
    }
    const p = this.deviceLayer.positions;
    for (let i = 0; i < this.deviceLayer.count; i++) {
      low = Math.min(low, p[i * 3 + 2]);
      high = Math.max(high, p[i * 3 + 2]);
    }
    return [low, high];
  }

  /** The shape of `zone` within `zRange`, built once per shape. */
  shape(zone, zRange) {
    const key = shapeKey(zone, zRange);
    if (!this.shapes.has(key)) this.shapes.set(key, shapeOf(zone, zRange));
    return this.shapes.get(key);
  }

  /** Draws exactly `zones` (the whole list, as GET /v3/modules/zones answers it). */
  setZones(zones) {
    if (!this.webgl) return;
    this.zRange = this.siteHeight(zones);
    const entries = [];
    let rebuild = false;
    for (const zone of zones) {
      const key = shapeKey(zone, this.zRange);
      const shape = this.shape(zone, this.zRange);
      if (!shape) continue;
      let entry = this.zones.get(zone.ZoneID);
      if (!entry || entry.shapeKey !== key) {
        rebuild = true;
        entry = { ...entry, zone, shape, shapeKey: key, offset: new THREE.Vector3(), shown: true, box: shape.box };
      }
      entry.zone = zone;
      entries.push(entry);
    }
    rebuild ||= entries.length !== this.zones.size;
    if (rebuild) this.rebuildZones(entries);
    this.mobile = new Map();
    for (const entry of entries) {
      const source = entry.zone.MobileOriginSource;
      if (source) this.mobile.set(source, [...(this.mobile.get(source) || []), entry]);
      this.place(entry);
      this.style(entry);
    }
    this.labelsDue = true;
    this.buildFloor(this.siteBox());
  }

  /** Merges the shapes of `entries` again, forgetting shapes and labels no zone uses now. */
  rebuildZones(entries) {
    const wanted = new Set(entries.map((e) => e.zone.ZoneID));
    for (const [id, entry] of this.zones) if (!wanted.has(id)) entry.label?.texture.dispose();
    this.zones = new Map(entries.map((e) => [e.zone.ZoneID, e]));
    const used = new Set(entries.map((e) => e.shapeKey));
    for (const key of this.shapes.keys()) if (!used.has(key)) this.shapes.delete(key);
    this.zoneLayer.rebuild(entries);
    this.invalidate();
  }

  /** Moves a mobile zone so that its centre sits on its source device, if that is known. */
  place(entry) {
    const source = entry.zone.MobileOriginSource;
    const device = source ? this.devices.get(source) : null;
    if (device) {
      entry.offset.copy(device.position).sub(entry.shape.centre);
      if (isFlat(entry.zone)) entry.offset.z = 0;
    } else entry.offset.set(0, 0, 0);
    this.zoneLayer.setPlace(entry, entry.offset, !source || Boolean(device));
    if (entry.sprite) this.placeLabel(entry);
  }

  /** Colours a zone by its alarm kind and state, and words its label. */
  style(entry) {
    const { zone } = entry;
    const occupants = this.occupants.get(zone.ZoneID)?.size || 0;
    const kind = zone.Active ? alarmKind(zone.AlertLevel, this.thresholds) : "inactive";
    entry.kind = kind;
    const colour = _colour.setHex(COLOURS[kind]);
    const lit = occupants > 0 && zone.Active;
    const edge = zone.IsGeometryLocked ? _white : colour;
    const glow = lit ? _glow.copy(colour).multiplyScalar(0.45) : _black;
    const opacity = lit ? 0.5 : zone.Active ? 0.2 : 0.1;
    this.zoneLayer.setStyle(entry, colour, opacity, edge, lit ? 1 : zone.Active ? 0.75 : 0.4, glow);
    const title = `${zone.Name || zone.ZoneID.slice(0, 8)}${zone.IsGeometryLocked ? " [locked]" : ""}`;
    const lines = occupants > 0 ? [title, `● ${occupants} inside`] : [title];
    const text = lit ? "#ffffff" : kind === "inactive" ? "#9aa3ad" : `#${colour.getHexString()}`;
    const labelKey = JSON.stringify([lines, text]);
    if (entry.labelKey !== labelKey) {
      entry.labelKey = labelKey;
      entry.labelLines = lines;
      entry.labelColour = text;
      if (entry.sprite) this.labelsDue = true;
    }
  }

  /** Who is inside each zone now: a Map of ZoneID → Set(MAC). */
  setOccupants(occupants) {
    this.occupants = occupants;
    for (const entry of this.zones.values()) this.style(entry);
  }

  /** Restyles one zone after its occupants changed. */
  occupantsChanged(zoneId) {
    const entry = this.zones.get(zoneId);
    if (entry) this.style(entry);
  }

  /**
   * Gives the label sprites to the zones in view nearest the camera (the zone pointed at
   * first), drawing the textures that are missing or out of date, a few per frame. Answers
   * whether some are still to be drawn.
   */
  updateLabels() {
    this.camera.updateMatrixWorld();
    _frustum.setFromProjectionMatrix(_matrix.multiplyMatrices(this.camera.projectionMatrix, this.camera.matrixWorldInverse));
    const chosen = [];
    for (const entry of this.zones.values()) {
      entry.sprite = null;
      if (!entry.shown) continue;
      labelAnchor(entry, _point);
      if (this.zones.size > LABELS && !_frustum.containsPoint(_point)) continue;
      entry.labelDistance = entry === this.hovered ? -1 : _point.distanceToSquared(this.camera.position);
      chosen.push(entry);
    }
    chosen.sort((a, b) => a.labelDistance - b.labelDistance);
    chosen.length = Math.min(chosen.length, LABELS);
    let draws = LABEL_DRAWS_PER_FRAME;
    let pending = false;
    let shown = 0;
    for (const entry of chosen) {
      entry.labelIdle = 0;
      if (!entry.label || entry.label.key !== entry.labelKey) {
        if (draws > 0) {
          draws -= 1;
          entry.label?.texture.dispose();
          entry.label = { key: entry.labelKey, ...labelTexture(entry.labelLines, entry.labelColour) };
        } else pending = true;
      }
      // A label not drawn yet is shown from a later frame on; an outdated one until then.
      if (!entry.label) continue;
      if (!this.labelSprites[shown]) {
        this.labelSprites[shown] = labelSprite(null);
        this.labelLayer.add(this.labelSprites[shown]);
      }
      entry.sprite = this.labelSprites[shown];
      showLabel(entry.sprite, entry.label);
      this.placeLabel(entry);
      entry.sprite.visible = true;
      shown += 1;
    }
    for (let i = shown; i < this.labelSprites.length; i++) this.labelSprites[i].visible = false;
    this.labelCount = shown;
    this.forgetIdleLabels();
    this.stale = true;
    return pending;
  }

  /** Lets go of the textures of labels not shown for a while. */
  forgetIdleLabels() {
    for (const entry of this.zones.values()) {
      if (!entry.label || entry.sprite) continue;
      entry.labelIdle = (entry.labelIdle || 0) + 1;
      if (entry.labelIdle > LABEL_IDLE_PASSES) {
        entry.label.texture.dispose();
        entry.label = null;
      }
    }
  }

  placeLabel(entry) {
    labelAnchor(entry, entry.sprite.position);
    this.stale = true;
  }

  /** Moves (or adds) a device; its trail keeps the last few positions. */
  moveDevice(mac, [x, y, z]) {
    if (!this.webgl) return;
    const device = this.devices.get(mac);
    if (device) this.deviceLayer.move(device, x, y, z);
    else {
      this.devices.set(mac, this.deviceLayer.add(mac, x, y, z));
      this.trailsDue = true;
    }
    const following = this.mobile.get(mac);
    if (following) for (const entry of following) this.place(entry);
  }

  /**
   * On a site of more than TRAILS devices, gives their trails to the devices in view nearest
   * the camera; with fewer, every device has its trail.
   */
  chooseTrails() {
    const layer = this.deviceLayer;
    if (layer.count <= TRAILS) {
      layer.showTrails(null);
      return;
    }
    this.camera.updateMatrixWorld();
    _frustum.setFromProjectionMatrix(_matrix.multiplyMatrices(this.camera.projectionMatrix, this.camera.matrixWorldInverse));
    if (!this.trailDistance || this.trailDistance.length < layer.count) {
      this.trailDistance = new Float64Array(layer.capacity);
      this.trailOrder = new Uint32Array(layer.capacity);
    }
    const p = layer.positions;
    let inView = 0;
    for (let i = 0; i < layer.count; i++) {
      _point.fromArray(p, i * 3);
      if (!_frustum.containsPoint(_point)) continue;
      this.trailDistance[i] = _point.distanceToSquared(this.camera.position);
      this.trailOrder[inView++] = i;
    }
    const order = this.trailOrder.subarray(0, inView).sort((a, b) => this.trailDistance[a] - this.trailDistance[b]);
    layer.showTrails(order.subarray(0, TRAILS));
    this.trailCount = Math.min(inView, TRAILS);
    this.stale = true;
  }

  /** The box holding the zones and devices, or a default site. */
  siteBox() {
    const box = new THREE.Box3();
    for (const entry of this.zones.values()) {
      if (!entry.shown) continue;
      const b = _box.copy(entry.shape.box).translate(entry.offset);
      if (!isFlat(entry.zone)) box.union(b);
      else {
        box.expandByPoint(_point.set(b.min.x, b.min.y, this.zRange[0]));
        box.expandByPoint(_point.set(b.max.x, b.max.y, this.zRange[0]));
      }
    }
    const p = this.deviceLayer.positions;
    for (let i = 0; i < this.deviceLayer.count; i++) box.expandByPoint(_point.fromArray(p, i * 3));
    if (box.isEmpty()) return new THREE.Box3(new THREE.Vector3(-10, -10, 0), new THREE.Vector3(10, 10, 3));
    return box;
  }

  /** Frames the whole site from an oblique angle. */
  fit() {
    if (!this.webgl) return;
    const box = this.siteBox();
    this.buildFloor(box);
    const centre = box.getCenter(new THREE.Vector3());
    const radius = Math.max(box.getSize(new THREE.Vector3()).length() / 2, 3);
    const distance = radius / Math.sin(THREE.MathUtils.degToRad(this.camera.fov / 2));
    this.controls.target.copy(centre);
    this.camera.position.copy(centre).add(new THREE.Vector3(-0.45, -0.7, 0.55).normalize().multiplyScalar(distance));
    this.controls.update();
  }

  /** Looks straight down on the site, north (+y) up. */
  topView() {
    if (!this.webgl) return;
    const box = this.siteBox();
    this.buildFloor(box);
    const centre = box.getCenter(new THREE.Vector3());
    const size = box.getSize(new THREE.Vector3());
    const half = Math.max(size.x / this.camera.aspect, size.y, 6) / 2 + 1;
    const distance = half / Math.tan(THREE.MathUtils.degToRad(this.camera.fov / 2));
    this.controls.target.copy(centre);
    // A hair off vertical: straight down, the orbit's up direction would be undefined.
    this.camera.position.set(centre.x, centre.y - distance * 1e-4, box.max.z + distance);
    this.controls.update();
  }

  /** Turns the view about zone `id` (the middle of its shape, where it is now). */
  focus(id) {
    const entry = this.zones.get(id);
    if (!entry || !this.webgl) return;
    entry.shape.box.getCenter(this.controls.target).add(entry.offset);
    this.controls.update();
  }

  /** Turns the camera about the site without end (`on`), or stops it: a view that must be drawn
   * again every frame, for measuring. */
  orbit(on) {
    if (!this.webgl) return;
    this.controls.autoRotate = Boolean(on);
    this.controls.autoRotateSpeed = 4;
  }

  /** The device drawn nearest to pixel (`x`, `y`) of the view, within 10 pixels, or null. */
  deviceAt(x, y, w, h) {
    _matrix.multiplyMatrices(this.camera.projectionMatrix, this.camera.matrixWorldInverse);
    const m = _matrix.elements;
    const p = this.deviceLayer.positions;
    let best = -1;
    let bestDistance = 10;
    for (let i = 0; i < this.deviceLayer.count; i++) {
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
    return best < 0 ? null : this.deviceLayer.list[best];
  }

  /** Shows what is under the pointer: a device (MAC and zones) or a zone. */
  hover() {
    const { x, y } = this.hoverAt;
    const w = this.renderer.domElement.clientWidth;
    const h = this.renderer.domElement.clientHeight;
    const device = this.deviceAt(x, y, w, h);
    let text = null;
    let zoneEntry = null;
    if (device) {
      const inside = [];
      for (const [zoneId, macs] of this.occupants) {
        if (macs.has(device.mac)) inside.push(this.zones.get(zoneId)?.zone.Name || zoneId.slice(0, 8));
      }
      const at = device.position.toArray().map((c) => c.toFixed(2)).join(", ");
      text = `${device.mac}\n[${at}]\n${inside.length ? `in ${inside.join(", ")}` : "in no zone"}`;
    } else {
      _raycaster.setFromCamera(_pointer.set((x / w) * 2 - 1, 1 - (y / h) * 2), this.camera);
      zoneEntry = this.zoneLayer.pick(_raycaster.ray, this.zones.values());
      if (zoneEntry) {
        const { zone } = zoneEntry;
        const count = this.occupants.get(zone.ZoneID)?.size || 0;
        const state = [zone.Active ? "active" : "inactive", zone.IsGeometryLocked ? "locked" : null].filter(Boolean);
        text = `${zone.Name || "(no name)"} · ${zone.GeometryType}\nAlertLevel ${zone.AlertLevel} · ${state.join(", ")}\n${count} inside`;
      }
    }
    this.setHovered(zoneEntry);
    this.tooltip.hidden = !text;
    if (text) {
      this.tooltip.textContent = text;
      this.tooltip.style.left = `${x + 14}px`;
      this.tooltip.style.top = `${y + 14}px`;
    }
  }

  /** The zone pointed at gets a label even when it is not among the nearest. */
  setHovered(entry) {
    if (entry === this.hovered) return;
    this.hovered = entry;
    this.labelsDue = true;
  }

  /** Where device `mac` is drawn, in the page's CSS pixels, or null when it is not in view. */
  screenOf(mac) {
    const device = this.devices.get(mac);
    return device ? this.pixelOf(device.position.toArray()) : null;
  }

  /** Zone labels in view now (none while the camera moves). */
  labelsShown() {
    return this.coarse ? 0 : this.labelCount || 0;
  }

  /** Counters for tests, the status bar and measurements: `frames` and `fps` count animation
   * frames, `rendered` the frames drawn (only those where something changed), `frameMs` the
   * percentiles of the last 240 frame intervals, `renderer` what draws WebGL; `detail` is "coarse" while the camera moves and
   * "full" at rest, `drawn` the triangles, lines and points of the last frame drawn, and
   * `settledMs` how long after the camera's last move the full view was drawn again, the last
   * time it came to rest. */
  stats() {
    const sorted = Array.from(this.frameTimes.subarray(0, Math.min(this.frames - 1, FRAME_SAMPLES))).sort((a, b) => a - b);
    return {
      webgl: this.webgl,
      renderer: this.rendererName || null,
      zonesDrawn: this.zones.size,
      devices: this.devices.size,
      frames: this.frames,
      rendered: this.rendered,
      fps: this.fps,
      frameMs: { p50: quantile(sorted, 0.5), p95: quantile(sorted, 0.95), p99: quantile(sorted, 0.99), max: quantile(sorted, 1) },
      labels: this.labelsShown(),
      detail: this.coarse ? "coarse" : "full",
      drawn: { ...this.drawn },
      settledMs: this.settledMs,
      trails: this.coarse ? 0 : Math.min(this.devices.size, this.devices.size <= TRAILS ? Infinity : this.trailCount || 0),
      litZones: [...this.zones.values()].filter((e) => e.zone.Active && (this.occupants.get(e.zone.ZoneID)?.size || 0) > 0).length,
    };
  }

  // Hooks for drawing zones on the floor (draw.js): the floor under the pointer, where a site
  // point is on screen, a preview shape, and mouse navigation off while a tool holds the mouse.

  /** The point `[x, y, z]` of the plane at height `z` under the page's CSS pixel, or null. */
  floorPoint(clientX, clientY, z = 0) {
    if (!this.webgl) return null;
    const rect = this.renderer.domElement.getBoundingClientRect();
    const at = new THREE.Vector2(((clientX - rect.left) / rect.width) * 2 - 1, 1 - ((clientY - rect.top) / rect.height) * 2);
    const ray = new THREE.Raycaster();
    ray.setFromCamera(at, this.camera);
    const floor = new THREE.Plane(new THREE.Vector3(0, 0, 1), -z);
    const hit = ray.ray.intersectPlane(floor, new THREE.Vector3());
    return hit ? hit.toArray() : null;
  }

  /** Where the site point `[x, y, z]` is drawn, in the page's CSS pixels, or null out of view. */
  pixelOf([x, y, z]) {
    if (!this.webgl) return null;
    const p = new THREE.Vector3(x, y, z).project(this.camera);
    if (Math.abs(p.x) > 1 || Math.abs(p.y) > 1 || p.z > 1) return null;
    const rect = this.renderer.domElement.getBoundingClientRect();
    return { x: rect.left + ((p.x + 1) / 2) * rect.width, y: rect.top + ((1 - p.y) / 2) * rect.height };
  }

  /**
   * Draws a shape being drawn: `zone` ({GeometryType, GeometryData}, or null) in white, and
   * `outline` (points `[x, y, z]`) as a line through them. `setPreview(null)` clears it.
   */
  setPreview(zone, outline = []) {
    if (!this.webgl) return;
    if (this.preview) {
      this.scene.remove(this.preview);
      dispose(this.preview);
      this.preview = null;
      this.invalidate();
    }
    const group = new THREE.Group();
    const geometry = zone ? zoneGeometry(zone, this.zRange) : null;
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
    if (!group.children.length) return;
    group.renderOrder = 8;
    this.preview = group;
    this.scene.add(group);
    this.invalidate();
  }

  /** Turns orbit, pan and zoom with the mouse on or off (off while a drawing tool is active). */
  setNavigation(on) {
    if (this.webgl) this.controls.enabled = on;
  }
}

/** Where a zone's label stands: above the middle of its shape's top, where the zone is now. */
function labelAnchor(entry, target) {
  const box = entry.shape.box;
  return target.set((box.min.x + box.max.x) / 2, (box.min.y + box.max.y) / 2, box.max.z + 0.2).add(entry.offset);
}

const _colour = new THREE.Color();
const _glow = new THREE.Color();
const _white = new THREE.Color(0xffffff);
const _black = new THREE.Color(0x000000);
const _box = new THREE.Box3();
const _point = new THREE.Vector3();
const _matrix = new THREE.Matrix4();
const _frustum = new THREE.Frustum();
const _raycaster = new THREE.Raycaster();
const _pointer = new THREE.Vector2();
