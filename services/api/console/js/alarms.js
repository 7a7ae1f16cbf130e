// The alarm list beside the timeline: one alarm per condition (type, device, zone), as the
// alarm-management standard ISA-18.2 has it, each with how many times it was raised and whether
// its condition still holds (active) or cleared. Open ones first, then acknowledged ones, then
// those resolved while the page is open, each newest first, with Acknowledge and Resolve buttons
// (the note field above the list goes with the next of them). Filters (active, cleared), a
// grouping by zone with Acknowledge all and Shelve 1 h for each zone, the shelved zones and
// devices with Take back, the new alarms of the last 10 minutes against the standard's flood mark
// of 10, and a button that gives the list the whole side of the page. Read from GET /v3/alarms
// and GET /v3/alarms/shelves at sign-in, then kept current from the live event stream: an alarm
// event opens an alarm or counts on the one of its condition (and a new one beeps, unless the
// sound is turned off), ALARM_CLEARED and a zone's occupancy events clear one, ALARM_ACKNOWLEDGED
// and ALARM_RESOLVED change one. Entries carry stable ids (alarm-<AlarmID>) and data attributes
// for tests.

import { ALARM_NAMES, describe, element, time } from "./panels.js";

const $ = (id) => document.getElementById(id);

/** The event types that raise an alarm. */
export const ALARM_TYPES = new Set(Object.keys(ALARM_NAMES));
const CHANGES = new Set(["ALARM_ACKNOWLEDGED", "ALARM_RESOLVED"]);
const OCCUPANCY = ["ZONE_OCCUPANCY_EXCEEDED", "ZONE_OCCUPANCY_BELOW", "ZONE_OCCUPANCY_RESTORED"];
const ORDER = { open: 0, acknowledged: 1, resolved: 2 };
// Occupancy alarms are drawn as site alarms: a zone over its limit or under its head count.
const KIND = { SITE_ALARM: "site", DEVICE_ALARM: "device", ZONE_DWELL_EXCEEDED: "dwell", ZONE_OCCUPANCY_EXCEEDED: "site", ZONE_OCCUPANCY_BELOW: "site", DEVICE_OFFLINE: "offline" };
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
// The alarm-management standard's flood: more than 10 new alarms in 10 minutes per operator.
const FLOOD_WINDOW_MS = 10 * 60 * 1000;
const FLOOD_MARK = 10;
// How long the Shelve button of a zone shelves it.
const SHELVE_SECONDS = 3600;

