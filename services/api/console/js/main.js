// The console's wiring: sign-in, the zone list kept current, the device registry kept current
// (device names) and the device search, the event and position streams, occupancy from
// ZONE_ENTER/ZONE_EXIT, the detail pane (zone editor and visits, device inspector, MQTT
// connections), the alarm list, drawing zones on the floor, and the test hook
// `window.zonecastConsole`.

import { Api, ApiError, forgetCredential, signInWithClient, storeCredential, storedCredential } from "./api.js";
import { openStream } from "./sse.js";
import { SiteView } from "./scene.js";
import { alarmKind } from "./zone-look.js";
import { CreateForm, DetailPane, Timeline, ZoneList, describe, notice } from "./panels.js";
import { DrawTool } from "./draw.js";
import { ZoneEditor } from "./editor.js";
import { VisitReport } from "./visits.js";
import { Inspector, pickDevices } from "./inspector.js";
import { Connections } from "./connections.js";
import { DeviceRegistry, REFRESH_MS } from "./devices.js";
import { DeviceSearch } from "./search.js";
import { AlarmList } from "./alarms.js";

const $ = (id) => document.getElementById(id);
const ZONE_REFRESH_MS = 5000;
// After an event changed a zone's occupants, a zone list read this soon may predate it.
const EVENT_WINS_MS = 3000;

const state = {
  api: null,
  zones: [],
  occupants: new Map(), // ZoneID → Set(MAC)
  touched: new Map(), // ZoneID → when an event last changed its occupants
  devices: new Map(), // MAC → its newest position {MAC, Position, Timestamp}
  selected: null, // the ZoneID shown in the detail pane
  thresholds: { site: 8, device: 4 },
  streams: { events: "closed", positions: "closed" },
  events: 0,
  positions: 0,
  abort: null,
  refreshTimer: null,
  registryTimer: null,
  fitted: false,
  zonesLoaded: 0,
  zoneReads: 0, // readings of the zone list started
  zoneReadShown: 0, // the latest started of those shown
};

const view = new SiteView($("view"), $("tooltip"));
const timeline = new Timeline(300, (mac) => inspectDevice(mac), (mac) => registry.nameOf(mac));
const zoneName = (id) => state.zones.find((z) => z.ZoneID === id)?.Name;
const api = () => state.api;
// Who shows a device's name hears which names changed after each reading of the registry.
const registry = new DeviceRegistry(api, (macs) => {
  const changed = new Set(macs);
  view.namesChanged();
  timeline.renamed(changed);
  alarms.renamed(changed);
  visits.renamed(changed);
  inspector.registryChanged(changed);
});
view.setDeviceNames((mac) => registry.nameOf(mac));
const alarms = new AlarmList(api, (mac) => registry.nameOf(mac), (mac) => inspectDevice(mac), zoneName);

async function act(what, call) {
  try {
    await call();
    notice(what, "ok");
  } catch (e) {
    notice(describe(e));
  }
  await refreshZones();
}

const zoneList = new ZoneList({
  activate: (id, on) => act(on ? "Zone activated." : "Zone deactivated.", () => state.api.setActive(id, on)),
  lock: (id, on) => act(on ? "Geometry locked." : "Geometry unlocked.", () => state.api.setLocked(id, on)),
  remove: (entry) => {
    if (confirm(`Delete zone ${entry.Name || entry.ZoneID}?`)) act("Zone deleted.", () => state.api.deleteZone(entry.ZoneID));
  },
  focus: (id) => {
    openZone(id);
    view.focus(id);
  },
});

const createForm = new CreateForm(
  async (input) => {
    const zone = await state.api.createZone(input);
    draw.clear();
    drawHint("", "");
    await refreshZones();
    return zone;
  },
  (geometry) => draw.formChanged(geometry),
);

function drawHint(text, kind) {
  const hint = $("draw-hint");
  hint.textContent = text;
  hint.className = `message ${kind}`;
  hint.dataset.kind = kind;
}

