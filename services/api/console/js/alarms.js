// The alarm list beside the timeline: the alarms a person can acknowledge (SITE_ALARM,
// DEVICE_ALARM, ZONE_DWELL_EXCEEDED, DEVICE_OFFLINE), open ones first, then acknowledged ones,
// then those resolved while the page is open, each newest first, with Acknowledge and Resolve
// buttons (the note field above the list goes with the next of them). Read from GET /v3/alarms
// at sign-in, then kept current from the live event stream: a new alarm event adds an open
// alarm (and beeps, unless the sound is turned off), ALARM_ACKNOWLEDGED and ALARM_RESOLVED
// change one. Entries carry stable ids (alarm-<AlarmID>) and data attributes for tests.

import { describe, element, time } from "./panels.js";

const $ = (id) => document.getElementById(id);

/** The event types that raise an alarm. */
export const ALARM_TYPES = new Set(["SITE_ALARM", "DEVICE_ALARM", "ZONE_DWELL_EXCEEDED", "ZONE_OCCUPANCY_EXCEEDED", "ZONE_OCCUPANCY_BELOW", "DEVICE_OFFLINE"]);
const CHANGES = new Set(["ALARM_ACKNOWLEDGED", "ALARM_RESOLVED"]);
const ORDER = { open: 0, acknowledged: 1, resolved: 2 };
// Occupancy alarms are drawn as site alarms: a zone over its limit or under its head count.
const KIND = { SITE_ALARM: "site", DEVICE_ALARM: "device", ZONE_DWELL_EXCEEDED: "dwell", ZONE_OCCUPANCY_EXCEEDED: "site", ZONE_OCCUPANCY_BELOW: "site", DEVICE_OFFLINE: "offline" };
const LABEL = { SITE_ALARM: "site alarm", DEVICE_ALARM: "device alarm", ZONE_DWELL_EXCEEDED: "stayed too long", ZONE_OCCUPANCY_EXCEEDED: "over its limit", ZONE_OCCUPANCY_BELOW: "under its head count", DEVICE_OFFLINE: "offline" };
// Resolved alarms stay in view for a while (those resolved here or since sign-in), no more.
const RESOLVED_SHOWN = 20;
// Open and acknowledged alarms shown at most; the count says how many there are.
const SHOWN = 300;
// Open and acknowledged alarms kept at most (the newest): a site that raises alarms faster than
// people resolve them does not grow the page without end.
const KEPT = 1000;
// The list is drawn again at most this often while events come.
const DRAW_EVERY_MS = 250;
const SOUND_KEY = "zonecast.alarmSound";
// At most one beep in this time, however many alarms come (a busy site).
const BEEP_EVERY_MS = 1000;

export class AlarmList {
  /**
   * `api()` answers the signed-in Api; `deviceName(mac)` a registry name or null; `onMac(mac)`
   * inspects a device; `zoneName(id)` names a zone.
   */
  constructor(api, deviceName, onMac, zoneName) {
    this.api = api;
    this.deviceName = deviceName;
    this.onMac = onMac;
    this.zoneName = zoneName;
    this.list = $("alarm-list");
    this.alarms = new Map(); // AlarmID → the alarm as last known
    this.lastBeep = 0;
    this.audio = null;
    this.sound = localStorage.getItem(SOUND_KEY) !== "off";
    this.drawn = new Map(); // AlarmID → [signature, li]
    this.drawTimer = null;
    $("alarm-sound").addEventListener("click", () => this.setSound(!this.sound));
    this.showSound();
  }

  /** Reads the newest open and acknowledged alarms, and the newest resolved ones. */
  async load() {
    const api = this.api();
    if (!api) return;
    try {
      for (const [state, limit] of [["open,acknowledged", KEPT], ["resolved", RESOLVED_SHOWN]]) {
        const answer = await api.request("GET", `/v3/alarms?${new URLSearchParams({ state, limit: String(limit) })}`);
        for (const alarm of answer.Alarms) this.merge(alarm);
      }
      this.message("");
    } catch (e) {
      this.message(`Alarms could not be read: ${describe(e)}`, "error");
    }
    this.render();
  }

