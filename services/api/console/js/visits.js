// The visit report of the selected zone: GET /v3/modules/zones/{ZoneID}/visits for a time range
// (the last hour unless chosen otherwise), as a table of device (its name from the registry above
// its MAC), entry, exit (or "inside"), dwell and reason, and as a CSV file fetched with `Accept: text/csv` and the credential in its header
// (never in the URL). With the range open-ended ("to" empty: now) the report follows the zone's
// enters and exits as they arrive.

import { describe, element } from "./panels.js";
import { isoOf, localInput } from "./editor.js";

const $ = (id) => document.getElementById(id);
const HOUR = 3600;
// Events of one burst (a device walking through several zones) reload the report once.
const RELOAD_AFTER_MS = 400;

/** A dwell time in seconds, as people read it: 8.2 s, 3 min 05 s, 2 h 07 min. */
export function dwell(seconds) {
  if (!Number.isFinite(seconds)) return "";
  if (seconds < 60) return `${seconds.toFixed(1)} s`;
  const s = Math.floor(seconds);
  const p = (n) => String(n).padStart(2, "0");
  if (s < HOUR) return `${Math.floor(s / 60)} min ${p(s % 60)} s`;
  return `${Math.floor(s / HOUR)} h ${p(Math.floor((s % HOUR) / 60))} min`;
}

/** An ISO time as a local time of day to the second, with its date unless that is today. */
function stamp(iso) {
  const [date, clock] = localInput(iso).split("T");
  return date === localInput(new Date().toISOString()).split("T")[0] ? clock : `${date} ${clock}`;
}

/**
 * The visit report. `api()` answers the signed-in Api; `nameOf(id)` a zone's name now;
 * `deviceName(mac)` a device's name in the registry, or null.
 */
export class VisitReport {
  constructor(api, nameOf, deviceName = () => null) {
    this.api = api;
    this.nameOf = nameOf;
    this.deviceName = deviceName;
    this.shown = []; // the visits in the table
    this.zone = null; // the ZoneID shown
    this.from = $("visits-from");
    this.to = $("visits-to");
    this.rows = $("visits-rows");
    this.message = $("visits-message");
    this.loading = 0;
    this.timer = null;
    $("visits-form").addEventListener("submit", (e) => {
      e.preventDefault();
      this.load();
    });
    for (const button of document.querySelectorAll("[data-visits-last]")) {
      button.addEventListener("click", () => {
        this.last(Number(button.dataset.visitsLast));
        this.load();
      });
    }
    $("visits-csv").addEventListener("click", () => this.download());
  }

  /** Sets the range to the last `seconds` up to now. */
  last(seconds) {
    this.from.value = localInput(new Date(Date.now() - seconds * 1000).toISOString());
    this.to.value = "";
  }

  /** Shows the report of zone `id`, over the last hour unless it is shown already. */
  show(id) {
    const same = this.zone === id;
    this.zone = id;
    if (!same) {
      this.last(HOUR);
      this.render([]);
    }
    this.load();
  }

  range() {
    return { from: isoOf(this.from.value), to: isoOf(this.to.value) };
  }

  async load() {
    if (!this.zone) return;
    const ticket = ++this.loading;
    const { from, to } = this.range();
    try {
      const visits = await this.api().visits(this.zone, from, to);
      if (ticket !== this.loading) return;
      this.render(visits);
      const inside = visits.filter((v) => v.ExitTime === null).length;
      this.say(`${visits.length} visit${visits.length === 1 ? "" : "s"}${inside ? `, ${inside} still inside` : ""}.`, "ok");
    } catch (error) {
      if (ticket !== this.loading) return;
      this.render([]);
      this.say(describe(error), "error");
    }
  }

  render(visits) {
    this.shown = visits;
    const rows = visits.map((v) =>
      element(
        "tr",
        { "data-mac": v.MAC, "data-collision-id": v.CollisionID, "data-reason": v.Reason || "", "data-inside": String(v.ExitTime === null) },
        this.deviceCell(v.MAC),
        element("td", {}, element("time", { datetime: v.EntryTime }, stamp(v.EntryTime))),
        element("td", {}, v.ExitTime ? element("time", { datetime: v.ExitTime }, stamp(v.ExitTime)) : element("span", { class: "inside" }, "inside")),
        element("td", { class: "num" }, dwell(v.DwellSeconds)),
        element("td", {}, v.Reason || ""),
      ),
    );
    this.rows.replaceChildren(...rows);
  }

  /** The device's cell: its name above its MAC when it is registered, else its MAC. */
  deviceCell(mac) {
    const name = this.deviceName(mac);
    if (!name) return element("td", { class: "mono" }, mac);
    return element("td", { class: "device", title: mac }, element("div", { class: "visit-name" }, name), element("div", { class: "mono dim" }, mac));
  }

  /** The registry changed for the devices `macs` (a Set): rows of theirs are drawn again. */
  renamed(macs) {
    if (this.shown.some((v) => macs.has(v.MAC))) this.render(this.shown);
  }

  /** Fetches the report as CSV (credential in the header) and saves it as a file. */
  async download() {
    if (!this.zone) return;
    const { from, to } = this.range();
    const button = $("visits-csv");
    button.disabled = true;
    try {
      const csv = await this.api().visitsCsv(this.zone, from, to);
      const name = `visits-${(this.nameOf(this.zone) || this.zone).replace(/[^\w.-]+/g, "_")}.csv`;
      const url = URL.createObjectURL(new Blob([csv], { type: "text/csv" }));
      const link = element("a", { href: url, download: name, hidden: true });
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60_000);
      // Rows end with CRLF; the first line is the header.
      const rows = csv.split("\r\n").filter(Boolean).length - 1;
      button.dataset.rows = String(rows);
      this.say(`Saved ${name}: ${rows} visit${rows === 1 ? "" : "s"} as CSV.`, "ok");
    } catch (error) {
      this.say(describe(error), "error");
    } finally {
      button.disabled = false;
    }
  }

  /** An event arrived: an enter or exit of this zone reloads an open-ended report. */
  event(event) {
    if (!this.zone || this.to.value || event.Content?.ZoneID !== this.zone) return;
    if (event.Type !== "ZONE_ENTER" && event.Type !== "ZONE_EXIT") return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.load(), RELOAD_AFTER_MS);
  }

  /** Forgets the zone (deleted, or signed out). */
  reset() {
    this.zone = null;
    this.loading += 1;
    clearTimeout(this.timer);
    this.render([]);
    this.say("", "");
  }

  say(text, kind) {
    this.message.textContent = text;
    this.message.className = `message ${kind}`;
    this.message.dataset.kind = kind;
  }
}