const draw = new DrawTool(view, createForm, drawHint, $("draw-height"), [...document.querySelectorAll("[data-draw]")]);
const connections = new Connections(api);
const detail = new DetailPane(
  (tab) => (tab === "mqtt" ? connections.start() : connections.stop()),
  () => {
    connections.stop();
    view.selectDevice(null);
  },
);
const editor = new ZoneEditor(api, () => refreshZones());
const visits = new VisitReport(api, zoneName, (mac) => registry.nameOf(mac));
const inspector = new Inspector({
  api,
  devices: state.devices,
  registry,
  zonesOf: (mac) =>
    state.zones.filter((z) => state.occupants.get(z.ZoneID)?.has(mac)).map((z) => ({ ZoneID: z.ZoneID, Name: z.Name })),
  openZone: (id) => openZone(id),
});

/** Shows zone `id` in the detail pane: its editor and its visit report. */
function openZone(id) {
  const zone = state.zones.find((z) => z.ZoneID === id);
  if (!zone) return;
  state.selected = id;
  zoneList.selected = id;
  zoneList.render();
  detail.show("zone");
  $("zone-none").hidden = true;
  $("zone-detail").hidden = false;
  editor.open(id);
  visits.show(id);
}

/** Shows device `mac` in the detail pane; it keeps its label in the view. */
function inspectDevice(mac) {
  detail.show("device");
  view.selectDevice(mac);
  inspector.inspect(mac);
}

const search = new DeviceSearch({
  api,
  registry,
  seen: () => state.devices.keys(),
  // As a click on it in the view, and the view turns about it.
  pick: (mac) => {
    inspectDevice(mac);
    view.focusDevice(mac);
  },
  refresh: () => refreshRegistry(),
});

/** Reads the device registry again (its writes are announced nowhere); the header says how it went. */
async function refreshRegistry() {
  try {
    await registry.refresh();
    const named = registry.devices.size;
    setStatus("devices", `${named} named device${named === 1 ? "" : "s"}`);
  } catch (e) {
    if (e.status !== 401) setStatus("devices", `devices: ${describe(e)}`, "bad");
  }
}

/**
 * `work` to be run at once, or, when it ran less than `every` ms ago, that long after it ran;
 * calls in between are merged into that one run. On a busy site events come by thousands a
 * second: the zone list and the timeline are drawn again a few times a second, not per event.
 */
function throttled(every, work) {
  let last = -Infinity;
  let timer = null;
  const run = () => {
    timer = null;
    last = performance.now();
    work();
  };
  return () => {
    if (timer) return;
    const wait = last + every - performance.now();
    if (wait <= 0) run();
    else timer = setTimeout(run, wait);
  };
}

const renderZonesSoon = throttled(1000, () => renderZones());
// Of the events that came since the timeline was last drawn, only as many as it shows are added:
// the older ones of a burst would leave it at once.
const unshown = [];
const showEventsSoon = throttled(500, () => {
  for (const event of unshown.splice(0).slice(-timeline.limit)) timeline.add(event, zoneName);
});

function renderZones() {
  const kinds = new Map(state.zones.map((z) => [z.ZoneID, z.Active ? alarmKind(z.AlertLevel, state.thresholds) : "inactive"]));
  zoneList.update(state.zones, state.occupants, kinds);
}

/** Reads the zone list; occupants come from CollidingDevices except where an event is newer. */
async function refreshZones() {
  if (!state.api) return;
  const readAt = Date.now();
  const read = ++state.zoneReads;
  try {
    const zones = await state.api.zones();
    // Readings overlap (the timer, every change made here, events of unknown zones): one that
    // was started before the one shown, and answered after it, would show an older list.
    if (read < state.zoneReadShown) return;
    state.zoneReadShown = read;
    const now = Date.now();
    const occupants = new Map();
    for (const zone of zones) {
      const touched = state.touched.get(zone.ZoneID) || 0;
      occupants.set(
        zone.ZoneID,
        now - touched < EVENT_WINS_MS && state.occupants.has(zone.ZoneID)
          ? state.occupants.get(zone.ZoneID)
          : new Set((zone.CollidingDevices || []).map((d) => d.MAC)),
      );
    }
    state.zones = zones;
    state.occupants = occupants;
    state.zonesLoaded += 1;
    view.setZones(zones);
    view.setOccupants(occupants);
    renderZones();
    editor.zonesChanged(zones, readAt);
    inspector.zonesChanged();
    if (state.selected && !zones.some((z) => z.ZoneID === state.selected)) {
      state.selected = null;
      visits.reset();
    }
    if (!state.fitted) {
      view.fit();
      state.fitted = true;
    }
    showEmptySite(zones.length === 0);
    setStatus("zones", `${zones.length} zones`);
  } catch (e) {
    if (e.status !== 401) setStatus("zones", `zones: ${describe(e)}`, "bad");
  }
}

