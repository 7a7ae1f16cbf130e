// The side panels: the zone list (search, occupancy, active and locked state, actions), the live
// event timeline, the form that creates a zone from typed GeometryType and GeometryData, and the
// detail pane's tabs (zone, device, MQTT). Elements carry stable ids and data attributes
// (zone-<ZoneID>, event-<EventID>) for tests.

const $ = (id) => document.getElementById(id);

/** A new element with `attributes` (`on<event>` ones are listeners) and `children`. */
export function element(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children) if (child !== null && child !== undefined) node.append(child);
  return node;
}

/** A number of seconds as a person reads it: "45 s", "12 min 5 s", "2 h 3 min". */
export function duration(seconds) {
  const s = Math.round(Number(seconds) || 0);
  if (s < 60) return `${s} s`;
  if (s < 3600) return s % 60 ? `${Math.floor(s / 60)} min ${s % 60} s` : `${s / 60} min`;
  const minutes = Math.floor((s % 3600) / 60);
  return minutes ? `${Math.floor(s / 3600)} h ${minutes} min` : `${s / 3600} h`;
}

/** An API error as shown everywhere: `422 invalid_data: <the server's message>`. */
export function describe(error) {
  return error.status ? `${error.status} ${error.kind}: ${error.message}` : error.message;
}

// One formatter for every entry: toLocaleTimeString makes a new one per call, which is slow.
const CLOCK = new Intl.DateTimeFormat([], { hour12: false, hour: "2-digit", minute: "2-digit", second: "2-digit" });

/** The time of day of an ISO time, to the millisecond, in the browser's time zone. */
export const time = (iso) => {
  const t = new Date(iso);
  return Number.isNaN(t.getTime()) ? "" : CLOCK.format(t) + `.${String(t.getMilliseconds()).padStart(3, "0")}`;
};

/** The zone list. `actions` has activate(id, bool), lock(id, bool), remove(entry), focus(id). */
export class ZoneList {
  constructor(actions) {
    this.actions = actions;
    this.list = $("zone-list");
    this.search = $("zone-search");
    this.count = $("zone-count");
    this.zones = [];
    this.occupants = new Map();
    this.kinds = new Map();
    this.selected = null;
    this.search.addEventListener("input", () => this.render());
  }

  update(zones, occupants, kinds) {
    this.zones = zones;
    this.occupants = occupants;
    this.kinds = kinds;
    this.render();
  }

  /**
   * Draws the list. A zone whose entry would look and act the same keeps its node, and only the
   * entries that differ are replaced or moved: the list is drawn again every few seconds and on
   * events, and a node replaced under the pointer between press and release loses the click
   * (and the keyboard focus).
   */
  render() {
    const needle = this.search.value.trim().toLowerCase();
    const shown = this.zones
      .filter((z) => !needle || `${z.Name} ${z.ZoneID} ${z.GeometryType}`.toLowerCase().includes(needle))
      .sort((a, b) => (a.Name || "").localeCompare(b.Name || "") || a.ZoneID.localeCompare(b.ZoneID));
    this.count.textContent = needle ? `${shown.length} of ${this.zones.length}` : `${this.zones.length}`;
    const drawn = new Map([...this.list.children].filter((li) => li.dataset.shows).map((li) => [li.dataset.shows, li]));
    const items = shown.map((zone) => {
      const entry = this.entry(zone);
      const shows = JSON.stringify(entry);
      let node = drawn.get(shows);
      if (!node) {
        node = this.item(entry);
        node.dataset.shows = shows;
      }
      return node;
    });
    items.forEach((node, i) => {
      const at = this.list.children[i];
      if (at !== node) this.list.insertBefore(node, at || null);
    });
    while (this.list.children.length > items.length) this.list.lastElementChild.remove();
    if (!items.length) this.list.append(element("li", { class: "empty" }, this.zones.length ? "No zone matches." : "No zones yet."));
  }

  /**
   * Everything a zone's entry shows and acts on, and nothing else: the entry is drawn from it
   * alone, so two entries drawn from equal ones are interchangeable.
   */
  entry(zone) {
    const { ZoneID, Name, GeometryType, AlertLevel, Active, IsGeometryLocked, MobileOriginSource } = zone;
    return {
      ZoneID, Name, GeometryType, AlertLevel, Active, IsGeometryLocked, MobileOriginSource,
      inside: this.occupants.get(ZoneID)?.size || 0,
      kind: this.kinds.get(ZoneID) || "log",
      selected: this.selected === ZoneID,
    };
  }