  /** An event of the live stream: a new alarm, or a change of one. */
  event(event) {
    if (ALARM_TYPES.has(event.Type)) {
      const c = event.Content || {};
      const fresh = !this.alarms.has(event.EventID);
      this.merge({
        AlarmID: event.EventID,
        Type: event.Type,
        MAC: event.Source?.MAC || "",
        ZoneID: c.ZoneID || null,
        ZoneName: c.ZoneName || null,
        CollisionID: c.CollisionID || null,
        RaisedAt: event.Timestamp,
        State: "open",
      });
      if (fresh) this.beep();
      this.renderSoon();
    } else if (CHANGES.has(event.Type) && event.Content?.AlarmID) {
      this.merge(event.Content);
      this.renderSoon();
    }
  }

  /** Draws the list within DRAW_EVERY_MS: a burst of events costs one drawing. */
  renderSoon() {
    if (this.drawTimer !== null) return;
    this.drawTimer = setTimeout(() => {
      this.drawTimer = null;
      this.render();
    }, DRAW_EVERY_MS);
  }

  /** Keeps `alarm`, unless the one known is further on: states only go forward. */
  merge(alarm) {
    const known = this.alarms.get(alarm.AlarmID);
    if (known && ORDER[known.State] > ORDER[alarm.State]) return;
    this.alarms.set(alarm.AlarmID, { ...known, ...alarm });
  }

  /** Acknowledges (`action` "acknowledge") or resolves alarm `id` with the note typed, if any. */
  async change(id, action) {
    const api = this.api();
    if (!api) return;
    const note = $("alarm-note").value.trim();
    try {
      const alarm = await api.request("POST", `/v3/alarms/${encodeURIComponent(id)}/${action}`, note ? { Note: note } : undefined);
      $("alarm-note").value = "";
      this.merge(alarm);
      this.message("");
    } catch (e) {
      this.message(describe(e), "error");
      // A 409 means someone else changed it first: show it as it is now.
      if (e.status === 409) {
        try {
          this.merge(await api.request("GET", `/v3/alarms/${encodeURIComponent(id)}`));
        } catch {
          // The list is read again at the next sign-in.
        }
      }
    }
    this.render();
  }

  /** Draws the list: open first, then acknowledged, then the newest resolved; newest first. */
  render() {
    const all = [...this.alarms.values()].sort(
      (a, b) => ORDER[a.State] - ORDER[b.State] || String(b.RaisedAt).localeCompare(String(a.RaisedAt)),
    );
    const active = all.filter((a) => a.State !== "resolved");
    const resolved = all.filter((a) => a.State === "resolved");
    // Forget alarms beyond those kept, so a long session does not grow without end.
    for (const gone of [...active.splice(KEPT), ...resolved.slice(RESOLVED_SHOWN)]) this.alarms.delete(gone.AlarmID);
    const shown = [...active.slice(0, SHOWN), ...resolved.slice(0, RESOLVED_SHOWN)];
    const open = active.filter((a) => a.State === "open").length;
    $("alarm-count").textContent = `${open} open, ${active.length - open} acknowledged`;
    $("alarm-empty").hidden = shown.length > 0;
    const keep = new Set();
    const items = shown.map((alarm) => {
      keep.add(alarm.AlarmID);
      const signature = [alarm.State, alarm.AcknowledgedBy, alarm.ResolvedBy, this.deviceName(alarm.MAC)].join("|");
      const drawn = this.drawn.get(alarm.AlarmID);
      if (drawn && drawn[0] === signature) return drawn[1];
      const li = this.entry(alarm);
      this.drawn.set(alarm.AlarmID, [signature, li]);
      return li;
    });
    for (const id of [...this.drawn.keys()]) if (!keep.has(id)) this.drawn.delete(id);
    // Only when the order or the entries changed: a click on a button is never lost to a redraw.
    const current = [...this.list.children];
    if (current.length !== items.length || current.some((li, i) => li !== items[i])) this.list.replaceChildren(...items);
  }

