// The zone editor: every field of one zone in a form, saved with PUT /v3/modules/zones/{ZoneID}.
// Only the fields the user changed are sent (the update route changes only supplied fields), with
// If-Match and the version the form was filled from, so a write made elsewhere in the meantime is
// refused (412) instead of overwritten. The server judges every value: its answer is shown with
// its status and message (a locked zone's geometry, a negative height, a MAC that is not one).

import { describe, element } from "./panels.js";

const $ = (id) => document.getElementById(id);

/** An ISO time as a datetime-local value in the browser's time zone ("" for none). */
export function localInput(iso) {
  if (!iso) return "";
  const t = new Date(iso);
  if (Number.isNaN(t.getTime())) return "";
  const p = (n) => String(n).padStart(2, "0");
  return `${t.getFullYear()}-${p(t.getMonth() + 1)}-${p(t.getDate())}T${p(t.getHours())}:${p(t.getMinutes())}:${p(t.getSeconds())}`;
}

/** A datetime-local value (the browser's time zone) as an ISO time in UTC, or null when empty. */
export function isoOf(local) {
  return local ? new Date(local).toISOString() : null;
}

/** The MACs of a DeviceList typed one per line or separated by commas or spaces. */
export function macList(text) {
  return text.split(/[\s,;]+/).filter(Boolean);
}

/** What decides whether the zone changed on the server since the form was filled. */
function signature(zone) {
  const { Name, GeometryType, GeometryData, AlertLevel, Active, InclusionPolicy, DeviceList, ZoneActions } = zone;
  const { IsTimed, StartTime, StopTime, MobileOriginSource, IsGeometryLocked, MaxDwellSeconds } = zone;
  const { MaxOccupancy, MinOccupancy } = zone;
  return JSON.stringify([Name, GeometryType, GeometryData, AlertLevel, Active, InclusionPolicy, DeviceList, ZoneActions, IsTimed, StartTime, StopTime, MobileOriginSource, IsGeometryLocked, MaxDwellSeconds, MaxOccupancy, MinOccupancy]);
}

/** Parses the JSON of field `name`; a local error names the field. */
function json(name, text) {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new Error(`${name} is not JSON: ${e.message}`);
  }
}

/**
 * The editor of the selected zone. `api()` answers the signed-in Api; `saved()` is told after
 * every successful save (the zone list is read again).
 */
export class ZoneEditor {
  constructor(api, saved) {
    this.api = api;
    this.saved = saved;
    this.form = $("edit-form");
    this.message = $("edit-message");
    this.zone = null; // the zone as the form was filled from it
    this.etag = null;
    this.filledAt = 0; // when the form was filled (Date.now())
    this.fills = 0; // how often it was filled (data-filled, for tests)
    this.initial = {}; // field id → its value when filled
    this.loading = 0;
    this.fields = {
      Name: $("edit-name"),
      AlertLevel: $("edit-level"),
      Active: $("edit-active"),
      InclusionPolicy: $("edit-policy"),
      DeviceList: $("edit-devices"),
      IsTimed: $("edit-timed"),
      StartTime: $("edit-start"),
      StopTime: $("edit-stop"),
      MobileOriginSource: $("edit-mobile"),
      MaxDwellSeconds: $("edit-dwell"),
      MaxOccupancy: $("edit-max-occupancy"),
      MinOccupancy: $("edit-min-occupancy"),
      ZoneActions: $("edit-actions"),
      GeometryType: $("edit-type"),
      GeometryData: $("edit-data"),
    };
    this.form.addEventListener("submit", (e) => {
      e.preventDefault();
      this.save();
    });
    $("edit-reload").addEventListener("click", () => this.zone && this.open(this.zone.ZoneID));
  }

  /** Reads zone `id` (and its version) and fills the form with it. */
  async open(id) {
    const ticket = ++this.loading;
    this.form.dataset.zoneId = id;
    try {
      const { zone, etag } = await this.api().zone(id);
      if (ticket !== this.loading) return;
      this.fill(zone, etag);
    } catch (error) {
      if (ticket !== this.loading) return;
      this.zone = null;
      this.form.querySelector("fieldset").disabled = true;
      this.say(describe(error), "error");
    }
  }

