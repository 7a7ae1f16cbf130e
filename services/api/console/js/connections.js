// The MQTT connections and how their forwarding goes, read-only: GET /v3/modules/mqtt/connections
// and each one's GET …/{ConnectionID}/status (connected, lastError, forwarded, dropped, queued and
// the forwarder replicas reporting), read again every few seconds while the tab is shown.

import { describe, element, time } from "./panels.js";

const $ = (id) => document.getElementById(id);
/** How often the list and the statuses are read while shown. */
export const CONNECTIONS_REFRESH_MS = 5000;

/** A connection's state: connected, disconnected, or unreported (no forwarder has reported). */
export function connectionState(status) {
  const live = (status.replicas || []).filter((r) => !r.stale);
  if (status.connected) return "connected";
  return live.length ? "disconnected" : "unreported";
}

const STATE_TEXT = {
  connected: "● connected",
  disconnected: "○ disconnected",
  unreported: "○ no forwarder is reporting",
};

/** The connections tab. `api()` answers the signed-in Api. */
export class Connections {
  constructor(api) {
    this.api = api;
    this.list = $("connections");
    this.message = $("connections-message");
    this.timer = null;
    this.busy = false;
    this.loads = 0;
  }

  /** Reads the connections now and then every few seconds, until `stop`. */
  start() {
    if (this.timer) return;
    this.load();
    this.timer = setInterval(() => this.load(), CONNECTIONS_REFRESH_MS);
  }

  stop() {
    clearInterval(this.timer);
    this.timer = null;
  }

  async load() {
    // A slow server is not asked again before it has answered.
    if (this.busy || !this.api()) return;
    this.busy = true;
    try {
      const connections = await this.api().connections();
      const statuses = await Promise.all(
        connections.map((c) => this.api().connectionStatus(c.ConnectionID).catch((error) => ({ error }))),
      );
      this.render(connections, statuses);
      this.loads += 1;
      this.list.dataset.loads = String(this.loads);
      const when = time(new Date().toISOString());
      this.say(connections.length ? `${connections.length} connection${connections.length === 1 ? "" : "s"}, read at ${when}.` : "No MQTT connections. An admin creates them through the API (POST /v3/modules/mqtt/connections).", "");
    } catch (error) {
      this.say(describe(error), "error");
    } finally {
      this.busy = false;
    }
  }

  render(connections, statuses) {
    const items = connections.map((c, i) => this.item(c, statuses[i]));
    this.list.replaceChildren(...items);
  }

  item(c, status) {
    const topics = (c.topics || []).map((t) => t.topic);
    const head = element(
      "div",
      { class: "connection-head" },
      element("span", { class: "connection-host mono" }, `${c.host}:${c.port}`),
      element("span", { class: "tag" }, c.TLS ? "TLS" : "plain"),
      c.username ? element("span", { class: "tag" }, `user ${c.username}`) : null,
    );
    const topicLine = element("div", { class: "connection-meta" }, topics.length ? `topics: ${topics.join(", ")}` : "no topics");
    if (status.error) {
      return element(
        "li",
        { id: `connection-${c.ConnectionID}`, class: "connection", "data-connection-id": c.ConnectionID, "data-state": "unknown" },
        head,
        topicLine,
        element("div", { class: "message error" }, `status: ${describe(status.error)}`),
      );
    }
    const state = connectionState(status);
    const replicas = status.replicas || [];
    const stale = replicas.filter((r) => r.stale).length;
    return element(
      "li",
      {
        id: `connection-${c.ConnectionID}`,
        class: `connection state-${state}`,
        "data-connection-id": c.ConnectionID,
        "data-state": state,
        "data-connected": String(status.connected),
        "data-forwarded": String(status.forwarded),
      },
      head,
      topicLine,
      element("div", { class: "connection-state" }, STATE_TEXT[state]),
      element(
        "div",
        { class: "connection-meta" },
        `forwarded ${status.forwarded} · dropped ${status.dropped} · queued ${status.queued} · ` +
          `${replicas.length} forwarder${replicas.length === 1 ? "" : "s"}${stale ? ` (${stale} stale)` : ""}`,
      ),
      status.lastError ? element("div", { class: "connection-error" }, `last error: ${status.lastError}`) : null,
    );
  }

  /** Forgets what it showed (signed out). */
  reset() {
    this.stop();
    this.list.replaceChildren();
    this.say("", "");
  }

  say(text, kind) {
    this.message.textContent = text;
    this.message.className = `message ${kind}`;
    this.message.dataset.kind = kind;
  }
}
