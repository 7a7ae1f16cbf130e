// Zone shapes as three.js geometry, in site coordinates (metres, z up), exactly as the evaluator
// reads GeometryData: sphere, cuboid (any axes, even oblique: the box is the parallelepiped its
// three edge vectors span), cylinder, polygon prism, and the 2D circle and square as columns
// from the floor to the top of the site (`zRange`).

import * as THREE from "three";

const v = (row) => new THREE.Vector3(row[0], row[1], row[2]);

/** Segments around a sphere or a cylinder (a multiple of 4, so that the extremes along each axis
 * are vertices): round enough to read as round, few enough for a thousand zones in one view. */
const SEGMENTS = 16;
/** Segments around round shapes in the coarse view drawn while the camera moves. */
export const COARSE_SEGMENTS = 6;

/** A unit box spanning [0,1]³ moved by the affine map `origin + a·e1 + b·e2 + c·e3`. */
function parallelepiped(origin, e1, e2, e3) {
  const geometry = new THREE.BoxGeometry(1, 1, 1).translate(0.5, 0.5, 0.5);
  const m = new THREE.Matrix4().makeBasis(e1, e2, e3).setPosition(origin);
  return geometry.applyMatrix4(m);
}

/** A cylinder of radius `r` along `axis` (unit) from `base` over `height`, `segments` around. */
function column(base, axis, height, r, segments) {
  const geometry = new THREE.CylinderGeometry(r, r, height, segments, 1).translate(0, height / 2, 0);
  const turn = new THREE.Quaternion().setFromUnitVectors(new THREE.Vector3(0, 1, 0), axis);
  geometry.applyQuaternion(turn);
  return geometry.translate(base.x, base.y, base.z);
}

/** The polygon's vertices without a closing vertex that repeats the first. */
export function polygonVertices(rows) {
  const vertices = rows.slice(0, rows.length - 2).map(v);
  if (vertices.length > 3 && vertices[vertices.length - 1].distanceTo(vertices[0]) <= 1e-6) vertices.pop();
  return vertices;
}

/** The Newell normal of a ring of vertices (unit; zero for a degenerate ring). */
function newellNormal(vertices) {
  const n = new THREE.Vector3();
  for (let i = 0; i < vertices.length; i++) {
    const a = vertices[i];
    const b = vertices[(i + 1) % vertices.length];
    n.x += (a.y - b.y) * (a.z + b.z);
    n.y += (a.z - b.z) * (a.x + b.x);
    n.z += (a.x - b.x) * (a.y + b.y);
  }
  return n.normalize();
}

/** A prism: the planar polygon `vertices` swept by `height` along `axis` (unit). */
function prism(vertices, height, axis) {
  const normal = newellNormal(vertices);
  // A 2D frame in the polygon's plane, for the triangulation.
  const u = new THREE.Vector3().subVectors(vertices[1], vertices[0]).normalize();
  const w = new THREE.Vector3().crossVectors(normal, u);
  const flat = vertices.map((p) => {
    const d = new THREE.Vector3().subVectors(p, vertices[0]);
    return new THREE.Vector2(d.dot(u), d.dot(w));
  });
  const triangles = THREE.ShapeUtils.triangulateShape(flat, []);
  const lift = axis.clone().multiplyScalar(height);
  const top = vertices.map((p) => p.clone().add(lift));
  const positions = [];
  const push = (...points) => points.forEach((p) => positions.push(p.x, p.y, p.z));
  for (const [a, b, c] of triangles) {
    push(vertices[a], vertices[c], vertices[b]);
    push(top[a], top[b], top[c]);
  }
  for (let i = 0; i < vertices.length; i++) {
    const j = (i + 1) % vertices.length;
    push(vertices[i], vertices[j], top[j]);
    push(vertices[i], top[j], top[i]);
  }
  const geometry = new THREE.BufferGeometry();
  geometry.setAttribute("position", new THREE.Float32BufferAttribute(positions, 3));
  geometry.computeVertexNormals();
  return geometry;
}

