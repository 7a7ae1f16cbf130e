// Every zone in one mesh and one set of edges, so that a site of thousands of zones is two draw
// calls: the shapes of all zones are merged into shared buffers, and each zone owns a range of
// their vertices. A zone's look is its vertices' colours (lit once, on the CPU: the light does
// not move, so the shading of a vertex never changes), its place their positions (a mobile zone
// is moved by writing its range again). Restyling or moving a zone rewrites its range only and
// sends just those ranges to the GPU; the buffers are built again only when the set of shapes
// changes. Colours are written when a mesh is sent, so a zone restyled many times between two
// frames is coloured once. A second, coarse mesh of the same zones (fewer facets around round shapes, no edges)
// is what is drawn while the camera moves.

import * as THREE from "three";
import { COARSE_SEGMENTS, isRound, zoneCentre, zoneGeometry } from "./shapes.js";

/** The scene's light: ambient 1.6 and a directional light of 1.4 from here, as three.js's
 * Lambert shading would apply them, the same from both sides. */
const LIGHT = new THREE.Vector3(-3, -5, 10).normalize();
const AMBIENT = 1.6;
const DIRECT = 1.4;
/** Faces meeting at more than this many degrees have an edge drawn between them: the corners of
 * boxes and prisms, not the facets of round shapes (16 around: 22.5° apart). */
const EDGE_ANGLE = 25;
/** Past this many zones changed in one frame, whole buffers are sent instead of their ranges. */
const RANGES_PER_UPLOAD = 256;

/**
 * The buffers of one zone's shape, ready to be merged: positions, the Lambert shading of each
 * vertex, triangle indices, edge segments (where faces meet at more than EDGE_ANGLE degrees), its
 * box and its centre as the evaluator places mobile zones, and `coarse`: the surface with fewer
 * facets around round shapes (the same surface for the others), drawn while the camera moves.
 * Null when the shape cannot be drawn.
 */
export function shapeOf(zone, zRange) {
  const geometry = zoneGeometry(zone, zRange);
  if (!geometry) return null;
  const surface = surfaceOf(geometry);
  geometry.computeBoundingBox();
  const edges = new THREE.EdgesGeometry(geometry, EDGE_ANGLE);
  const shape = {
    ...surface,
    edges: Float32Array.from(edges.getAttribute("position").array),
    box: geometry.boundingBox.clone(),
    centre: zoneCentre(zone),
    coarse: surface,
  };
  geometry.dispose();
  edges.dispose();
  if (isRound(zone)) {
    const coarse = zoneGeometry(zone, zRange, COARSE_SEGMENTS);
    shape.coarse = surfaceOf(coarse);
    coarse.dispose();
  }
  return shape;
}

/** The positions, shading and outward-facing triangles of `geometry`. */
function surfaceOf(geometry) {
  if (!geometry.getAttribute("normal")) geometry.computeVertexNormals();
  const count = geometry.getAttribute("position").count;
  const normals = geometry.getAttribute("normal").array;
  const shade = new Float32Array(count);
  for (let i = 0; i < count; i++) {
    const facing = Math.abs(normals[i * 3] * LIGHT.x + normals[i * 3 + 1] * LIGHT.y + normals[i * 3 + 2] * LIGHT.z);
    shade[i] = (AMBIENT + DIRECT * facing) / Math.PI;
  }
  const positions = Float32Array.from(geometry.getAttribute("position").array);
  const index = geometry.index ? Uint32Array.from(geometry.index.array) : Uint32Array.from({ length: count }, (_, i) => i);
  facingOut(positions, index);
  return { positions, shade, index };
}

/**
 * Turns the triangles of a closed shape to face outwards (counter-clockwise seen from outside),
 * as only front faces are drawn: axes that span a left-handed frame (a cuboid's, a polygon's
 * sweep against its winding) turn them inwards.
 */
