// The device registry as the console knows it: every registered device (GET /v3/devices, all
// pages) by MAC, read at sign-in and again every REFRESH_MS and after a search (main.js asks),
// since the registry's writes are announced on no stream. Whoever shows a device's name asks `nameOf`;
// after each reading, `changed(macs)` is told which devices were added, renamed or removed, so
// only those are drawn again (10,000 devices are read in ten requests and compared in a few
// milliseconds). A device needs no registration to be tracked: one without a record is shown by
// its MAC.

/** How often the registry is read again. */
export const REFRESH_MS = 30_000;
/** Devices a page of the listing holds (the most the API gives). */
const PAGE = 1000;
/** Pages read at most (a registry of more is shown as far as it was read). */
const PAGES = 100;

/** Whether `device` ({MAC, Name, Group, Kind}) matches the lower-case `needle`: in its name, its
 * MAC (a `-` matching a `:`), its group or its kind. */
export function matches(device, needle) {
  const text = `${device.Name || ""}\n${device.MAC}\n${device.MAC.replaceAll(":", "-")}\n${device.Group || ""}\n${device.Kind || ""}`;
  return text.toLowerCase().includes(needle);
}

export class DeviceRegistry {
  /** `api()` answers the signed-in Api (or null); `changed(macs)` hears each change. */
  constructor(api, changed = () => {}) {
    this.api = api;
    this.changed = changed;
    this.devices = new Map(); // MAC → Device
    this.loads = 0; // readings completed
    this.reading = null; // the reading under way
    this.again = false; // another is asked for after it
  }

  /** The registered device `mac`, or undefined. */
  get(mac) {
    return this.devices.get(mac);
  }

  /** The name of `mac` when it is registered, else null. */
  nameOf(mac) {
    return this.devices.get(mac)?.Name || null;
  }

  /** Forgets every device (signed out). */
  clear() {
    this.again = false;
    const gone = [...this.devices.keys()];
    this.devices = new Map();
    this.loads = 0;
    if (gone.length) this.changed(gone);
  }

  /**
   * Reads every page of the registry. A refresh asked for while one is under way runs once
   * after it (the one under way may have read its pages before the change); it never runs twice
   * at once. Throws an ApiError when a page is refused (nothing is changed then).
   */
  refresh() {
    if (this.reading) {
      this.again = true;
      return this.reading;
    }
    this.reading = (async () => {
      try {
        do {
          this.again = false;
          await this.readAll();
        } while (this.again);
      } finally {
        this.reading = null;
      }
    })();
    return this.reading;
  }

  async readAll() {
    const api = this.api();
    if (!api) return;
    const read = new Map();
    let cursor = null;
    for (let page = 0; page < PAGES; page++) {
      const query = { limit: String(PAGE) };
      if (cursor) query.cursor = cursor;
      const answer = await api.devices(query);
      for (const device of answer.Devices) read.set(device.MAC, device);
      cursor = answer.NextCursor;
      if (!cursor) break;
    }
    // Signed out (or in again) while reading: this reading is not the registry's any more.
    if (api !== this.api()) return;
    const changed = [];
    for (const [mac, device] of read) {
      const before = this.devices.get(mac);
      if (!before || !same(before, device)) changed.push(mac);
    }
    for (const mac of this.devices.keys()) if (!read.has(mac)) changed.push(mac);
    this.devices = read;
    this.loads += 1;
    if (changed.length) this.changed(changed);
  }

  /** Keeps `device` as read just now (by a search or the inspector). */
  put(device) {
    const before = this.devices.get(device.MAC);
    if (before && same(before, device)) return;
    this.devices.set(device.MAC, device);
    this.changed([device.MAC]);
  }

  /** Forgets `mac`, found unregistered just now. */
  forget(mac) {
    if (this.devices.delete(mac)) this.changed([mac]);
  }

  /** Up to `limit` registered devices matching `text` (name, MAC, group or kind), by name. */
  find(text, limit) {
    const needle = text.trim().toLowerCase();
    if (!needle) return [];
    const found = [];
    for (const device of this.devices.values()) if (matches(device, needle)) found.push(device);
    found.sort(byName);
    return found.slice(0, limit);
  }
}

/** Devices by name, then MAC. */
export function byName(a, b) {
  return (a.Name || "").localeCompare(b.Name || "") || a.MAC.localeCompare(b.MAC);
}

function same(a, b) {
  return (
    a.Name === b.Name &&
    a.Group === b.Group &&
    a.Kind === b.Kind &&
    JSON.stringify(a.Properties ?? {}) === JSON.stringify(b.Properties ?? {})
  );
}
