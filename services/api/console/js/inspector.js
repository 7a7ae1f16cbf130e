// The device inspector: one device, picked by clicking it in the view, by its name or MAC in the
// timeline, found by the search, or by MAC: its record in the device registry (Name, Group, Kind,
// Properties; read with GET /v3/devices/{MAC} each time it is inspected), its last position and
// when it was taken (from the position stream), the zones it is in (as the console's occupancy
// has them), and its recent events (the last hour's from GET /v3/events?mac=, then each new one
// as the event stream brings it).

import { describe, element, time } from "./panels.js";
import { localInput } from "./editor.js";

const $ = (id) => document.getElementById(id);
/** Recent events shown, newest first. */
const EVENTS = 50;
/** Known MACs offered while typing one. */
const SUGGESTIONS = 500;
/** A click picks the device drawn nearest to it, if one is this close (CSS pixels). */
const PICK_PIXELS = 12;
/** How far the pointer may move between press and release for a click (CSS pixels). */
const CLICK_SLOP = 4;

/** A MAC as the API returns it: upper-case with `:` (the server checks that it is one). */
export function normalMac(text) {
  return text.trim().toUpperCase().replaceAll("-", ":");
}

/**
 * A click on the view (not a drag, nor while `busy()`, e.g. drawing) picks the device of
 * `macs()` drawn nearest to it and tells `picked(mac)`.
 */
export function pickDevices(view, macs, busy, picked) {
  if (!view.webgl) return;
  const canvas = view.renderer.domElement;
  let pressed = null;
  canvas.addEventListener("pointerdown", (e) => {
    pressed = busy() || e.button !== 0 ? null : { x: e.clientX, y: e.clientY };
  });
  canvas.addEventListener("pointerup", (e) => {
    if (!pressed || Math.hypot(e.clientX - pressed.x, e.clientY - pressed.y) > CLICK_SLOP) return;
    pressed = null;
    let best = null;
    let bestDistance = PICK_PIXELS;
    for (const mac of macs()) {
      const at = view.screenOf(mac);
      const distance = at ? Math.hypot(at.x - e.clientX, at.y - e.clientY) : Infinity;
      if (distance <= bestDistance) {
        best = mac;
        bestDistance = distance;
      }
    }
    if (best) picked(best);
  });
}

/**
 * The inspector. `api()` answers the signed-in Api; `devices` is the Map MAC → {Position,
 * Timestamp} of the positions seen; `registry` the DeviceRegistry; `zonesOf(mac)` the zones the
 * device is in ([{ZoneID, Name}]); `openZone(id)` shows a zone.
 */
export class Inspector {
  constructor({ api, devices, registry, zonesOf, openZone }) {
    this.api = api;
    this.devices = devices;
    this.registry = registry;
    this.zonesOf = zonesOf;
    this.openZone = openZone;
    this.mac = null;
    this.events = []; // newest first
    this.loading = 0;
    this.recordRead = 0; // the registry record's readings started
    this.input = $("device-mac");
    $("device-form").addEventListener("submit", (e) => {
      e.preventDefault();
      this.inspect(this.input.value);
    });
    this.input.addEventListener("focus", () => this.suggest());
  }

  /** Offers the MACs seen so far, with their names, while the user types one. */
  suggest() {
    const macs = [...this.devices.keys()].sort().slice(0, SUGGESTIONS);
    $("device-macs").replaceChildren(...macs.map((mac) => element("option", { value: mac, label: this.registry.nameOf(mac) })));
  }

  /** Shows device `mac`: its position and zones now, then its events once read. */
  async inspect(text) {
    const mac = normalMac(text);
    if (!mac) {
      this.say("Enter a MAC address, or click a device in the view.", "error");
      return;
    }
    const ticket = ++this.loading;
    this.mac = mac;
    this.input.value = mac;
    this.events = [];
    $("device-info").hidden = false;
    $("device-info").dataset.mac = mac;
    this.renderRecord();
    this.readRecord();
    this.renderPosition();
    this.renderZones();
    this.renderEvents();
    this.say("Reading its events…", "");
    try {
      const events = await this.api().recentEvents(EVENTS, { mac });
      if (ticket !== this.loading) return;
      // Events the stream brought while the history was read are kept once.
      const seen = new Set(this.events.map((e) => e.EventID));
      this.events = [...this.events, ...events.reverse().filter((e) => !seen.has(e.EventID))].slice(0, EVENTS);
      this.renderEvents();
      this.renderPosition();
      this.say(this.devices.has(mac) || this.events.length ? "" : "No position or event of this device has been seen in the last hour.", "");
    } catch (error) {
      if (ticket !== this.loading) return;
      // The server refuses what is not a MAC: then there is no device to show.
      if (error.status === 422) {
        this.mac = null;
        this.recordRead += 1;
        $("device-info").hidden = true;
      }
      this.say(describe(error), "error");
    }
  }