function facingOut(positions, index) {
  // Six times the volume, measured from a vertex of the shape (small numbers, exact sign).
  let volume = 0;
  _point.fromArray(positions, 0);
  for (let i = 0; i < index.length; i += 3) {
    _a.fromArray(positions, index[i] * 3).sub(_point);
    _b.fromArray(positions, index[i + 1] * 3).sub(_point);
    _c.fromArray(positions, index[i + 2] * 3).sub(_point);
    volume += _a.dot(_b.cross(_c));
  }
  if (volume >= 0) return;
  for (let i = 0; i < index.length; i += 3) [index[i + 1], index[i + 2]] = [index[i + 2], index[i + 1]];
}

/**
 * One merged mesh of every zone: each zone's full shape with its edges, or (`coarse`) its coarse
 * surface alone. Each entry's range in it is `entry.ranges[slot]`.
 */
class Level {
  constructor(parent, slot, coarse) {
    const look = { vertexColors: true, transparent: true, depthWrite: false };
    this.slot = slot;
    this.coarse = coarse;
    // The outside of each zone only: drawing the far side through the near one too would cost
    // twice the triangles and pixels, and the edges show the far side already.
    this.mesh = new THREE.Mesh(new THREE.BufferGeometry(), new THREE.MeshBasicMaterial(look));
    // Mobile zones move after the bounding volumes were computed: never cull.
    this.mesh.frustumCulled = false;
    parent.add(this.mesh);
    this.edges = null;
    if (!coarse) {
      this.edges = new THREE.LineSegments(new THREE.BufferGeometry(), new THREE.LineBasicMaterial(look));
      this.edges.frustumCulled = false;
      parent.add(this.edges);
    }
    this.touched = new Set();
    this.moved = new Set();
    // Empty buffers from the start: a site without zones (before sign-in, a new site, the last
    // zone deleted) is drawn and sent like any other, with nothing in it.
    this.rebuild([]);
  }

  surfaceOf(shape) {
    return this.coarse ? shape.coarse : shape;
  }

  /** Merges the shapes of `entries` into new buffers, giving each its range. */
  rebuild(entries) {
    let vertices = 0;
    let indices = 0;
    let edgeVertices = 0;
    for (const e of entries) {
      const surface = this.surfaceOf(e.shape);
      const edges = this.coarse ? 0 : e.shape.edges.length / 3;
      e.ranges[this.slot] = { vertex: vertices, count: surface.shade.length, edge: edgeVertices, edges, first: indices, indices: surface.index.length };
      vertices += surface.shade.length;
      indices += surface.index.length;
      edgeVertices += edges;
    }
    this.positions = new Float32Array(vertices * 3);
    this.colours = new Float32Array(vertices * 4);
    this.index = new Uint32Array(indices);
    this.edgePositions = new Float32Array(edgeVertices * 3);
    this.edgeColours = new Float32Array(edgeVertices * 4);
    for (const e of entries) {
      const surface = this.surfaceOf(e.shape);
      const range = e.ranges[this.slot];
      this.positions.set(surface.positions, range.vertex * 3);
      if (range.edges) this.edgePositions.set(e.shape.edges, range.edge * 3);
      for (let k = 0; k < range.indices; k++) this.index[range.first + k] = surface.index[k] + range.vertex;
    }
    const dynamic = (array, size) => new THREE.BufferAttribute(array, size).setUsage(THREE.DynamicDrawUsage);
    const mesh = new THREE.BufferGeometry();
    mesh.setAttribute("position", dynamic(this.positions, 3));
    mesh.setAttribute("color", dynamic(this.colours, 4));
    mesh.setIndex(new THREE.BufferAttribute(this.index, 1));
    this.mesh.geometry.dispose();
    this.mesh.geometry = mesh;
    if (this.edges) {
      const lines = new THREE.BufferGeometry();
      lines.setAttribute("position", dynamic(this.edgePositions, 3));
      lines.setAttribute("color", dynamic(this.edgeColours, 4));
      this.edges.geometry.dispose();
      this.edges.geometry = lines;
    }
    this.touched.clear();
    this.moved.clear();
    this.whole = true;
  }

