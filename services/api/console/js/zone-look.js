// How a zone looks in the 3D view: its alarm kind under the site's thresholds, its colour by
// kind (grey when inactive), lit while someone is inside, white edges when its geometry is
// locked, and the words and colour of its label. zone-layer.js draws the look, labels.js the label.

import * as THREE from "three";

const COLOURS = {
  site: 0xe5484d,
  device: 0xf5a524,
  log: 0x3e9bff,
  inactive: 0x7a7f87,
};

/** The alarm kind an entry into a zone of `level` raises, under the site's thresholds. */
export function alarmKind(level, thresholds) {
  if (level >= thresholds.site) return "site";
  if (level >= thresholds.device) return "device";
  return "log";
}

/**
 * Colours zone `entry` in `zoneLayer` by its alarm kind and state, with `occupants` devices
 * inside, and words its label (`labelKey`, `labelLines`, `labelColour`). Answers whether the
 * label's words or colour changed.
 */
export function styleZone(entry, occupants, thresholds, zoneLayer) {
  const { zone } = entry;
  const kind = zone.Active ? alarmKind(zone.AlertLevel, thresholds) : "inactive";
  entry.kind = kind;
  entry.occupied = occupants > 0 && zone.Active;
  const colour = _colour.setHex(COLOURS[kind]);
  const lit = occupants > 0 && zone.Active;
  const edge = zone.IsGeometryLocked ? _white : colour;
  const glow = lit ? _glow.copy(colour).multiplyScalar(0.45) : _black;
  const opacity = lit ? 0.5 : zone.Active ? 0.2 : 0.1;
  zoneLayer.setStyle(entry, colour, opacity, edge, lit ? 1 : zone.Active ? 0.75 : 0.4, glow);
  const title = `${zone.Name || zone.ZoneID.slice(0, 8)}${zone.IsGeometryLocked ? " [locked]" : ""}`;
  const lines = occupants > 0 ? [title, `● ${occupants} inside`] : [title];
  const text = lit ? "#ffffff" : kind === "inactive" ? "#9aa3ad" : `#${colour.getHexString()}`;
  const labelKey = JSON.stringify([lines, text]);
  if (entry.labelKey === labelKey) return false;
  entry.labelKey = labelKey;
  entry.labelLines = lines;
  entry.labelColour = text;
  return true;
}

const _colour = new THREE.Color();
const _glow = new THREE.Color();
const _white = new THREE.Color(0xffffff);
const _black = new THREE.Color(0x000000);
