// The 3D view of the site: zones as translucent shapes coloured by their alarm kind, devices as
// points with a short trail, a floor grid in metres, orbit/pan/zoom, a top view and fit-to-site.
// It draws what it is told (setZones, setOccupants, moveDevice); it fetches nothing. This file
// owns the view's state and its frame loop (when to draw, the coarse view while the camera
// moves) and places and styles the zones; each other concern is a part it holds, in its own
// file: zone-look.js (a zone's colours and label words), shape-cache.js, labels.js,
// device-labels.js (devices' names), floor.js,
// navigation.js (the camera), picking.js (hover; pixels to site points and back), trails.js,
// preview.js (a shape being drawn), frame-stats.js, webgl.js.
//
// Built for large sites: all zones are one mesh and one set of edges (zone-layer.js), all
// devices one point buffer and all trails one segment buffer (device-layer.js); a frame is drawn
// only when something changed, labels are kept for the zones nearest the camera, and hover is
// worked out when the pointer moves, not every frame. While the camera moves, a coarse view is
// drawn (fewer facets around round zones, no edges, labels, trails or metre marks): in software
// WebGL a frame costs per triangle, line and point, and turning the full view reaches a third of
// the frame rate. The exact view is drawn again as soon as the camera rests (REST_MS).

import * as THREE from "three";
import { isFlat } from "./shapes.js";
import { ZoneLayer } from "./zone-layer.js";
import { DeviceLayer } from "./device-layer.js";
import { ShapeCache, shapeKey } from "./shape-cache.js";
import { Trails } from "./trails.js";
import { onGraphicsCard, rendererName } from "./webgl.js";
import { styleZone } from "./zone-look.js";
import { LABEL_EVERY_MS, Labels } from "./labels.js";
import { DEVICE_LABEL_EVERY_MS, DeviceLabels } from "./device-labels.js";
import { Floor } from "./floor.js";
import { Navigation, siteBox } from "./navigation.js";
import { Hover, floorPoint, pixelOf } from "./picking.js";
import { Preview } from "./preview.js";
import { FrameStats } from "./frame-stats.js";

/** How often trails are chosen again while the camera moves. */
const TRAIL_EVERY_MS = 500;
/** Shortest time between two frames drawn for data alone (devices, zone looks, labels): the
 * position stream's default rate. */
const DATA_EVERY_MS = 200;
/** The full view is drawn again once the camera has not moved for this long. */
const REST_MS = 100;
/** The share of the view's resolution (across) drawn while the camera moves, in software WebGL:
 * there a frame costs per pixel of the translucent zones as much as per triangle. */
const MOVING_RESOLUTION = 0.5;