  /** Marks `entry` to be coloured again: its colours are written when this mesh is next sent
   * to the GPU, once however often it changed meanwhile. */
  paint(entry) {
    this.touched.add(entry);
  }

  /** Writes the colours of `entry` (its `look`, clear when hidden). */
  writeColours(entry) {
    const { look } = entry;
    if (!look) return;
    const range = entry.ranges[this.slot];
    const shown = entry.shown ? 1 : 0;
    const { shade } = this.surfaceOf(entry.shape);
    const c = this.colours;
    for (let i = 0; i < range.count; i++) {
      const o = (range.vertex + i) * 4;
      c[o] = look.surface.r * shade[i] + look.glow.r;
      c[o + 1] = look.surface.g * shade[i] + look.glow.g;
      c[o + 2] = look.surface.b * shade[i] + look.glow.b;
      c[o + 3] = look.surfaceOpacity * shown;
    }
    const e = this.edgeColours;
    for (let i = 0; i < range.edges; i++) {
      const o = (range.edge + i) * 4;
      e[o] = look.edge.r;
      e[o + 1] = look.edge.g;
      e[o + 2] = look.edge.b;
      e[o + 3] = look.edgeOpacity * shown;
    }
  }

  /** Writes the positions of `entry` moved by `offset`. */
  place(entry, offset) {
    const range = entry.ranges[this.slot];
    const write = (target, from, source) => {
      for (let k = 0; k < source.length; k += 3) {
        target[from + k] = source[k] + offset.x;
        target[from + k + 1] = source[k + 1] + offset.y;
        target[from + k + 2] = source[k + 2] + offset.z;
      }
    };
    write(this.positions, range.vertex * 3, this.surfaceOf(entry.shape).positions);
    if (range.edges) write(this.edgePositions, range.edge * 3, entry.shape.edges);
    this.moved.add(entry);
  }

  changed() {
    return this.whole || this.touched.size > 0 || this.moved.size > 0;
  }

  /** Colours the zones restyled and sends their ranges, and those of the zones moved, to the
   * GPU. */
  commit() {
    if (!this.changed()) return;
    for (const entry of this.touched) this.writeColours(entry);
    const mesh = this.mesh.geometry;
    const lines = this.edges?.geometry;
    const slot = this.slot;
    upload(mesh.getAttribute("color"), lines?.getAttribute("color"), this.touched, slot, 4, this.whole);
    upload(mesh.getAttribute("position"), lines?.getAttribute("position"), this.moved, slot, 3, this.whole);
    this.touched.clear();
    this.moved.clear();
    this.whole = false;
  }

  set visible(on) {
    this.mesh.visible = on;
    if (this.edges) this.edges.visible = on;
  }
}

export class ZoneLayer {
  /** Adds the zones' meshes and edges to `parent`: the full one shown, the coarse one hidden. */
  constructor(parent) {
    this.full = new Level(parent, 0, false);
    this.coarse = new Level(parent, 1, true);
    this.levels = [this.full, this.coarse];
    this.coarse.visible = false;
    this.shown = this.full;
    this.entries = [];
  }

  /** Draws the coarse mesh (`true`: while the camera moves) or the full one. */
  setCoarse(on) {
    this.shown = on ? this.coarse : this.full;
    this.full.visible = !on;
    this.coarse.visible = on;
  }

  /**
   * Merges the shapes of `entries` (each with its `shape`) into new buffers; each entry gets its
   * ranges in them. Looks and places are written by `setStyle` and `setPlace` afterwards.
   */
  rebuild(entries) {
    for (const e of entries) {
      e.ranges = [];
      e.placedAt = null;
    }
    for (const level of this.levels) level.rebuild(entries);
    this.entries = entries;
  }