  /** The entry of one alarm. */
  entry(alarm) {
    const kind = KIND[alarm.Type] || "site";
    const name = this.deviceName(alarm.MAC);
    const zone = alarm.ZoneName || this.zoneName(alarm.ZoneID) || "";
    const who = alarm.State === "resolved" ? alarm.ResolvedBy : alarm.AcknowledgedBy;
    const note = alarm.State === "resolved" ? alarm.ResolvedNote : alarm.AcknowledgedNote;
    const buttons = [];
    if (alarm.State === "open") {
      buttons.push(element("button", { type: "button", class: "alarm-acknowledge", onclick: () => this.change(alarm.AlarmID, "acknowledge") }, "Acknowledge"));
    }
    if (alarm.State !== "resolved") {
      buttons.push(element("button", { type: "button", class: "alarm-resolve", onclick: () => this.change(alarm.AlarmID, "resolve") }, "Resolve"));
    }
    return element(
      "li",
      {
        id: `alarm-${alarm.AlarmID}`,
        class: `alarm kind-${kind} state-${alarm.State}`,
        "data-state": alarm.State,
        "data-type": alarm.Type,
        "data-mac": alarm.MAC || "",
      },
      element(
        "div",
        { class: "alarm-head" },
        element("span", { class: `tag alarm-${kind}` }, LABEL[alarm.Type] || alarm.Type),
        // An occupancy alarm is about a zone: no device to name.
        alarm.MAC ? element("button", { type: "button", class: "event-mac link", title: name ? `${alarm.MAC}: inspect this device` : "inspect this device", onclick: () => this.onMac(alarm.MAC) }, name || alarm.MAC) : null,
        zone ? element("span", { class: "alarm-zone" }, zone) : null,
        element("time", { datetime: alarm.RaisedAt }, time(alarm.RaisedAt)),
      ),
      element(
        "div",
        { class: "alarm-foot" },
        element("span", { class: "alarm-state" }, who ? `${alarm.State} by ${who}` : alarm.State),
        note ? element("span", { class: "alarm-note", title: note }, note) : null,
        ...buttons,
      ),
    );
  }

  /** The registry changed for the devices `macs` (a Set): their entries are named again. */
  renamed(macs) {
    if ([...this.alarms.values()].some((a) => macs.has(a.MAC))) this.render();
  }

  /** A short beep for a new alarm, when the sound is on; at most one a second. */
  beep() {
    const now = Date.now();
    if (!this.sound || now - this.lastBeep < BEEP_EVERY_MS) return;
    this.lastBeep = now;
    try {
      const Audio = window.AudioContext || window.webkitAudioContext;
      if (!Audio) return;
      this.audio ||= new Audio();
      const tone = this.audio.createOscillator();
      const gain = this.audio.createGain();
      tone.frequency.value = 880;
      gain.gain.setValueAtTime(0.15, this.audio.currentTime);
      gain.gain.exponentialRampToValueAtTime(0.001, this.audio.currentTime + 0.25);
      tone.connect(gain).connect(this.audio.destination);
      tone.start();
      tone.stop(this.audio.currentTime + 0.25);
    } catch {
      // No sound here (a browser without audio, or one that has not allowed it yet).
    }
  }

  /** Turns the sound on or off, for this browser from now on. */
  setSound(on) {
    this.sound = on;
    localStorage.setItem(SOUND_KEY, on ? "on" : "off");
    this.showSound();
  }

  showSound() {
    const button = $("alarm-sound");
    button.textContent = this.sound ? "Sound on" : "Sound off";
    button.setAttribute("aria-pressed", String(this.sound));
  }

  message(text, kind = "") {
    const node = $("alarm-message");
    node.textContent = text;
    node.className = `message ${kind}`;
  }

  /** The alarms as the console knows them, for tests. */
  states() {
    return Object.fromEntries([...this.alarms.values()].map((a) => [a.AlarmID, a.State]));
  }

  reset() {
    clearTimeout(this.drawTimer);
    this.drawTimer = null;
    this.alarms.clear();
    this.drawn.clear();
    this.list.replaceChildren();
    $("alarm-count").textContent = "";
    $("alarm-empty").hidden = false;
    this.message("");
  }
}
