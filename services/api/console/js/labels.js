// Zone labels in the 3D view: text drawn on canvas textures, shown by a pool of sprites that keep
// their size on screen. Only the zones in view nearest the camera get one (the zone pointed at
// always does, then the zones someone is inside), no two overlapping on screen: a label that
// would cover one shown before it waits until zooming in or turning gives it room. Their
// textures are drawn a few per frame, and the textures of labels not shown for a while are let
// go. The label's words and colour are the zone's look (zone-look.js); the
// floor's metre marks (floor.js) are labels too.

import * as THREE from "three";

/** Most zone labels shown at once: the zones nearest the camera get them (the one pointed at
 * always does). A site with fewer zones has every zone labelled. */
const LABELS = 32;
/** Label textures drawn at most per frame; the others wait for the next frames. */
const LABEL_DRAWS_PER_FRAME = 6;
/** Label choices a label may go unshown before its texture is let go. */
const LABEL_IDLE_PASSES = 40;
/** How often labels are chosen again while the camera moves. */
export const LABEL_EVERY_MS = 150;

/** A text label's texture: the lines on a dark plate, and its size in CSS pixels. */
export function labelTexture(lines, colour) {
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
export function labelSprite(label) {
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

/** Where a zone's label stands: above the middle of its shape's top, where the zone is now. */
function labelAnchor(entry, target) {
  const box = entry.shape.box;
  return target.set((box.min.x + box.max.x) / 2, (box.min.y + box.max.y) / 2, box.max.z + 0.2).add(entry.offset);
}

/**
 * The zone labels of `view` (a SiteView: its camera, its zones, the zone pointed at): `layer`
 * holds their sprites. A zone entry keeps its label's texture (`label`), the sprite showing it
 * now (`sprite`) and how many choices it went unshown (`labelIdle`); its look gives the label's
 * words (`labelLines`, `labelColour`, `labelKey`).
 */
export class Labels {
  constructor(view) {
    this.view = view;
    this.layer = new THREE.Group();
    this.sprites = [];
    this.count = 0;
    this.rects = []; // the screen rectangles of the labels shown, for tests
  }

  /**
   * Gives the label sprites to the zones in view nearest the camera (the zone pointed at
   * first), drawing the textures that are missing or out of date, a few per frame. Answers
   * whether some are still to be drawn.
   */
  update() {
    const { camera, zones } = this.view;
    const hovered = this.view.hover.entry;
    camera.updateMatrixWorld();
    _frustum.setFromProjectionMatrix(_matrix.multiplyMatrices(camera.projectionMatrix, camera.matrixWorldInverse));
    const chosen = [];
    for (const entry of zones.values()) {
      entry.sprite = null;
      if (!entry.shown) continue;
      labelAnchor(entry, _point);
      if (zones.size > LABELS && !_frustum.containsPoint(_point)) continue;
      // The zone pointed at first, then those someone is inside, each by distance.
      const distance = _point.distanceToSquared(camera.position);
      entry.labelRank = entry === hovered ? -Infinity : entry.occupied ? distance - 1e12 : distance;
      chosen.push(entry);
    }
    chosen.sort((a, b) => a.labelRank - b.labelRank);
    let draws = LABEL_DRAWS_PER_FRAME;
    let pending = false;
    let shown = 0;
    const placed = [];
    for (const entry of chosen) {
      if (shown === LABELS) break;
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
      const rect = this.screenRect(entry);
      if (entry !== hovered && (!rect || placed.some((r) => overlaps(r, rect)))) continue;
      if (rect) placed.push(rect);
      if (!this.sprites[shown]) {
        this.sprites[shown] = labelSprite(null);
        this.layer.add(this.sprites[shown]);
      }
      entry.sprite = this.sprites[shown];
      showLabel(entry.sprite, entry.label);
      this.place(entry);
      entry.sprite.visible = true;
      shown += 1;
    }
    for (let i = shown; i < this.sprites.length; i++) this.sprites[i].visible = false;
    this.count = shown;
    this.rects = placed;
    this.forgetIdle();
    this.view.stale = true;
    return pending;
  }

  /** Lets go of the textures of labels not shown for a while. */
  forgetIdle() {
    for (const entry of this.view.zones.values()) {
      if (!entry.label || entry.sprite) continue;
      entry.labelIdle = (entry.labelIdle || 0) + 1;
      if (entry.labelIdle > LABEL_IDLE_PASSES) {
        entry.label.texture.dispose();
        entry.label = null;
      }
    }
  }

  /** Where the label of `entry` falls on screen, in CSS pixels (`left`, `top`, `right`,
   * `bottom`): its plate stands on its anchor, centred. Null when the anchor is behind the
   * camera. */
  screenRect(entry) {
    const { camera, container } = this.view;
    labelAnchor(entry, _point).project(camera);
    if (_point.z > 1) return null;
    const x = ((_point.x + 1) / 2) * container.clientWidth;
    const y = ((1 - _point.y) / 2) * container.clientHeight;
    const { width, height } = entry.label;
    return { left: x - width / 2, top: y - height, right: x + width / 2, bottom: y };
  }

  /** Moves the label of `entry` (which has a sprite) to where the zone is now. */
  place(entry) {
    labelAnchor(entry, entry.sprite.position);
    this.view.stale = true;
  }
}

/** Whether two screen rectangles share some area. */
function overlaps(a, b) {
  return a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
}

const _point = new THREE.Vector3();
const _matrix = new THREE.Matrix4();
const _frustum = new THREE.Frustum();