export class SiteView {
  constructor(container, tooltip) {
    this.container = container;
    this.zones = new Map(); // ZoneID → {zone, shape, range, offset, shown, look, kind, label…}
    this.devices = new Map(); // MAC → {mac, index, position, head}
    this.occupants = new Map(); // ZoneID → Set(MAC)
    this.mobile = new Map(); // source MAC → [zone entries that follow it]
    this.deviceName = () => null; // MAC → its name in the registry, or null
    this.selectedDevice = null; // the MAC inspected: it keeps its label
    this.shapes = new ShapeCache();
    this.thresholds = { site: 8, device: 4 };
    this.frameStats = new FrameStats();
    this.rendered = 0;
    this.zRange = [0, 3];
    this.hover = new Hover(this, tooltip);
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
    this.navigation = new Navigation(this.camera, this.renderer.domElement, () => {
      this.invalidate();
      this.labelsDue = true;
      this.trailsDue = true;
      this.deviceLabelsDue = true;
    });

    this.floor = new Floor(this.scene);
    this.labels = new Labels(this);
    this.zoneLayer = new ZoneLayer(this.scene);
    this.deviceLayer = new DeviceLayer(this.scene);
    this.trails = new Trails(this.deviceLayer);
    this.deviceLabels = new DeviceLabels(this);
    this.scene.add(this.labels.layer, this.deviceLabels.layer);
    this.preview = new Preview(this.scene);
    this.buildFloor(new THREE.Box3(new THREE.Vector3(-10, -10, 0), new THREE.Vector3(10, 10, 3)));

    new ResizeObserver(() => this.resize()).observe(this.container);
    this.resize();
    this.hover.listen(this.renderer.domElement);
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
    this.frameStats.count(now);
    this.navigation.update();
    // Moving in two frames running: a jump (Fit site, Top view) is drawn in full at once.
    const moved = this.navigation.moved();
    if (moved && this.movedBefore) this.lastMove = now;
    this.movedBefore = moved;
    const coarse = now - this.lastMove < REST_MS;
    if (coarse !== this.coarse) this.setCoarse(coarse, now);
    this.hover.frame(now);
    if (this.trailsDue && !this.coarse && !(now - this.lastTrails < TRAIL_EVERY_MS)) {
      this.lastTrails = now;
      this.trailsDue = false;
      this.chooseTrails();
    }
    if (!this.coarse && (this.labelsPending || (this.labelsDue && !(now - this.lastLabels < LABEL_EVERY_MS)))) {
      this.lastLabels = now;
      this.labelsDue = false;
      this.labelsPending = this.labels.update();
    }
    if (!this.coarse && (this.deviceLabelsPending || (this.deviceLabelsDue && !(now - this.lastDeviceLabels < DEVICE_LABEL_EVERY_MS)))) {
      this.lastDeviceLabels = now;
      this.deviceLabelsDue = false;
      this.deviceLabelsPending = this.deviceLabels.update();
    }
    const data = this.stale || this.deviceLayer.dirty || this.zoneLayer.changed();
    if (!this.invalid && !(data && !(now - this.lastRender < DATA_EVERY_MS))) return;
    this.invalid = false;
    this.stale = false;
    this.lastRender = now;
    if (this.deviceLayer.commit()) this.deviceLabels.follow();
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

  /**
   * Draws the coarse view (`coarse`: the camera moves) or the full one, from the next frame on.
   * Labels and trails are chosen again for the full view at once, from where the camera rests.
   */
  setCoarse(coarse, now) {
    this.coarse = coarse;
    this.zoneLayer.setCoarse(coarse);
    this.deviceLayer.setMoving(coarse);
    this.labels.layer.visible = !coarse;
    this.deviceLabels.layer.visible = !coarse;
    this.floor.detail.visible = !coarse;
    const resolution = coarse && !this.onGraphicsCard ? MOVING_RESOLUTION : 1;
    this.renderer.setPixelRatio(window.devicePixelRatio * resolution);
    if (!coarse) {
      this.restAt = this.lastMove;
      this.labelsDue = true;
      this.trailsDue = true;
      this.deviceLabelsDue = true;
      this.lastLabels = -Infinity;
      this.lastTrails = -Infinity;
      this.lastDeviceLabels = -Infinity;
    }
    this.invalidate();
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

  /** The floor grid under `box`, at the site's lowest height (floor.js). */
  buildFloor(box) {
    if (this.floor.build(box, this.zRange[0])) this.invalidate();
  }

  /** Alarm thresholds from the zone settings (SiteAlarmMinLevel, DeviceAlarmMinLevel). */
  setThresholds(thresholds) {
    this.thresholds = thresholds;
    for (const entry of this.zones.values()) this.style(entry);
  }

  /** Draws exactly `zones` (the whole list, as GET /v3/modules/zones answers it). */
  setZones(zones) {
    if (!this.webgl) return;
    this.zRange = this.shapes.siteHeight(zones, this.zRange, this.deviceLayer);
    const entries = [];
    let rebuild = false;
    for (const zone of zones) {
      const key = shapeKey(zone, this.zRange);
      const shape = this.shapes.get(zone, this.zRange);
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
    this.shapes.keepOnly(new Set(entries.map((e) => e.shapeKey)));
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
    if (entry.sprite) this.labels.place(entry);
  }

  /** Colours a zone by its alarm kind and state, and words its label (zone-look.js). */
  style(entry) {
    const occupants = this.occupants.get(entry.zone.ZoneID)?.size || 0;
    const relabelled = styleZone(entry, occupants, this.thresholds, this.zoneLayer);
    if (relabelled && entry.sprite) this.labelsDue = true;
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

  /** Moves (or adds) a device; its trail keeps the last few positions. */
  moveDevice(mac, [x, y, z]) {
    if (!this.webgl) return;
    const device = this.devices.get(mac);
    if (device) this.deviceLayer.move(device, x, y, z);
    else {
      this.devices.set(mac, this.deviceLayer.add(mac, x, y, z));
      this.trailsDue = true;
    }
    this.deviceLabelsDue = true;
    const following = this.mobile.get(mac);
    if (following) for (const entry of following) this.place(entry);
  }

  /** Chooses the device trails drawn, from where the camera is (trails.js). */
  chooseTrails() {
    if (this.trails.choose(this.camera)) this.stale = true;
  }

  /** The box holding the zones and devices, or a default site. */
  siteBox() {
    return siteBox(this.zones.values(), this.zRange[0], this.deviceLayer);
  }

  /** Frames the whole site from an oblique angle. */
  fit() {
    if (!this.webgl) return;
    const box = this.siteBox();
    this.buildFloor(box);
    this.navigation.fit(box);
  }

  /** Looks straight down on the site, north (+y) up. */
  topView() {
    if (!this.webgl) return;
    const box = this.siteBox();
    this.buildFloor(box);
    this.navigation.topView(box);
  }

  /** Turns the view about zone `id` (the middle of its shape, where it is now). */
  focus(id) {
    const entry = this.zones.get(id);
    if (!entry || !this.webgl) return;
    this.navigation.focus(entry.shape.box, entry.offset);
  }

  /** Turns the camera about the site without end (`on`), or stops it: a view that must be drawn
   * again every frame, for measuring. */
  orbit(on) {
    if (!this.webgl) return;
    this.navigation.orbit(on);
  }

  /** Names devices by `nameOf(mac)` (their name in the registry, or null) from now on. */
  setDeviceNames(nameOf) {
    this.deviceName = nameOf;
    this.namesChanged();
  }

  /** Some devices' names changed: their labels are drawn again at the next frame. */
  namesChanged() {
    this.deviceLabelsDue = true;
    this.lastDeviceLabels = -Infinity;
  }

  /** Selects device `mac` (or none): it keeps its label wherever it is. */
  selectDevice(mac) {
    this.selectedDevice = mac;
    this.namesChanged();
  }

  /** Turns the view about device `mac`, where it is now; answers whether it is known. */
  focusDevice(mac) {
    const device = this.devices.get(mac);
    if (!device || !this.webgl) return false;
    this.navigation.focusOn(device.position);
    return true;
  }

  /** The text of the label device `mac` shows now, or null (none while the camera moves). */
  deviceLabel(mac) {
    return this.coarse || !this.deviceLabels ? null : this.deviceLabels.textOf(mac);
  }

  /** Where device `mac` is drawn, in the page's CSS pixels, or null when it is not in view. */
  screenOf(mac) {
    const device = this.devices.get(mac);
    return device ? this.pixelOf(device.position.toArray()) : null;
  }

  /** Zone labels in view now (none while the camera moves). */
  labelsShown() {
    return this.coarse || !this.labels ? 0 : this.labels.count;
  }

  /** Counters for tests, the status bar and measurements: `frames` and `fps` count animation
   * frames, `rendered` the frames drawn (only those where something changed), `frameMs` the
   * percentiles of the last 240 frame intervals, `renderer` what draws WebGL; `labels` and
   * `deviceLabels` the zone and device labels shown; `detail` is "coarse" while the camera moves and
   * "full" at rest, `drawn` the triangles, lines and points of the last frame drawn, and
   * `settledMs` how long after the camera's last move the full view was drawn again, the last
   * time it came to rest, `labelRects` where the zone labels shown are on screen. */
  stats() {
    return {
      webgl: this.webgl,
      renderer: this.rendererName || null,
      zonesDrawn: this.zones.size,
      devices: this.devices.size,
      frames: this.frameStats.frames,
      rendered: this.rendered,
      fps: this.frameStats.fps,
      frameMs: this.frameStats.percentiles(),
      labels: this.labelsShown(),
      labelRects: this.coarse || !this.labels ? [] : this.labels.rects,
      deviceLabels: this.coarse || !this.deviceLabels ? 0 : this.deviceLabels.count,
      detail: this.coarse ? "coarse" : "full",
      drawn: { ...this.drawn },
      settledMs: this.settledMs,
      trails: this.coarse || !this.trails ? 0 : this.trails.shown(this.devices.size),
      litZones: [...this.zones.values()].filter((e) => e.zone.Active && (this.occupants.get(e.zone.ZoneID)?.size || 0) > 0).length,
    };
  }

  // Hooks for drawing zones on the floor (draw.js): the floor under the pointer, where a site
  // point is on screen, a preview shape, and mouse navigation off while a tool holds the mouse.

  /** The point `[x, y, z]` of the plane at height `z` under the page's CSS pixel, or null. */
  floorPoint(clientX, clientY, z = 0) {
    if (!this.webgl) return null;
    return floorPoint(this.camera, this.renderer.domElement, clientX, clientY, z);
  }

  /** Where the site point `[x, y, z]` is drawn, in the page's CSS pixels, or null out of view. */
  pixelOf(point) {
    if (!this.webgl) return null;
    return pixelOf(this.camera, this.renderer.domElement, point);
  }

  /**
   * Draws a shape being drawn: `zone` ({GeometryType, GeometryData}, or null) in white, and
   * `outline` (points `[x, y, z]`) as a line through them. `setPreview(null)` clears it.
   */
  setPreview(zone, outline = []) {
    if (!this.webgl) return;
    if (this.preview.set(zone, outline, this.zRange)) this.invalidate();
  }

  /** Turns orbit, pan and zoom with the mouse on or off (off while a drawing tool is active). */
  setNavigation(on) {
    if (this.webgl) this.navigation.setEnabled(on);
  }
}