  /** The list item of `entry` (see `entry`). */
  item(entry) {
    const { inside, kind } = entry;
    const button = (text, title, onclick, cls) =>
      element("button", { type: "button", title, class: cls, onclick: (e) => { e.stopPropagation(); onclick(); } }, text);
    return element(
      "li",
      {
        id: `zone-${entry.ZoneID}`,
        class: `zone kind-${kind}${inside ? " occupied" : ""}${entry.selected ? " selected" : ""}`,
        "data-zone-id": entry.ZoneID,
        "data-active": String(entry.Active),
        "data-locked": String(entry.IsGeometryLocked),
        "data-occupants": String(inside),
        onclick: () => {
          this.selected = entry.ZoneID;
          this.render();
          this.actions.focus(entry.ZoneID);
        },
      },
      element(
        "div",
        { class: "zone-head" },
        element("span", { class: "swatch" }),
        element("span", { class: "zone-name" }, entry.Name || "(no name)"),
        element("span", { class: "zone-occupants", title: "devices inside" }, inside ? `● ${inside}` : ""),
      ),
      element(
        "div",
        { class: "zone-meta" },
        `${entry.GeometryType} · level ${entry.AlertLevel}`,
        entry.Active ? null : element("span", { class: "tag" }, "inactive"),
        entry.IsGeometryLocked ? element("span", { class: "tag" }, "locked") : null,
        entry.MobileOriginSource ? element("span", { class: "tag" }, `follows ${entry.MobileOriginSource}`) : null,
      ),
      element(
        "div",
        { class: "zone-actions" },
        button(entry.Active ? "Deactivate" : "Activate", "POST activate/deactivate", () => this.actions.activate(entry.ZoneID, !entry.Active), "act-active"),
        button(entry.IsGeometryLocked ? "Unlock" : "Lock", "lock or unlock the geometry", () => this.actions.lock(entry.ZoneID, !entry.IsGeometryLocked), "act-lock"),
        button("Delete", "delete the zone", () => this.actions.remove(entry), "act-delete danger"),
      ),
    );
  }
}

/**
 * The live event timeline, newest first, at most `limit` entries; `onMac(mac)` inspects a device;
 * `deviceName(mac)` is a device's name in the registry (or null: it is shown by its MAC).
 */
/** What each alarm type is called in the console. */
export const ALARM_NAMES = {
  SITE_ALARM: "site alarm",
  DEVICE_ALARM: "device alarm",
  ZONE_DWELL_EXCEEDED: "stayed too long",
  ZONE_OCCUPANCY_EXCEEDED: "over its limit",
  ZONE_OCCUPANCY_BELOW: "under its head count",
  DEVICE_OFFLINE: "offline",
};

export class Timeline {
  constructor(limit = 300, onMac = () => {}, deviceName = () => null) {
    this.limit = limit;
    this.onMac = onMac;
    this.deviceName = deviceName;
    this.list = $("timeline");
    this.seen = new Set();
    this.entries = [];
    this.paused = false;
  }