  /** Sets the look of `entry`: surface and edge colours (THREE.Color, linear) with their
   * opacities, and the glow added to the lit surface. A hidden zone is drawn fully clear. */
  setStyle(entry, surface, surfaceOpacity, edge, edgeOpacity, glow) {
    entry.look = {
      surface: surface.clone(),
      surfaceOpacity,
      edge: edge.clone(),
      edgeOpacity,
      glow: glow.clone(),
    };
    this.paint(entry);
  }

  paint(entry) {
    if (!entry.look) return;
    for (const level of this.levels) level.paint(entry);
  }

  /** Moves `entry` by `offset` (a Vector3) from where its GeometryData puts it, and shows or
   * hides it. */
  setPlace(entry, offset, shown) {
    if (entry.shown !== shown) {
      entry.shown = shown;
      this.paint(entry);
    }
    if (entry.placedAt?.equals(offset)) return;
    entry.placedAt = offset.clone();
    for (const level of this.levels) level.place(entry, offset);
  }

  /** Whether the zones drawn now were restyled or moved since the last commit. */
  changed() {
    return this.shown.changed();
  }

  /** Sends the ranges of the zones restyled or moved to the GPU, for the mesh drawn now only:
   * the other one catches up when it is drawn again. */
  commit() {
    this.shown.commit();
  }

  /** The zone of `entries` whose surface `ray` meets first, or null: the boxes first, then the
   * triangles of the zones whose boxes the ray meets, nearest box first. */
  pick(ray, entries) {
    const hits = [];
    for (const e of entries) {
      if (!e.shown) continue;
      _box.copy(e.shape.box).translate(e.offset);
      if (ray.intersectBox(_box, _point)) hits.push([_point.distanceTo(ray.origin), e]);
    }
    hits.sort((a, b) => a[0] - b[0]);
    let best = null;
    let bestDistance = Infinity;
    for (const [boxDistance, e] of hits) {
      if (boxDistance > bestDistance) break;
      const d = this.rayDistance(ray, e);
      if (d < bestDistance) {
        best = e;
        bestDistance = d;
      }
    }
    return best;
  }

  /** How far along `ray` it meets a triangle of entry `e` where it is drawn (in full); Infinity
   * when it does not. */
  rayDistance(ray, e) {
    const { first, indices } = e.ranges[this.full.slot];
    const { positions: p, index } = this.full;
    let nearest = Infinity;
    const corner = (v, k) => v.set(p[k * 3], p[k * 3 + 1], p[k * 3 + 2]);
    for (let i = first; i < first + indices; i += 3) {
      corner(_a, index[i]);
      corner(_b, index[i + 1]);
      corner(_c, index[i + 2]);
      if (ray.intersectTriangle(_a, _b, _c, false, _point)) nearest = Math.min(nearest, _point.distanceTo(ray.origin));
    }
    return nearest;
  }
}

/**
 * Marks the ranges (`ranges[slot]`) of `entries` in `surface` and `lines` (attributes of `size`
 * numbers per vertex; `lines` may be absent) for upload, or the whole attributes when there are
 * many or `whole` says so.
 */
function upload(surface, lines, entries, slot, size, whole) {
  if (!whole && !entries.size) return;
  if (whole || entries.size > RANGES_PER_UPLOAD) {
    surface.clearUpdateRanges();
    surface.needsUpdate = true;
    if (lines) {
      lines.clearUpdateRanges();
      lines.needsUpdate = true;
    }
    return;
  }
  for (const e of entries) {
    const range = e.ranges[slot];
    surface.addUpdateRange(range.vertex * size, range.count * size);
    if (!lines || !range.edges) continue;
    lines.addUpdateRange(range.edge * size, range.edges * size);
    lines.needsUpdate = true;
  }
  surface.needsUpdate = true;
}

const _box = new THREE.Box3();
const _point = new THREE.Vector3();
const _a = new THREE.Vector3();
const _b = new THREE.Vector3();
const _c = new THREE.Vector3();