  /**
   * Reads the device's record from the registry, which may have changed since the console last
   * read it (its writes are announced nowhere): 404 means it has none.
   */
  async readRecord() {
    const mac = this.mac;
    const ticket = ++this.recordRead;
    const message = $("device-record-message");
    message.textContent = "";
    message.dataset.kind = "";
    try {
      const device = await this.api().device(mac);
      if (ticket === this.recordRead) this.registry.put(device);
    } catch (error) {
      if (ticket !== this.recordRead) return;
      if (error.status === 404) this.registry.forget(mac);
      else if (error.status !== 422) {
        message.textContent = `Its record could not be read: ${describe(error)}`;
        message.className = "message error";
        message.dataset.kind = "error";
      }
    }
  }

  /** The registry changed for the devices `macs` (a Set). */
  registryChanged(macs) {
    if (this.mac && macs.has(this.mac)) this.renderRecord();
  }

  /** The device's name, group, kind and properties when it is registered; its MAC always. */
  renderRecord() {
    const device = this.registry.get(this.mac);
    const info = $("device-info");
    const title = $("device-title");
    title.textContent = device ? device.Name : this.mac;
    title.classList.toggle("mono", !device);
    info.dataset.registered = String(Boolean(device));
    info.dataset.name = device?.Name || "";
    info.dataset.group = device?.Group || "";
    $("device-mac-line").textContent = device ? this.mac : "";
    $("device-record").hidden = !device;
    $("device-unregistered").hidden = Boolean(device);
    if (!device) return;
    $("device-group").textContent = device.Group || "—";
    $("device-kind").textContent = device.Kind || "—";
    const properties = Object.entries(device.Properties || {}).flatMap(([key, value]) => [
      element("dt", {}, key),
      element("dd", { "data-property": key }, typeof value === "string" ? value : JSON.stringify(value)),
    ]);
    $("device-properties").replaceChildren(...properties);
    $("device-properties").hidden = !properties.length;
  }

  /** Positions arrived (an array of {MAC, Position, Timestamp}). */
  positions(list) {
    if (this.mac && list.some((p) => p.MAC === this.mac)) this.renderPosition();
  }

  /** An event arrived from the stream. */
  event(event) {
    if (!this.mac || event.Source?.MAC !== this.mac) return;
    if (this.events.some((e) => e.EventID === event.EventID)) return;
    this.events.unshift(event);
    this.events.length = Math.min(this.events.length, EVENTS);
    this.renderEvents();
    this.renderZones();
  }

  /** The zones or their occupants changed. */
  zonesChanged() {
    if (this.mac) this.renderZones();
  }

  /** The newest position known: from the stream, else from the device's last zone event. */
  position() {
    const seen = this.devices.get(this.mac);
    if (seen) return { Position: seen.Position, Timestamp: seen.Timestamp, from: "position stream" };
    const event = this.events.find((e) => Array.isArray(e.Content?.Position));
    return event ? { Position: event.Content.Position, Timestamp: event.Timestamp, from: `its last ${event.Type}` } : null;
  }

  renderPosition() {
    const p = this.position();
    const at = $("device-position");
    at.textContent = p ? `[${p.Position.map((c) => Number(c).toFixed(2)).join(", ")}]` : "not seen yet";
    at.dataset.position = p ? JSON.stringify(p.Position) : "";
    $("device-seen").textContent = p ? `${localInput(p.Timestamp).replace("T", " ")} (${p.from})` : "";
    $("device-seen").setAttribute("datetime", p?.Timestamp || "");
  }

  renderZones() {
    const zones = this.zonesOf(this.mac);
    const items = zones.map((z) =>
      element("li", { "data-zone-id": z.ZoneID },
        element("button", { type: "button", class: "link", title: "show this zone", onclick: () => this.openZone(z.ZoneID) }, z.Name || z.ZoneID)),
    );
    $("device-zones").replaceChildren(...(items.length ? items : [element("li", { class: "empty" }, "in no zone")]));
    $("device-info").dataset.zones = String(zones.length);
  }

  renderEvents() {
    const items = this.events.map((event) => {
      const c = event.Content || {};
      const what = [event.Type, c.ZoneName || c.ZoneID || "", c.Reason ? `(${c.Reason})` : ""].filter(Boolean).join(" ");
      return element(
        "li",
        { class: `event device-event type-${event.Type}`, "data-type": event.Type, "data-zone-id": c.ZoneID || "", "data-event-id": event.EventID || "" },
        element("time", { datetime: event.Timestamp }, time(event.Timestamp)),
        element("span", { class: "event-what" }, what),
      );
    });
    $("device-events").replaceChildren(...(items.length ? items : [element("li", { class: "empty" }, "no events in the last hour")]));
  }

  /** Forgets the device (signed out). */
  reset() {
    this.mac = null;
    this.loading += 1;
    this.recordRead += 1;
    $("device-info").hidden = true;
    this.say("", "");
  }

  say(text, kind) {
    const message = $("device-message");
    message.textContent = text;
    message.className = `message ${kind}`;
    message.dataset.kind = kind;
  }
}