  /** Adds an event envelope, unless one with its EventID is shown already. */
  add(event, zoneName) {
    const id = event.EventID || `${event.Type}-${event.LocalTimestamp}-${Math.random()}`;
    if (this.seen.has(id)) return false;
    this.seen.add(id);
    const c = event.Content || {};
    const mac = event.Source?.MAC || "";
    const name = c.ZoneName || zoneName(c.ZoneID) || (c.ZoneID || "").slice(0, 8);
    let what;
    switch (event.Type) {
      case "ZONE_ENTER":
        what = `entered ${name}`;
        break;
      case "ZONE_EXIT":
        what = `left ${name} (${c.Reason || "position"})`;
        break;
      case "ZONE_INFO":
        what = `${name}: ${c.Message || "info"}`;
        break;
      case "ZONE_OCCUPANCY_EXCEEDED":
        what = `${name} over its limit: ${c.Count} inside (at most ${c.MaxOccupancy})`;
        break;
      case "ZONE_OCCUPANCY_BELOW":
        what = `${name} under its head count: ${c.Count} inside (at least ${c.MinOccupancy})`;
        break;
      case "ZONE_OCCUPANCY_RESTORED":
        what = `${name} within its limits: ${c.Count} inside`;
        break;
      case "DEVICE_OFFLINE":
        what = `went silent (offline after ${duration(c.SilentSeconds)})`;
        break;
      case "DEVICE_ONLINE":
        what = `back online after ${duration(c.SilentSeconds)}`;
        break;
      case "ZONE_DWELL_EXCEEDED":
        what = `stayed in ${name} ${duration(c.DwellSeconds)} (limit ${duration(c.MaxDwellSeconds)})`;
        break;
      case "SITE_ALARM":
        what = `SITE ALARM in ${name} (level ${c.AlertLevel})`;
        break;
      case "DEVICE_ALARM":
        what = `device alarm in ${name} (level ${c.AlertLevel})`;
        break;
      case "ALARM_CLEARED":
        what = c.ZoneID ? `${ALARM_NAMES[c.Type] || c.Type} in ${name} cleared: left the zone` : `${ALARM_NAMES[c.Type] || c.Type} cleared: back online`;
        break;
      case "ALARM_ACKNOWLEDGED":
        what = `${ALARM_NAMES[c.Type] || c.Type}${c.ZoneID ? ` in ${name}` : ""} acknowledged by ${c.AcknowledgedBy}`;
        break;
      case "ALARM_RESOLVED":
        what = `${ALARM_NAMES[c.Type] || c.Type}${c.ZoneID ? ` in ${name}` : ""} resolved by ${c.ResolvedBy}`;
        break;
      default:
        what = event.Type;
    }
    const alarm = (event.Type === "ZONE_ENTER" || event.Type === "ZONE_DWELL_EXCEEDED") && c.Alarm && c.Alarm !== "log" ? element("span", { class: `tag alarm-${c.Alarm}` }, c.Alarm) : null;
    const li = element(
      "li",
      {
        id: `event-${id}`,
        class: `event type-${event.Type}`,
        "data-type": event.Type,
        "data-mac": mac,
        "data-zone-id": c.ZoneID || "",
        "data-reason": c.Reason || "",
      },
      element("time", { datetime: event.Timestamp }, time(event.Timestamp)),
      element("button", { type: "button", class: "event-mac link", onclick: () => this.onMac(mac) }),
      element("span", { class: "event-what" }, what),
      alarm,
    );
    this.name(li);
    this.entries.unshift(li);
    this.list.prepend(li);
    $("timeline-empty").hidden = true;
    // The EventIDs kept are those shown: a long session does not grow without end.
    while (this.entries.length > this.limit) {
      const gone = this.entries.pop();
      gone.remove();
      this.seen.delete(gone.id.slice("event-".length));
    }
    return true;
  }

  /** Names the device of entry `li`: its name (its MAC as the tooltip), or its MAC. */
  name(li) {
    const mac = li.dataset.mac;
    const name = this.deviceName(mac) || "";
    if (li.dataset.name === name) return;
    li.dataset.name = name;
    const button = li.querySelector(".event-mac");
    button.textContent = name || mac;
    button.classList.toggle("named", Boolean(name));
    button.title = name ? `${mac}: inspect this device` : "inspect this device";
  }

  /** The registry changed for the devices `macs` (a Set): their entries are named again. */
  renamed(macs) {
    for (const li of this.entries) if (macs.has(li.dataset.mac)) this.name(li);
  }

  size() {
    return this.entries.length;
  }
}

/** Example GeometryData for each GeometryType, for the create form. */
export const EXAMPLES = {
  sphere: [[5, 5, 1.5], [2, 0, 0]],
  circle: [[0, 8, 0], [1.5, 0, 0]],
  cuboid: [[-8, -4, 0], [4, 3, 2.5], [1, 0.3, 0], [-0.3, 1, 0], [0, 0, 1]],
  square: [[8, -6, 0], [5, 3, 0], [1, 0, 0], [0, 1, 0]],
  cylinder: [[-4, 6, 0], [0, 0, 1], [3, 1.2, 0]],
  polygon: [[0, -8, 0], [4, -8, 0], [5, -4, 0], [1, -3, 0], [2.5, 0, 0], [0, 0, 1]],
};

/**
 * The create-a-zone form: Name, GeometryType, GeometryData (JSON), AlertLevel, Active.
 * `create(input)` sends it; `geometryChanged({GeometryType, GeometryData} or null)` hears every
 * edit of the geometry (null while GeometryData is not JSON).
 */