  fill(zone, etag) {
    this.zone = zone;
    this.etag = etag;
    this.filledAt = Date.now();
    $("edit-stale").hidden = true;
    const f = this.fields;
    f.Name.value = zone.Name;
    f.AlertLevel.value = String(zone.AlertLevel);
    f.Active.checked = zone.Active;
    f.InclusionPolicy.value = zone.InclusionPolicy;
    f.DeviceList.value = zone.DeviceList.join("\n");
    f.IsTimed.checked = zone.IsTimed;
    f.StartTime.value = localInput(zone.StartTime);
    f.StopTime.value = localInput(zone.StopTime);
    f.MobileOriginSource.value = zone.MobileOriginSource || "";
    for (const name of ["MaxDwellSeconds", "MaxOccupancy", "MinOccupancy"]) f[name].value = zone[name] == null ? "" : String(zone[name]);
    // One action a line: short enough to read, easy to copy one.
    f.ZoneActions.value = zone.ZoneActions.length ? `[\n${zone.ZoneActions.map((a) => `  ${JSON.stringify(a)}`).join(",\n")}\n]` : "[]";
    f.GeometryType.value = zone.GeometryType;
    f.GeometryData.value = JSON.stringify(zone.GeometryData);
    this.initial = Object.fromEntries(Object.entries(f).map(([name, input]) => [name, this.value(input)]));
    this.form.querySelector("fieldset").disabled = false;
    this.form.dataset.zoneId = zone.ZoneID;
    this.form.dataset.locked = String(zone.IsGeometryLocked);
    this.form.dataset.filled = String(++this.fills);
    $("edit-locked").hidden = !zone.IsGeometryLocked;
    const tags = [zone.GeometryType, zone.IsGeometryLocked ? "locked" : null, zone.Active ? null : "inactive"];
    $("zone-title").replaceChildren(
      element("span", { class: "zone-name" }, zone.Name || "(no name)"),
      ...tags.filter(Boolean).map((tag) => element("span", { class: "tag" }, tag)),
    );
    $("zone-id").textContent = zone.ZoneID;
  }

  value(input) {
    return input.type === "checkbox" ? input.checked : input.value;
  }

  /** Whether any field differs from the zone the form was filled from. */
  dirty() {
    return Object.entries(this.fields).some(([name, input]) => this.value(input) !== this.initial[name]);
  }

  /**
   * The ZoneInput of the fields changed, as typed: numbers where they read as one, the server's
   * to refuse otherwise. Throws when a JSON field does not parse.
   */
  changes() {
    const f = this.fields;
    const changed = (name) => this.value(f[name]) !== this.initial[name];
    const out = {};
    if (changed("Name")) out.Name = f.Name.value;
    if (changed("AlertLevel")) {
      const level = f.AlertLevel.value.trim();
      out.AlertLevel = level !== "" && !Number.isNaN(Number(level)) ? Number(level) : level;
    }
    if (changed("Active")) out.Active = f.Active.checked;
    if (changed("InclusionPolicy")) out.InclusionPolicy = f.InclusionPolicy.value;
    if (changed("DeviceList")) out.DeviceList = macList(f.DeviceList.value);
    if (changed("IsTimed")) out.IsTimed = f.IsTimed.checked;
    if (changed("StartTime")) out.StartTime = isoOf(f.StartTime.value);
    if (changed("StopTime")) out.StopTime = isoOf(f.StopTime.value);
    if (changed("MobileOriginSource")) out.MobileOriginSource = f.MobileOriginSource.value.trim() || null;
    for (const name of ["MaxDwellSeconds", "MaxOccupancy", "MinOccupancy"]) {
      if (!changed(name)) continue;
      const limit = f[name].value.trim();
      out[name] = limit === "" ? null : !Number.isNaN(Number(limit)) ? Number(limit) : limit;
    }
    if (changed("ZoneActions")) out.ZoneActions = json("ZoneActions", f.ZoneActions.value);
    if (changed("GeometryType")) out.GeometryType = f.GeometryType.value;
    if (changed("GeometryData")) out.GeometryData = json("GeometryData", f.GeometryData.value);
    return out;
  }

  async save() {
    if (!this.zone) return;
    this.say("", "");
    let changes;
    try {
      changes = this.changes();
    } catch (error) {
      this.say(error.message, "error");
      return;
    }
    const names = Object.keys(changes);
    if (!names.length) {
      this.say("Nothing changed.", "ok");
      return;
    }
    const button = $("edit-save");
    button.disabled = true;
    try {
      await this.api().updateZone(this.zone.ZoneID, changes, this.etag);
      this.say(`Saved ${names.join(", ")}.`, "ok");
      await this.open(this.zone.ZoneID);
      this.saved();
    } catch (error) {
      const hint = error.status === 412 ? " Reload to see the zone as it is now." : "";
      this.say(describe(error) + hint, "error");
    } finally {
      button.disabled = false;
    }
  }

  /**
   * The zone list was read again (the read began at `readAt`): the form follows a change made
   * elsewhere unless the user has changed fields, who is then told that Save will be refused.
   * A list whose read began before the form was filled says nothing newer.
   */
  zonesChanged(zones, readAt) {
    if (!this.zone || readAt < this.filledAt) return;
    const now = zones.find((z) => z.ZoneID === this.zone.ZoneID);
    if (!now) {
      this.say(`Zone ${this.zone.ZoneID} was deleted.`, "error");
      this.zone = null;
      this.form.querySelector("fieldset").disabled = true;
      return;
    }
    if (signature(now) === signature(this.zone)) return;
    if (!this.dirty()) {
      this.open(now.ZoneID);
      return;
    }
    $("edit-stale").hidden = false;
  }

  /** Forgets the zone (signed out). */
  reset() {
    this.zone = null;
    this.loading += 1;
  }

  say(text, kind) {
    this.message.textContent = text;
    this.message.className = `message ${kind}`;
    this.message.dataset.kind = kind;
    // The form is taller than the pane: the outcome of Save is brought into view.
    if (text) this.message.scrollIntoView({ block: "nearest" });
  }
}