/** Shows (`on`) or hides the hint over the view of a site without zones: where to start. */
function showEmptySite(on) {
  // Absent when the browser has no WebGL: the view then holds only its explanation.
  const hint = $("view-empty");
  if (hint) hint.hidden = !on;
}

function onEvent(event) {
  state.events += 1;
  const c = event.Content || {};
  if (c.ZoneID && (event.Type === "ZONE_ENTER" || event.Type === "ZONE_EXIT")) {
    let macs = state.occupants.get(c.ZoneID);
    if (!macs) {
      macs = new Set();
      state.occupants.set(c.ZoneID, macs);
    }
    if (event.Type === "ZONE_ENTER") macs.add(event.Source.MAC);
    else macs.delete(event.Source.MAC);
    state.touched.set(c.ZoneID, Date.now());
    view.occupantsChanged(c.ZoneID);
    if (!state.zones.some((z) => z.ZoneID === c.ZoneID)) refreshZones();
    else renderZonesSoon();
  }
  unshown.push(event);
  showEventsSoon();
  alarms.event(event);
  inspector.event(event);
  visits.event(event);
}

function setStatus(which, text, kind = "") {
  const node = $(`status-${which}`);
  node.textContent = text;
  node.className = `status ${kind}`;
}

function streamState(which) {
  return (s, detail) => {
    if (s === "refused" && /expired|not valid/.test(detail || "")) {
      signOut(`The server refused the credential (${detail}); sign in again.`);
      return;
    }
    state.streams[which] = s;
    const kind = s === "open" ? "good" : s === "refused" || s === "retrying" ? "bad" : "";
    setStatus(which, `${which}: ${s}${detail ? ` (${detail})` : ""}`, kind);
  };
}

async function startStreams(signal) {
  // The live stream opens first and holds what it gets until the recent history is shown, so
  // nothing falls between the two (an event in both is shown once: the timeline knows EventIDs).
  const held = [];
  let live = false;
  openStream({
    url: "/v3/events/stream",
    headers: () => state.api.headers(),
    resume: true,
    signal,
    onState: streamState("events"),
    onFrame: (frame) => {
      if (frame.event === "lagged") {
        notice("The event stream fell behind; some events were skipped.", "warn");
        return;
      }
      if (frame.event !== "message") return;
      let event;
      try {
        event = JSON.parse(frame.data);
      } catch {
        return;
      }
      if (live) onEvent(event);
      else held.push(event);
    },
  });
  openStream({
    url: "/v3/positions/stream",
    headers: () => state.api.headers(),
    signal,
    onState: streamState("positions"),
    onFrame: (frame) => {
      if (frame.event !== "message") return;
      let positions;
      try {
        positions = JSON.parse(frame.data);
      } catch {
        return;
      }
      for (const p of positions) {
        state.positions += 1;
        state.devices.set(p.MAC, p);
        view.moveDevice(p.MAC, p.Position);
      }
      inspector.positions(positions);
    },
  });
  try {
    for (const event of await state.api.recentEvents(timeline.limit)) timeline.add(event, zoneName);
  } catch (e) {
    notice(`Recent events could not be read: ${e.message}`, "warn");
  }
  // Alarms are read once the stream holds what comes meanwhile; an alarm in both is kept once.
  await alarms.load();
  live = true;
  held.splice(0).forEach(onEvent);
}

async function signedIn(credential) {
  state.api = new Api(credential, () => signOut("The server refused the credential; sign in again."));
  $("signin").hidden = true;
  document.body.classList.add("signed-in");
  $("who").textContent = credential.kind === "key" ? "API key" : `client ${credential.authId}`;
  state.abort = new AbortController();
  try {
    const settings = await state.api.settings();
    const value = (name, fallback) => {
      const s = settings.find((x) => x.SettingName === name);
      const n = Number(s?.SettingValue);
      return Number.isFinite(n) ? n : fallback;
    };
    state.thresholds = { site: value("SiteAlarmMinLevel", 8), device: value("DeviceAlarmMinLevel", 4) };
    view.setThresholds(state.thresholds);
  } catch {
    // Default thresholds colour the zones until the settings can be read.
  }
  refreshRegistry();
  state.registryTimer = setInterval(refreshRegistry, REFRESH_MS);
  await refreshZones();
  state.refreshTimer = setInterval(refreshZones, ZONE_REFRESH_MS);
  startStreams(state.abort.signal);
}

