// The 3D view of the site: zones as translucent shapes coloured by their alarm kind, devices as
// points with a short trail, a floor grid in metres, orbit/pan/zoom, a top view and fit-to-site.
// It draws what it is told (setZones, setOccupants, moveDevice); it fetches nothing.

import * as THREE from "three";
import { OrbitControls } from "/console/vendor/three/examples/jsm/controls/OrbitControls.js";
import { zoneGeometry, zoneCentre, isFlat } from "./shapes.js";

const COLOURS = {
  site: 0xe5484d,
  device: 0xf5a524,
  log: 0x3e9bff,
  inactive: 0x7a7f87,
};
const TRAIL = 24;
const DEVICE_COLOUR = 0x35d07f;

/** The alarm kind an entry into a zone of `level` raises, under the site's thresholds. */
export function alarmKind(level, thresholds) {
  if (level >= thresholds.site) return "site";
  if (level >= thresholds.device) return "device";
  return "log";
}

/** A text label as a sprite that keeps its size on screen. */
function label(lines, colour) {
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
  const material = new THREE.SpriteMaterial({ map: texture, depthTest: false, transparent: true, sizeAttenuation: false });
  const sprite = new THREE.Sprite(material);
  sprite.center.set(0.5, 0);
  // Without size attenuation a sprite's scale is about its share of the view's height.
  sprite.scale.set((canvas.width / scale) * 0.0012, (canvas.height / scale) * 0.0012, 1);
  sprite.renderOrder = 10;
  return sprite;
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

/** What decides a zone's drawn shape. */
function shapeKey(zone) {
  return JSON.stringify([zone.GeometryType, zone.GeometryData, zone.MobileOriginSource || null]);
}

export class SiteView {
  constructor(container, tooltip) {
    this.container = container;
    this.tooltip = tooltip;
    this.zones = new Map(); // ZoneID → {zone, group, mesh, kind}
    this.devices = new Map(); // MAC → {position: Vector3, trail: [Vector3], line, index}
    this.occupants = new Map(); // ZoneID → Set(MAC)
    this.thresholds = { site: 8, device: 4 };
    this.frames = 0;
    this.fps = 0;
    this.zRange = [0, 3];
    this.hoverAt = null;
    this.webgl = this.start();
  }

  start() {
    try {
      this.renderer = new THREE.WebGLRenderer({ antialias: true, preserveDrawingBuffer: true });
    } catch (e) {
      this.container.textContent = `The 3D view needs WebGL, which this browser does not offer (${e.message}).`;
      this.container.classList.add("no-webgl");
      return false;
    }
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

    this.scene.add(new THREE.AmbientLight(0xffffff, 1.6));
    const sun = new THREE.DirectionalLight(0xffffff, 1.4);
    sun.position.set(-3, -5, 10);
    this.scene.add(sun);

    this.zoneLayer = new THREE.Group();
    this.deviceLayer = new THREE.Group();
    this.floor = new THREE.Group();
    this.scene.add(this.floor, this.zoneLayer, this.deviceLayer);
    this.buildFloor(new THREE.Box3(new THREE.Vector3(-10, -10, 0), new THREE.Vector3(10, 10, 3)));

    this.capacity = 0;
    this.points = new THREE.Points(
      new THREE.BufferGeometry(),
      new THREE.PointsMaterial({ color: DEVICE_COLOUR, size: 9, sizeAttenuation: false }),
    );
    this.points.renderOrder = 5;
    this.deviceLayer.add(this.points);
    this.ensureCapacity(64);

    new ResizeObserver(() => this.resize()).observe(this.container);
    this.resize();
    this.renderer.domElement.addEventListener("pointermove", (e) => {
      const rect = this.renderer.domElement.getBoundingClientRect();
      this.hoverAt = { x: e.clientX - rect.left, y: e.clientY - rect.top };
    });
    this.renderer.domElement.addEventListener("pointerleave", () => {
      this.hoverAt = null;
      this.tooltip.hidden = true;
    });

    let last = performance.now();
    let counted = 0;
    const frame = (now) => {
      this.controls.update();
      this.renderer.render(this.scene, this.camera);
      this.frames += 1;
      counted += 1;
      if (now - last >= 1000) {
        this.fps = Math.round((counted * 1000) / (now - last));
        counted = 0;
        last = now;
      }
      this.hover();
      requestAnimationFrame(frame);
    };
    requestAnimationFrame(frame);
    return true;
  }

  resize() {
    const { clientWidth: w, clientHeight: h } = this.container;
    if (!w || !h) return;
    this.renderer.setSize(w, h, false);
    this.camera.aspect = w / h;
    this.camera.updateProjectionMatrix();
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
    this.floor.children.slice().forEach((c) => {
      this.floor.remove(c);
      dispose(c);
    });
    const fine = [];
    const coarse = [];
    for (let x = minX; x <= maxX; x++) (x % step === 0 ? coarse : fine).push(x, minY, z, x, maxY, z);
    for (let y = minY; y <= maxY; y++) (y % step === 0 ? coarse : fine).push(minX, y, z, maxX, y, z);
    const lines = (points, colour) => {
      const g = new THREE.BufferGeometry();
      g.setAttribute("position", new THREE.Float32BufferAttribute(points, 3));
      return new THREE.LineSegments(g, new THREE.LineBasicMaterial({ color: colour, transparent: true, opacity: 0.9 }));
    };
    this.floor.add(lines(fine, 0x222a33), lines(coarse, 0x3a4654));
    const axes = new THREE.AxesHelper(2);
    axes.position.z = z + 0.001;
    this.floor.add(axes);
    const every = maxX - minX > 120 ? 20 : maxX - minX > 60 ? 10 : step;
    for (let x = minX; x <= maxX; x += every) {
      const mark = label([`${x} m`], "#8a97a6");
      mark.position.set(x, minY - 0.5, z);
      mark.scale.multiplyScalar(0.8);
      this.floor.add(mark);
    }
    for (let y = minY + every; y <= maxY; y += every) {
      const mark = label([`${y} m`], "#8a97a6");
      mark.position.set(minX - 1.2, y, z);
      mark.scale.multiplyScalar(0.8);
      this.floor.add(mark);
    }
    this.floorBox = new THREE.Box3(new THREE.Vector3(minX, minY, z), new THREE.Vector3(maxX, maxY, z));
  }

  /** Alarm thresholds from the zone settings (SiteAlarmMinLevel, DeviceAlarmMinLevel). */
  setThresholds(thresholds) {
    this.thresholds = thresholds;
    for (const entry of this.zones.values()) this.style(entry);
  }

  /** Draws exactly `zones` (the whole list, as GET /v3/modules/zones answers it). */
  setZones(zones) {
    if (!this.webgl) return;
    // The site's height, for the 2D shapes: from the 3D zones and the devices seen, at least 3 m.
    const box = new THREE.Box3(new THREE.Vector3(0, 0, 0), new THREE.Vector3(0, 0, 3));
    const solid = [];
    for (const zone of zones) {
      if (isFlat(zone)) continue;
      const g = zoneGeometry(zone, this.zRange);
      if (!g) continue;
      g.computeBoundingBox();
      box.union(g.boundingBox);
      solid.push(g);
    }
    solid.forEach((g) => g.dispose());
    for (const d of this.devices.values()) box.expandByPoint(d.position);
    const zRange = [Math.min(0, box.min.z), Math.max(3, box.max.z)];
    const heightChanged = zRange[0] !== this.zRange[0] || zRange[1] !== this.zRange[1];
    this.zRange = zRange;

    const wanted = new Map(zones.map((z) => [z.ZoneID, z]));
    for (const [id, entry] of this.zones) {
      if (!wanted.has(id)) {
        this.zoneLayer.remove(entry.group);
        dispose(entry.group);
        this.zones.delete(id);
      }
    }
    for (const zone of zones) {
      const entry = this.zones.get(zone.ZoneID);
      // Only a new shape is built again; names, states and occupants are restyled in place.
      const same = entry && entry.shapeKey === shapeKey(zone) && !(heightChanged && isFlat(zone));
      if (same) {
        entry.zone = zone;
        this.style(entry);
        continue;
      }
      if (entry) {
        this.zoneLayer.remove(entry.group);
        dispose(entry.group);
      }
      this.addZone(zone);
    }
    this.buildFloor(this.siteBox());
  }

  addZone(zone) {
    const geometry = zoneGeometry(zone, this.zRange);
    if (!geometry) return;
    const group = new THREE.Group();
    const material = new THREE.MeshLambertMaterial({
      transparent: true,
      depthWrite: false,
      side: THREE.DoubleSide,
    });
    const mesh = new THREE.Mesh(geometry, material);
    mesh.userData.zoneId = zone.ZoneID;
    const edges = new THREE.LineSegments(
      new THREE.EdgesGeometry(geometry, 20),
      new THREE.LineBasicMaterial({ transparent: true }),
    );
    group.add(mesh, edges);
    geometry.computeBoundingBox();
    const entry = {
      zone,
      group,
      mesh,
      edges,
      shapeKey: shapeKey(zone),
      box: geometry.boundingBox.clone(),
      centre: zoneCentre(zone),
    };
    this.zones.set(zone.ZoneID, entry);
    this.zoneLayer.add(group);
    this.place(entry);
    this.style(entry);
  }

  /** Moves a mobile zone so that its centre sits on its source device, if that is known. */
  place(entry) {
    const source = entry.zone.MobileOriginSource;
    if (!source) return;
    const device = this.devices.get(source);
    entry.group.visible = Boolean(device);
    if (!device) return;
    const offset = device.position.clone().sub(entry.centre);
    if (isFlat(entry.zone)) offset.z = 0;
    entry.group.position.copy(offset);
  }

  style(entry) {
    const { zone } = entry;
    const occupants = this.occupants.get(zone.ZoneID)?.size || 0;
    const kind = zone.Active ? alarmKind(zone.AlertLevel, this.thresholds) : "inactive";
    entry.kind = kind;
    const colour = COLOURS[kind];
    const lit = occupants > 0 && zone.Active;
    entry.mesh.material.color.setHex(colour);
    entry.mesh.material.opacity = lit ? 0.5 : zone.Active ? 0.2 : 0.1;
    entry.mesh.material.emissive.setHex(lit ? colour : 0x000000);
    entry.mesh.material.emissiveIntensity = lit ? 0.45 : 0;
    entry.edges.material.color.setHex(zone.IsGeometryLocked ? 0xffffff : colour);
    entry.edges.material.opacity = lit ? 1 : zone.Active ? 0.75 : 0.4;
    const title = `${zone.Name || zone.ZoneID.slice(0, 8)}${zone.IsGeometryLocked ? " [locked]" : ""}`;
    const lines = occupants > 0 ? [title, `● ${occupants} inside`] : [title];
    const text = lit ? "#ffffff" : kind === "inactive" ? "#9aa3ad" : `#${new THREE.Color(colour).getHexString()}`;
    // A label is a texture: drawn again only when its text or colour changes.
    const labelKey = JSON.stringify([lines, text]);
    if (entry.labelKey === labelKey) return;
    entry.labelKey = labelKey;
    if (entry.label) {
      entry.group.remove(entry.label);
      dispose(entry.label);
    }
    entry.label = label(lines, text);
    const top = entry.box;
    entry.label.position.set((top.min.x + top.max.x) / 2, (top.min.y + top.max.y) / 2, top.max.z + 0.2);
    entry.group.add(entry.label);
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

  ensureCapacity(n) {
    if (n <= this.capacity) return;
    this.capacity = Math.max(n, this.capacity * 2);
    const positions = new Float32Array(this.capacity * 3);
    const old = this.points.geometry.getAttribute("position");
    if (old) positions.set(old.array);
    const geometry = new THREE.BufferGeometry();
    const attribute = new THREE.BufferAttribute(positions, 3);
    attribute.setUsage(THREE.DynamicDrawUsage);
    geometry.setAttribute("position", attribute);
    geometry.setDrawRange(0, this.devices.size);
    this.points.geometry.dispose();
    this.points.geometry = geometry;
  }

  /** Moves (or adds) a device; its trail keeps the last few positions. */
  moveDevice(mac, [x, y, z]) {
    if (!this.webgl) return;
    let device = this.devices.get(mac);
    if (!device) {
      this.ensureCapacity(this.devices.size + 1);
      const line = new THREE.Line(
        new THREE.BufferGeometry().setAttribute("position", new THREE.BufferAttribute(new Float32Array(TRAIL * 3), 3)),
        new THREE.LineBasicMaterial({ color: DEVICE_COLOUR, transparent: true, opacity: 0.45 }),
      );
      line.frustumCulled = false;
      this.deviceLayer.add(line);
      device = { mac, position: new THREE.Vector3(), trail: [], line, index: this.devices.size };
      this.devices.set(mac, device);
      this.points.geometry.setDrawRange(0, this.devices.size);
    }
    device.position.set(x, y, z);
    device.trail.push(device.position.clone());
    if (device.trail.length > TRAIL) device.trail.shift();
    const trail = device.line.geometry.getAttribute("position");
    device.trail.forEach((p, i) => trail.setXYZ(i, p.x, p.y, p.z));
    trail.needsUpdate = true;
    device.line.geometry.setDrawRange(0, device.trail.length);
    const points = this.points.geometry.getAttribute("position");
    points.setXYZ(device.index, x, y, z);
    points.needsUpdate = true;
    this.points.geometry.computeBoundingSphere();
    for (const entry of this.zones.values()) {
      if (entry.zone.MobileOriginSource === mac) this.place(entry);
    }
  }

  /** The box holding the zones and devices, or a default site. */
  siteBox() {
    const box = new THREE.Box3();
    for (const entry of this.zones.values()) {
      if (!isFlat(entry.zone)) box.union(entry.box.clone().translate(entry.group.position));
      else {
        const b = entry.box.clone().translate(entry.group.position);
        box.expandByPoint(new THREE.Vector3(b.min.x, b.min.y, this.zRange[0]));
        box.expandByPoint(new THREE.Vector3(b.max.x, b.max.y, this.zRange[0]));
      }
    }
    for (const d of this.devices.values()) box.expandByPoint(d.position);
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

  /** Shows what is under the pointer: a device (MAC and zones) or a zone. */
  hover() {
    if (!this.hoverAt) return;
    const { x, y } = this.hoverAt;
    const w = this.renderer.domElement.clientWidth;
    const h = this.renderer.domElement.clientHeight;
    let best = null;
    let bestDistance = 10;
    const p = new THREE.Vector3();
    for (const d of this.devices.values()) {
      p.copy(d.position).project(this.camera);
      if (p.z > 1) continue;
      const dx = ((p.x + 1) / 2) * w - x;
      const dy = ((1 - p.y) / 2) * h - y;
      const distance = Math.hypot(dx, dy);
      if (distance < bestDistance) {
        best = d;
        bestDistance = distance;
      }
    }
    let text = null;
    if (best) {
      const inside = [];
      for (const [zoneId, macs] of this.occupants) {
        if (macs.has(best.mac)) inside.push(this.zones.get(zoneId)?.zone.Name || zoneId.slice(0, 8));
      }
      const at = best.position.toArray().map((c) => c.toFixed(2)).join(", ");
      text = `${best.mac}\n[${at}]\n${inside.length ? `in ${inside.join(", ")}` : "in no zone"}`;
    } else {
      const ray = new THREE.Raycaster();
      ray.setFromCamera(new THREE.Vector2((x / w) * 2 - 1, 1 - (y / h) * 2), this.camera);
      const hit = ray.intersectObjects([...this.zones.values()].map((e) => e.mesh), false)[0];
      if (hit) {
        const { zone } = this.zones.get(hit.object.userData.zoneId);
        const count = this.occupants.get(zone.ZoneID)?.size || 0;
        const state = [zone.Active ? "active" : "inactive", zone.IsGeometryLocked ? "locked" : null].filter(Boolean);
        text = `${zone.Name || "(no name)"} · ${zone.GeometryType}\nAlertLevel ${zone.AlertLevel} · ${state.join(", ")}\n${count} inside`;
      }
    }
    this.tooltip.hidden = !text;
    if (text) {
      this.tooltip.textContent = text;
      this.tooltip.style.left = `${x + 14}px`;
      this.tooltip.style.top = `${y + 14}px`;
    }
  }

  /** Where device `mac` is drawn, in the page's CSS pixels, or null when it is not in view. */
  screenOf(mac) {
    const device = this.devices.get(mac);
    if (!device || !this.webgl) return null;
    const p = device.position.clone().project(this.camera);
    if (Math.abs(p.x) > 1 || Math.abs(p.y) > 1 || p.z > 1) return null;
    const rect = this.renderer.domElement.getBoundingClientRect();
    return { x: rect.left + ((p.x + 1) / 2) * rect.width, y: rect.top + ((1 - p.y) / 2) * rect.height };
  }

  /** Counters for tests and the status bar. */
  stats() {
    return {
      webgl: this.webgl,
      zonesDrawn: this.zones.size,
      devices: this.devices.size,
      frames: this.frames,
      fps: this.fps,
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
  }

  /** Turns orbit, pan and zoom with the mouse on or off (off while a drawing tool is active). */
  setNavigation(on) {
    if (this.webgl) this.controls.enabled = on;
  }
}