/** Unit vector of an axis row; square axes use x and y only. */
function axisOf(row, flat = false) {
  return new THREE.Vector3(row[0], row[1], flat ? 0 : row[2]).normalize();
}

/**
 * The three.js geometry of `zone` (GeometryType, GeometryData), with 2D shapes spanning
 * `zRange` = [bottom, top], round shapes with `segments` facets around; null when the data
 * cannot be drawn (the server has checked it, so this is a zone written by a newer server with a
 * shape this console does not know).
 */
export function zoneGeometry(zone, zRange, segments = SEGMENTS) {
  const rows = zone.GeometryData;
  const [bottom, top] = zRange;
  switch (String(zone.GeometryType).toLowerCase()) {
    case "sphere":
      return new THREE.SphereGeometry(rows[1][0], segments, Math.max(2, Math.round(segments / 2))).translate(rows[0][0], rows[0][1], rows[0][2]);
    case "circle":
      return column(new THREE.Vector3(rows[0][0], rows[0][1], bottom), new THREE.Vector3(0, 0, 1), top - bottom, rows[1][0], segments);
    case "cuboid": {
      const [l, w, h] = rows[1];
      return parallelepiped(
        v(rows[0]),
        axisOf(rows[2]).multiplyScalar(l),
        axisOf(rows[3]).multiplyScalar(w),
        axisOf(rows[4]).multiplyScalar(h),
      );
    }
    case "square": {
      const [l, w] = rows[1];
      return parallelepiped(
        new THREE.Vector3(rows[0][0], rows[0][1], bottom),
        axisOf(rows[2], true).multiplyScalar(l),
        axisOf(rows[3], true).multiplyScalar(w),
        new THREE.Vector3(0, 0, top - bottom),
      );
    }
    case "cylinder":
      return column(v(rows[0]), axisOf(rows[1]), rows[2][0], rows[2][1], segments);
    case "polygon":
      return prism(polygonVertices(rows), rows[rows.length - 2][0], axisOf(rows[rows.length - 1]));
    default:
      return null;
  }
}

/**
 * The centre of a zone's shape as the evaluator places mobile zones: sphere and circle centre;
 * the middle of the cuboid and square; the middle of the cylinder's axis; the polygon's vertex
 * centroid moved half its height along the axis. 2D shapes have no z: theirs is 0.
 */
export function zoneCentre(zone) {
  const rows = zone.GeometryData;
  switch (String(zone.GeometryType).toLowerCase()) {
    case "sphere":
      return v(rows[0]);
    case "circle":
      return new THREE.Vector3(rows[0][0], rows[0][1], 0);
    case "cuboid": {
      const [l, w, h] = rows[1];
      return v(rows[0])
        .addScaledVector(axisOf(rows[2]), l / 2)
        .addScaledVector(axisOf(rows[3]), w / 2)
        .addScaledVector(axisOf(rows[4]), h / 2);
    }
    case "square": {
      const [l, w] = rows[1];
      const c = new THREE.Vector3(rows[0][0], rows[0][1], 0)
        .addScaledVector(axisOf(rows[2], true), l / 2)
        .addScaledVector(axisOf(rows[3], true), w / 2);
      c.z = 0;
      return c;
    }
    case "cylinder":
      return v(rows[0]).addScaledVector(axisOf(rows[1]), rows[2][0] / 2);
    case "polygon": {
      const vertices = polygonVertices(rows);
      const c = vertices.reduce((sum, p) => sum.add(p), new THREE.Vector3()).divideScalar(vertices.length);
      return c.addScaledVector(axisOf(rows[rows.length - 1]), rows[rows.length - 2][0] / 2);
    }
    default:
      return new THREE.Vector3();
  }
}

/** Whether a zone's shape is round (drawn with facets: fewer of them in the coarse view). */
export function isRound(zone) {
  const type = String(zone.GeometryType).toLowerCase();
  return type === "sphere" || type === "circle" || type === "cylinder";
}

/** Whether a zone is 2D (a column through the site's height). */
export function isFlat(zone) {
  const type = String(zone.GeometryType).toLowerCase();
  return type === "circle" || type === "square";
}