function signOut(message) {
  forgetCredential();
  state.abort?.abort();
  clearInterval(state.refreshTimer);
  clearInterval(state.registryTimer);
  state.api = null;
  registry.clear();
  search.reset();
  setStatus("devices", "");
  state.selected = null;
  draw.cancel();
  detail.close();
  editor.reset();
  visits.reset();
  inspector.reset();
  connections.reset();
  alarms.reset();
  $("zone-none").hidden = false;
  $("zone-detail").hidden = true;
  showEmptySite(false);
  document.body.classList.remove("signed-in");
  $("signin").hidden = false;
  $("signin-message").textContent = message || "";
}

function setupSignIn() {
  const tabs = document.querySelectorAll("[data-signin-tab]");
  for (const tab of tabs) {
    tab.addEventListener("click", () => {
      for (const t of tabs) t.setAttribute("aria-selected", String(t === tab));
      $("signin-key").hidden = tab.dataset.signinTab !== "key";
      $("signin-client").hidden = tab.dataset.signinTab !== "client";
    });
  }
  $("signin-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const message = $("signin-message");
    message.textContent = "";
    try {
      let credential;
      if (!$("signin-key").hidden) {
        const key = $("api-key").value.trim();
        if (!key) throw new ApiError(0, "input", "Enter an API key.");
        credential = { kind: "key", value: key };
        // Checked before it is kept: a key the server refuses is not stored.
        await new Api(credential).zones();
      } else {
        credential = await signInWithClient($("auth-id").value.trim(), $("auth-secret").value);
      }
      storeCredential(credential);
      $("api-key").value = "";
      $("auth-secret").value = "";
      await signedIn(credential);
    } catch (error) {
      message.textContent = error.message;
    }
  });
  $("sign-out").addEventListener("click", () => signOut());
  $("top-view").addEventListener("click", () => view.topView());
  $("fit").addEventListener("click", () => view.fit());
  $("open-device").addEventListener("click", () => {
    detail.show("device");
    $("device-mac").focus();
  });
  $("open-mqtt").addEventListener("click", () => detail.show("mqtt"));
}

window.zonecastConsole = {
  /** Scene and stream counters: zones, devices, frames, fps, events, streams, … */
  stats() {
    return {
      signedIn: Boolean(state.api),
      zones: state.zones.length,
      zonesLoaded: state.zonesLoaded,
      events: state.events,
      positions: state.positions,
      timeline: timeline.size(),
      streams: { ...state.streams },
      named: registry.devices.size,
      registryLoads: registry.loads,
      occupied: [...state.occupants.values()].filter((s) => s.size > 0).length,
      ...view.stats(),
    };
  },
  /** The state of every alarm the console knows, by AlarmID. */
  alarms: () => alarms.states(),
  /** Who is in zone `id` now, as the console sees it. */
  occupants(id) {
    return [...(state.occupants.get(id) || [])];
  },
  /** The text of the label device `mac` shows in the view now (its name, or its MAC), or null. */
  deviceLabel: (mac) => view.deviceLabel(mac),
  /** Where device `mac` is drawn ({x, y} in the page's CSS pixels), or null. */
  devicePixel: (mac) => view.screenOf(mac),
  /** Where the floor point (`x`, `y`, 0) is drawn ({x, y} in the page's CSS pixels), or null. */
  floorPixel: (x, y) => view.pixelOf([x, y, 0]),
  refresh: () => refreshZones(),
  topView: () => view.topView(),
  fit: () => view.fit(),
  /** Turns the camera about the site without end (true) or stops it (false). */
  orbit: (on) => view.orbit(on),
};

setupSignIn();
pickDevices(view, () => state.devices.keys(), () => draw.active, inspectDevice);
const credential = storedCredential();
if (credential) signedIn(credential);
else $("signin").hidden = false;