/** What an alarm is about: its type, device and zone. */
function conditionOf(type, mac, zone) {
  return `${type}|${mac || ""}|${String(zone || "").toUpperCase()}`;
}

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
    this.shelves = []; // the shelves as last read
    this.lastBeep = 0;
    this.audio = null;
    this.sound = localStorage.getItem(SOUND_KEY) !== "off";
    this.drawn = new Map(); // AlarmID or group → [signature, li]
    this.drawTimer = null;
    $("alarm-sound").addEventListener("click", () => this.setSound(!this.sound));
    $("alarm-filter").addEventListener("change", () => this.render());
    $("alarm-group").addEventListener("change", () => this.render());
    $("alarm-enlarge").addEventListener("click", () => this.enlarge(!document.body.classList.contains("alarms-large")));
    // The flood figure moves on with the clock, not only with events.
    setInterval(() => this.showFlood(), 30_000);
    this.showSound();
  }

  /** Reads the newest open and acknowledged alarms, the newest resolved ones, and the shelves. */
  async load() {
    const api = this.api();
    if (!api) return;
    try {
      for (const [state, limit] of [["open,acknowledged", KEPT], ["resolved", RESOLVED_SHOWN]]) {
        const answer = await api.request("GET", `/v3/alarms?${new URLSearchParams({ state, limit: String(limit) })}`);
        for (const alarm of answer.Alarms) this.merge(alarm);
      }
      this.shelves = await api.request("GET", "/v3/alarms/shelves");
      this.message("");
    } catch (e) {
      this.message(`Alarms could not be read: ${describe(e)}`, "error");
    }
    this.render();
  }

  /** The unresolved alarm of a condition, if the console knows one. */
  unresolved(condition) {
    for (const alarm of this.alarms.values()) {
      if (alarm.State !== "resolved" && conditionOf(alarm.Type, alarm.MAC, alarm.ZoneID) === condition) return alarm;
    }
    return null;
  }

  /** Whether the zone or the device is shelved now. */
  shelved(zone, mac) {
    const now = Date.now();
    return this.shelves.some((s) => Date.parse(s.Until) > now && ((zone && s.ZoneID === String(zone).toUpperCase()) || (mac && s.MAC === mac)));
  }

  /** An event of the live stream: a raise, the end of a condition, or a change of an alarm. */
  event(event) {
    const c = event.Content || {};
    const mac = event.Source?.MAC || "";
    if (ALARM_TYPES.has(event.Type)) {
      this.raised(event, c, mac);
    } else if (event.Type === "ALARM_CLEARED") {
      this.cleared(conditionOf(c.Type, mac, c.ZoneID), event.Timestamp);
    } else if (CHANGES.has(event.Type) && event.Content?.AlarmID) {
      this.merge(event.Content);
      this.renderSoon();
    }
    // An occupancy event ends the zone's occupancy alarms of the other limits.
    if (OCCUPANCY.includes(event.Type)) {
      for (const type of OCCUPANCY.slice(0, 2)) if (type !== event.Type) this.cleared(conditionOf(type, "", c.ZoneID), event.Timestamp);
    }
  }

  /** An alarm event: it counts on the unresolved alarm of its condition, or opens one. */
  raised(event, c, mac) {
    if (this.shelved(c.ZoneID, mac) || this.alarms.has(event.EventID)) return;
    const known = this.unresolved(conditionOf(event.Type, mac, c.ZoneID));
    if (known) {
      if (known.LastEventID === event.EventID) return;
      this.alarms.set(known.AlarmID, {
        ...known,
        Count: (known.Count || 1) + 1,
        LastRaisedAt: event.Timestamp,
        LastEventID: event.EventID,
        Active: true,
        ClearedAt: null,
      });
    } else {
      this.merge({
        AlarmID: event.EventID,
        Type: event.Type,
        MAC: mac,
        ZoneID: c.ZoneID || null,
        ZoneName: c.ZoneName || null,
        CollisionID: c.CollisionID || null,
        RaisedAt: event.Timestamp,
        Count: 1,
        LastRaisedAt: event.Timestamp,
        LastEventID: event.EventID,
        Active: true,
        ClearedAt: null,
        State: "open",
      });
      this.beep();
    }
    this.renderSoon();
  }

  /** The condition ended at `at`: its alarm is cleared, unless raised again since. */
  cleared(condition, at) {
    const alarm = this.unresolved(condition);
    if (!alarm || String(alarm.LastRaisedAt) > String(at)) return;
    this.alarms.set(alarm.AlarmID, { ...alarm, Active: false, ClearedAt: at });
    this.renderSoon();
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
    const count = Math.max(known?.Count || 1, alarm.Count || 1);
    this.alarms.set(alarm.AlarmID, { ...known, ...alarm, Count: count });
  }

  /** Acknowledges (`action` "acknowledge") or resolves alarm `id` with the note typed, if any. */
  async change(id, action) {
    const api = this.api();
    if (!api) return;
    const note = this.note();
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

  /** Acknowledges every open alarm of zone `zone` at once, with the note typed, if any. */
  async acknowledgeZone(zone) {
    const api = this.api();
    if (!api) return;
    const note = this.note();
    try {
      const answer = await api.request("POST", "/v3/alarms/acknowledge", { ZoneID: zone, State: ["open"], ...(note ? { Note: note } : {}) });
      $("alarm-note").value = "";
      for (const id of answer.AlarmIDs) this.merge(await api.request("GET", `/v3/alarms/${encodeURIComponent(id)}`));
      this.message(`${answer.Changed} acknowledged.`, "ok");
    } catch (e) {
      this.message(describe(e), "error");
    }
    this.render();
  }

  /** Shelves zone `zone` for SHELVE_SECONDS with the note typed, or takes its shelf back. */
  async shelve(zone, on) {
    await this.shelveAt(`/v3/modules/zones/${encodeURIComponent(zone)}/shelve`, on);
  }

  /** Shelves what `path` names (a zone's or a device's shelve path), or takes its shelf back. */
  async shelveAt(path, on) {
    const api = this.api();
    if (!api) return;
    try {
      if (on) {
        const note = this.note();
        await api.request("POST", path, { Seconds: SHELVE_SECONDS, ...(note ? { Note: note } : {}) });
        $("alarm-note").value = "";
      } else {
        await api.request("DELETE", path);
      }
      this.shelves = await api.request("GET", "/v3/alarms/shelves");
      this.message("");
    } catch (e) {
      this.message(describe(e), "error");
    }
    this.render();
  }

  /** The note typed, if any. */
  note() {
    return $("alarm-note").value.trim();
  }

  /** Gives the alarm list the whole side of the page (`on`), or its share back. */
  enlarge(on) {
    document.body.classList.toggle("alarms-large", on);
    $("alarm-enlarge").setAttribute("aria-pressed", String(on));
    $("alarm-enlarge").textContent = on ? "Smaller" : "Enlarge";
  }

  /** The alarms the filter keeps, in their order: open first, then acknowledged, then resolved. */
  selected() {
    const filter = $("alarm-filter").value;
    const all = [...this.alarms.values()].sort(
      (a, b) => ORDER[a.State] - ORDER[b.State] || String(b.LastRaisedAt || b.RaisedAt).localeCompare(String(a.LastRaisedAt || a.RaisedAt)),
    );
    const active = all.filter((a) => a.State !== "resolved");
    const resolved = all.filter((a) => a.State === "resolved");
    // Forget alarms beyond those kept, so a long session does not grow without end.
    for (const gone of [...active.splice(KEPT), ...resolved.slice(RESOLVED_SHOWN)]) this.alarms.delete(gone.AlarmID);
    const keeps = (a) => filter === "all" || (filter === "active") === (a.Active !== false);
    return { active, shown: [...active.slice(0, SHOWN), ...resolved.slice(0, RESOLVED_SHOWN)].filter(keeps) };
  }

  /** Draws the list, the counts, the shelves and the flood figure. */
  render() {
    const { active, shown } = this.selected();
    const open = active.filter((a) => a.State === "open").length;
    const cleared = active.filter((a) => a.Active === false).length;
    $("alarm-count").textContent = `${open} open, ${active.length - open} acknowledged, ${cleared} cleared`;
    $("alarm-empty").hidden = shown.length > 0;
    this.showShelves();
    this.showFlood();
    const keep = new Set();
    const drawn = (id, signature, make) => {
      keep.add(id);
      const known = this.drawn.get(id);
      if (known && known[0] === signature) return known[1];
      const li = make();
      this.drawn.set(id, [signature, li]);
      return li;
    };
    const entry = (alarm) => {
      const signature = [alarm.State, alarm.AcknowledgedBy, alarm.ResolvedBy, alarm.Count, alarm.Active, this.deviceName(alarm.MAC)].join("|");
      return drawn(alarm.AlarmID, signature, () => this.entry(alarm));
    };
    let items;
    if ($("alarm-group").checked) {
      const groups = new Map();
      for (const alarm of shown) {
        const zone = alarm.ZoneID || "";
        if (!groups.has(zone)) groups.set(zone, []);
        groups.get(zone).push(alarm);
      }
      const named = [...groups.entries()].map(([zone, alarms]) => [zone, this.zoneLabel(alarms[0]), alarms]);
      named.sort((a, b) => (a[0] ? 0 : 1) - (b[0] ? 0 : 1) || a[1].localeCompare(b[1]));
      items = named.flatMap(([zone, label, alarms]) => {
        const open = alarms.filter((a) => a.State === "open").length;
        const shelved = this.shelved(zone, null);
        const head = drawn(`group-${zone}`, [label, alarms.length, open, shelved].join("|"), () => this.groupHead(zone, label, alarms.length, open, shelved));
        return [head, ...alarms.map(entry)];
      });
    } else {
      items = shown.map(entry);
    }
    for (const id of [...this.drawn.keys()]) if (!keep.has(id)) this.drawn.delete(id);
    // Only when the order or the entries changed: a click on a button is never lost to a redraw.
    const current = [...this.list.children];
    if (current.length !== items.length || current.some((li, i) => li !== items[i])) this.list.replaceChildren(...items);
  }

  /** The name an alarm's zone goes by. */
  zoneLabel(alarm) {
    return alarm.ZoneName || this.zoneName(alarm.ZoneID) || (alarm.ZoneID ? alarm.ZoneID.slice(0, 8) : "No zone (devices offline)");
  }

  /** The head of a zone's group: its name and counts, Acknowledge all and Shelve. */
  groupHead(zone, label, count, open, shelved) {
    const buttons = [];
    if (zone && open) {
      buttons.push(element("button", { type: "button", class: "alarm-acknowledge-zone", onclick: () => this.acknowledgeZone(zone) }, `Acknowledge ${open}`));
    }
    if (zone) {
      buttons.push(element("button", { type: "button", class: "alarm-shelve", title: shelved ? "take the shelving back" : "no alarm from this zone for an hour (the note typed goes with it)", onclick: () => this.shelve(zone, !shelved) }, shelved ? "Unshelve" : "Shelve 1 h"));
    }
    return element(
      "li",
      { id: `alarm-group-${zone || "none"}`, class: "alarm-group", "data-zone-id": zone },
      element("span", { class: "alarm-group-name", title: label }, label),
      element("span", { class: "dim" }, `${count}`),
      ...buttons,
    );
  }

  /** The entry of one alarm. */
  entry(alarm) {
    const kind = KIND[alarm.Type] || "site";
    const name = this.deviceName(alarm.MAC);
    const zone = alarm.ZoneID || alarm.ZoneName ? this.zoneLabel(alarm) : "";
    const who = alarm.State === "resolved" ? alarm.ResolvedBy : alarm.AcknowledgedBy;
    const note = alarm.State === "resolved" ? alarm.ResolvedNote : alarm.AcknowledgedNote;
    const active = alarm.Active !== false;
    const buttons = [];
    if (alarm.State === "open") {
      buttons.push(element("button", { type: "button", class: "alarm-acknowledge", onclick: () => this.change(alarm.AlarmID, "acknowledge") }, "Acknowledge"));
    }
    if (alarm.State !== "resolved") {
      buttons.push(element("button", { type: "button", class: "alarm-resolve", onclick: () => this.change(alarm.AlarmID, "resolve") }, "Resolve"));
    }
    const count = alarm.Count > 1 ? element("span", { class: "alarm-times", title: `raised ${alarm.Count} times, last at ${time(alarm.LastRaisedAt)}` }, `×${alarm.Count}`) : null;
    const condition = alarm.State === "resolved" ? null : element("span", { class: `alarm-condition ${active ? "active" : "cleared"}`, title: active ? "its condition holds" : `cleared at ${time(alarm.ClearedAt)}` }, active ? "active" : "cleared");
    return element(
      "li",
      {
        id: `alarm-${alarm.AlarmID}`,
        class: `alarm kind-${kind} state-${alarm.State}${active ? "" : " cleared"}`,
        "data-state": alarm.State,
        "data-type": alarm.Type,
        "data-mac": alarm.MAC || "",
        "data-count": String(alarm.Count || 1),
        "data-active": String(active),
      },
      element(
        "div",
        { class: "alarm-head" },
        element("span", { class: `tag alarm-${kind}` }, ALARM_NAMES[alarm.Type] || alarm.Type),
        // An occupancy alarm is about a zone: no device to name.
        alarm.MAC ? element("button", { type: "button", class: "event-mac link", title: name ? `${name} (${alarm.MAC}): inspect this device` : "inspect this device", onclick: () => this.onMac(alarm.MAC) }, name || alarm.MAC) : null,
        zone ? element("span", { class: "alarm-zone", title: zone }, zone) : null,
        count,
        element("time", { datetime: alarm.RaisedAt, title: `raised at ${alarm.RaisedAt}` }, time(alarm.LastRaisedAt || alarm.RaisedAt)),
      ),
      element(
        "div",
        { class: "alarm-foot" },
        condition,
        element("span", { class: "alarm-state" }, who ? `${alarm.State} by ${who}` : alarm.State),
        note ? element("span", { class: "alarm-note", title: note }, note) : null,
        ...buttons,
      ),
    );
  }

  /** The zones and devices shelved now, each with Take back. */
  showShelves() {
    const now = Date.now();
    const shelves = this.shelves.filter((s) => Date.parse(s.Until) > now);
    const node = $("alarm-shelves");
    node.hidden = shelves.length === 0;
    node.replaceChildren(
      element("span", { class: "dim" }, "Shelved:"),
      ...shelves.map((s) => {
        const what = s.ZoneID ? this.zoneName(s.ZoneID) || s.ZoneID.slice(0, 8) : this.deviceName(s.MAC) || s.MAC;
        const path = s.ZoneID ? `/v3/modules/zones/${encodeURIComponent(s.ZoneID)}/shelve` : `/v3/devices/${encodeURIComponent(s.MAC)}/shelve`;
        const take = element("button", { type: "button", class: "small", onclick: () => this.shelveAt(path, false) }, "Take back");
        return element("span", { class: "shelf", "data-zone-id": s.ZoneID || "", "data-mac": s.MAC || "", title: s.Note || "" }, `${what} until ${time(s.Until)}`, take);
      }),
    );
  }

  /** New alarms in the last 10 minutes, against the standard's flood mark. */
  showFlood() {
    const since = Date.now() - FLOOD_WINDOW_MS;
    const fresh = [...this.alarms.values()].filter((a) => Date.parse(a.RaisedAt) >= since).length;
    const node = $("alarm-flood");
    node.textContent = `${fresh} new in 10 min`;
    node.dataset.count = String(fresh);
    node.classList.toggle("flood", fresh > FLOOD_MARK);
    node.title = `new alarms in the last 10 minutes; more than ${FLOOD_MARK} per operator is a flood (ISA-18.2)`;
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
    this.shelves = [];
    this.list.replaceChildren();
    $("alarm-count").textContent = "";
    $("alarm-empty").hidden = false;
    this.message("");
  }
}