export class CreateForm {
  constructor(create, geometryChanged = () => {}) {
    this.form = $("create-form");
    this.type = $("create-type");
    this.data = $("create-data");
    this.message = $("create-message");
    this.type.addEventListener("change", () => this.example());
    $("create-example").addEventListener("click", () => this.example(true));
    const changed = () => geometryChanged(this.geometry());
    this.type.addEventListener("change", changed);
    this.data.addEventListener("input", changed);
    $("create-example").addEventListener("click", changed);
    this.form.addEventListener("submit", async (e) => {
      e.preventDefault();
      this.say("", "");
      let input;
      try {
        input = this.input();
      } catch (error) {
        this.say(error.message, "error");
        return;
      }
      const button = this.form.querySelector("button[type=submit]");
      button.disabled = true;
      try {
        const zone = await create(input);
        this.say(`Created ${zone.Name || "zone"} (${zone.ZoneID}).`, "ok");
        this.form.dataset.created = zone.ZoneID;
      } catch (error) {
        this.say(describe(error), "error");
      } finally {
        button.disabled = false;
      }
    });
  }

  example(force = false) {
    if (force || !this.data.value.trim() || this.data.dataset.example === "true") {
      this.data.value = JSON.stringify(EXAMPLES[this.type.value] || []);
      this.data.dataset.example = "true";
    }
  }

  /** Puts a drawn shape's GeometryType and GeometryData into the form; answers the data's text. */
  fill({ GeometryType, GeometryData }) {
    this.type.value = GeometryType;
    this.data.value = JSON.stringify(GeometryData);
    this.data.dataset.example = "false";
    this.say("", "");
    return this.data.value;
  }

  /** The GeometryData text the form holds. */
  text() {
    return this.data.value;
  }

  /** The form's geometry, or null while GeometryData is not JSON. */
  geometry() {
    try {
      return { GeometryType: this.type.value, GeometryData: JSON.parse(this.data.value) };
    } catch {
      return null;
    }
  }

  /** The ZoneInput the form describes; throws when GeometryData is not JSON. */
  input() {
    let data;
    try {
      data = JSON.parse(this.data.value);
    } catch (e) {
      throw new Error(`GeometryData is not JSON: ${e.message}`);
    }
    const input = { Name: $("create-name").value, GeometryType: this.type.value, GeometryData: data };
    const level = $("create-level").value.trim();
    // Sent as typed (a number when it reads as one), so the server's rules and messages apply.
    if (level !== "") input.AlertLevel = Number.isNaN(Number(level)) ? level : Number(level);
    input.Active = $("create-active").checked;
    return input;
  }

  say(text, kind) {
    this.message.textContent = text;
    this.message.className = `message ${kind}`;
    this.message.dataset.kind = kind;
  }
}

/**
 * The detail pane beside the view: one of its tabs (zone, device, mqtt) at a time, opened by
 * `show(tab)` and closed with its × button. `onShow(tab)` and `onClose()` are told.
 */
export class DetailPane {
  constructor(onShow = () => {}, onClose = () => {}) {
    this.pane = $("detail");
    this.tabs = [...document.querySelectorAll("[data-detail-tab]")];
    this.onShow = onShow;
    this.onClose = onClose;
    this.current = null;
    for (const tab of this.tabs) tab.addEventListener("click", () => this.show(tab.dataset.detailTab));
    $("detail-close").addEventListener("click", () => this.close());
  }

  show(which) {
    this.current = which;
    this.pane.hidden = false;
    this.pane.dataset.tab = which;
    for (const tab of this.tabs) tab.setAttribute("aria-selected", String(tab.dataset.detailTab === which));
    for (const tab of this.tabs) $(`detail-${tab.dataset.detailTab}`).hidden = tab.dataset.detailTab !== which;
    this.onShow(which);
  }

  close() {
    this.current = null;
    this.pane.hidden = true;
    this.onClose();
  }

  /** Whether `which` is the tab on show. */
  showing(which) {
    return this.current === which;
  }
}

/** Shows a transient notice (an action's outcome or error) at the top of the page. */
export function notice(text, kind = "error") {
  const box = $("notice");
  box.textContent = text;
  box.className = `notice ${kind}`;
  box.hidden = false;
  box.dataset.kind = kind;
  clearTimeout(notice.timer);
  notice.timer = setTimeout(() => (box.hidden = true), kind === "error" ? 8000 : 3000);
}
