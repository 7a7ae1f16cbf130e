// Finding a device: the search field in the header matches what is typed against the registry
// as last read (name, MAC, group, kind) and the MACs seen on the position stream, at once, and
// asks the server too (GET /v3/devices?q=, the name or MAC), so that a device registered since
// the last reading is found. Choosing a result (a click, or Enter for the first) selects the
// device as a click on it in the view does, turns the view about it, and reads the registry
// again (its writes are announced nowhere).

import { describe, element } from "./panels.js";
import { byName } from "./devices.js";

const $ = (id) => document.getElementById(id);
/** Results shown at most. */
const RESULTS = 20;
/** The server is asked once typing has paused this long. */
const ASK_AFTER_MS = 250;

/**
 * The device search. `api()` answers the signed-in Api; `registry` is the DeviceRegistry;
 * `seen()` the MACs of the devices seen moving; `pick(mac)` selects a device; `refresh()` reads
 * the registry again (and shows how that went).
 */
export class DeviceSearch {
  constructor({ api, registry, seen, pick, refresh }) {
    this.api = api;
    this.registry = registry;
    this.seen = seen;
    this.pick = pick;
    this.refresh = refresh;
    this.input = $("device-search");
    this.panel = $("search-panel");
    this.list = $("search-results");
    this.asked = new Map(); // MAC → Device, the server's answer for the text now typed
    this.asking = 0;
    this.timer = null;
    this.input.addEventListener("input", () => this.typed());
    this.input.addEventListener("focus", () => this.input.value.trim() && this.render());
    this.input.addEventListener("blur", () => (this.panel.hidden = true));
    this.input.addEventListener("keydown", (e) => {
      if (e.key === "Escape") this.panel.hidden = true;
    });
    // A press on a result must not take the focus from the field first (the panel would close).
    this.panel.addEventListener("mousedown", (e) => e.preventDefault());
    $("search-form").addEventListener("submit", (e) => {
      e.preventDefault();
      const first = this.results()[0];
      if (first) this.choose(first.MAC);
      else this.ask();
    });
  }

  /** The text was changed: the known devices at once, the server's answer shortly. */
  typed() {
    this.asked = new Map();
    this.asking += 1;
    clearTimeout(this.timer);
    this.say("", "");
    this.render();
    if (this.input.value.trim()) this.timer = setTimeout(() => this.ask(), ASK_AFTER_MS);
  }

  /** Asks the server for the devices whose name or MAC holds the text. */
  async ask() {
    const text = this.input.value.trim();
    const api = this.api();
    if (!text || !api) return;
    const ticket = ++this.asking;
    try {
      const answer = await api.devices({ q: text, limit: String(RESULTS) });
      if (ticket !== this.asking) return;
      this.asked = new Map(answer.Devices.map((d) => [d.MAC, d]));
      // Found by the server just now: newer than the registry's last reading.
      for (const device of answer.Devices) this.registry.put(device);
      this.render();
    } catch (error) {
      if (ticket !== this.asking) return;
      this.say(describe(error), "error");
      this.panel.hidden = false;
    }
  }

  /** The devices matching the text: registered ones by name, then unregistered MACs seen. */
  results() {
    const text = this.input.value.trim();
    if (!text) return [];
    const found = new Map(this.registry.find(text, RESULTS).map((d) => [d.MAC, d]));
    for (const device of this.asked.values()) found.set(device.MAC, device);
    const named = [...found.values()].sort(byName).slice(0, RESULTS);
    const needle = text.toUpperCase().replaceAll("-", ":");
    const unnamed = [];
    for (const mac of this.seen()) {
      if (named.length + unnamed.length >= RESULTS) break;
      if (!found.has(mac) && !this.registry.get(mac) && mac.includes(needle)) unnamed.push({ MAC: mac });
    }
    return [...named, ...unnamed.sort((a, b) => a.MAC.localeCompare(b.MAC))];
  }

  render() {
    const text = this.input.value.trim();
    if (!text) {
      this.panel.hidden = true;
      this.list.replaceChildren();
      return;
    }
    const seen = new Set(this.seen());
    const items = this.results().map((device) =>
      element(
        "li",
        { class: "search-result", "data-mac": device.MAC, title: "select this device", onclick: () => this.choose(device.MAC) },
        element("span", { class: "search-name" }, device.Name || device.MAC),
        device.Name ? element("span", { class: "mono dim" }, device.MAC) : null,
        device.Group ? element("span", { class: "tag" }, device.Group) : null,
        seen.has(device.MAC) ? null : element("span", { class: "dim" }, "not seen"),
      ),
    );
    this.list.replaceChildren(...(items.length ? items : [element("li", { class: "empty" }, "No device matches.")]));
    this.panel.hidden = false;
  }

  /** Selects device `mac` and reads the registry again. */
  choose(mac) {
    const device = this.registry.get(mac);
    this.input.value = device?.Name || mac;
    // An answer still to come is for the text typed before: it must not open the results again.
    this.asking += 1;
    clearTimeout(this.timer);
    this.panel.hidden = true;
    this.pick(mac);
    this.refresh();
  }

  /** Forgets the text and results (signed out). */
  reset() {
    this.input.value = "";
    this.asked = new Map();
    this.asking += 1;
    clearTimeout(this.timer);
    this.say("", "");
    this.render();
  }

  say(text, kind) {
    const message = $("search-message");
    message.textContent = text;
    message.className = `message ${kind}`;
    message.dataset.kind = kind;
  }
}
