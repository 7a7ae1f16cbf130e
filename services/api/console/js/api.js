// The HTTP API as the console uses it: the signed-in credential (kept in sessionStorage only, so
// it is gone when the tab closes), JSON requests with that credential, and API errors as
// exceptions that carry the server's status and message.

const STORAGE_KEY = "zonecast.credential";

/** A failed API call: `status` is the HTTP status (0 when the server could not be reached). */
export class ApiError extends Error {
  constructor(status, kind, message) {
    super(message);
    this.status = status;
    this.kind = kind;
  }
}

/**
 * A credential: `{kind: "key", value}` for an API key (sent as X-API-Key) or
 * `{kind: "token", value, expiresAt, authId}` for a bearer token from POST /v3/auth/token.
 */
export function storedCredential() {
  try {
    const credential = JSON.parse(sessionStorage.getItem(STORAGE_KEY) || "null");
    if (!credential || typeof credential.value !== "string") return null;
    if (credential.kind === "token" && credential.expiresAt && credential.expiresAt <= Date.now()) {
      sessionStorage.removeItem(STORAGE_KEY);
      return null;
    }
    return credential;
  } catch {
    return null;
  }
}

export function storeCredential(credential) {
  sessionStorage.setItem(STORAGE_KEY, JSON.stringify(credential));
}

export function forgetCredential() {
  sessionStorage.removeItem(STORAGE_KEY);
}

/** The headers that carry `credential`. */
export function credentialHeaders(credential) {
  if (!credential) return {};
  return credential.kind === "key"
    ? { "X-API-Key": credential.value }
    : { Authorization: `Bearer ${credential.value}` };
}

/** Turns a failed response into an ApiError with the server's message when it sent one. */
async function failure(response) {
  let kind = "error";
  let message = `${response.status} ${response.statusText}`;
  try {
    const body = await response.json();
    if (body && typeof body.message === "string") {
      message = body.message;
      kind = body.error || kind;
    }
  } catch {
    // Not a JSON error body (a proxy's page, say): the status line says what there is.
  }
  return new ApiError(response.status, kind, message);
}

/** Exchanges client credentials for a token credential. */
export async function signInWithClient(authId, authSecret) {
  let response;
  try {
    response = await fetch("/v3/auth/token", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ grant_type: "client_credentials", auth_id: authId, auth_secret: authSecret }),
    });
  } catch (e) {
    throw new ApiError(0, "network", `the server cannot be reached: ${e.message}`);
  }
  if (!response.ok) throw await failure(response);
  const answer = await response.json();
  return {
    kind: "token",
    value: answer.access_token,
    expiresAt: Date.now() + (Number(answer.expires_in) || 3600) * 1000,
    authId,
  };
}

/** The API with one credential. `onUnauthorized` is told when the server refuses it (401). */
export class Api {
  constructor(credential, onUnauthorized = () => {}) {
    this.credential = credential;
    this.onUnauthorized = onUnauthorized;
  }

  headers() {
    return credentialHeaders(this.credential);
  }

  /**
   * Sends a request and answers its Response when it succeeded; otherwise throws an ApiError
   * with the server's status and message (and tells `onUnauthorized` about a 401). `accept` is
   * the media type asked for; `headers` are added to the credential's.
   */
  async send(method, path, { body, headers = {}, accept = "application/json" } = {}) {
    const init = { method, headers: { ...this.headers(), ...headers, Accept: accept } };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = typeof body === "string" ? body : JSON.stringify(body);
    }
    let response;
    try {
      response = await fetch(path, init);
    } catch (e) {
      throw new ApiError(0, "network", `the server cannot be reached: ${e.message}`);
    }
    if (!response.ok) {
      const error = await failure(response);
      if (response.status === 401) this.onUnauthorized(error);
      throw error;
    }
    return response;
  }

  /** Sends a request; answers the parsed JSON body, or throws an ApiError. */
  async request(method, path, body) {
    const response = await this.send(method, path, { body });
    const text = await response.text();
    return text ? JSON.parse(text) : null;
  }

  zones() {
    return this.request("GET", "/v3/modules/zones");
  }

  settings() {
    return this.request("GET", "/v3/modules/zones/settings");
  }

  /** Creates a zone from a ZoneInput object, or from its JSON text as typed. */
  createZone(input) {
    return this.request("POST", "/v3/modules/zones", input);
  }

  /** One zone and its version: `{zone, etag}` (the ETag to send back in If-Match). */
  async zone(id) {
    const response = await this.send("GET", `/v3/modules/zones/${encodeURIComponent(id)}`);
    return { zone: await response.json(), etag: response.headers.get("ETag") };
  }

  /**
   * Changes the fields in `changes` of zone `id` (PUT: only supplied fields change). With
   * `etag`, the server refuses (412) when the zone was written since that version was read.
   * Answers the zone's new ETag.
   */
  async updateZone(id, changes, etag) {
    const headers = etag ? { "If-Match": etag } : {};
    const response = await this.send("PUT", `/v3/modules/zones/${encodeURIComponent(id)}`, { body: changes, headers });
    return response.headers.get("ETag");
  }

  deleteZone(id) {
    return this.request("DELETE", `/v3/modules/zones/${encodeURIComponent(id)}`);
  }

  setActive(id, active) {
    return this.request("POST", `/v3/modules/zones/${active ? "activate" : "deactivate"}`, [id]);
  }

  setLocked(id, locked) {
    return this.request("POST", `/v3/modules/zones/${encodeURIComponent(id)}/${locked ? "lock" : "unlock"}`);
  }

  connections() {
    return this.request("GET", "/v3/modules/mqtt/connections");
  }

  connectionStatus(id) {
    return this.request("GET", `/v3/modules/mqtt/connections/${encodeURIComponent(id)}/status`);
  }

  /**
   * One page of the device registry: `{Devices, NextCursor}`. `query` holds the listing's
   * parameters (`q`, `group`, `limit`, `cursor`).
   */
  devices(query = {}) {
    return this.request("GET", `/v3/devices?${new URLSearchParams(query)}`);
  }

  /** The registered device `mac` (its Name, Group, Kind and Properties); 404 when unregistered. */
  device(mac) {
    return this.request("GET", `/v3/devices/${encodeURIComponent(mac)}`);
  }

  /** The visits to zone `id` overlapping [from, to) (ISO times; null: oldest kept, now). */
  visits(id, from, to) {
    return this.request("GET", `/v3/modules/zones/${encodeURIComponent(id)}/visits?${range(from, to)}`);
  }

  /** The same visits as CSV text (`Accept: text/csv`). */
  async visitsCsv(id, from, to) {
    const path = `/v3/modules/zones/${encodeURIComponent(id)}/visits?${range(from, to)}`;
    return (await this.send("GET", path, { accept: "text/csv" })).text();
  }

  /**
   * The newest events of the last hour (up to `limit`), oldest first; `narrow` adds the
   * history's filters, e.g. `{mac}` for one device's events.
   */
  async recentEvents(limit, narrow = {}) {
    const since = new Date(Date.now() - 3600 * 1000).toISOString();
    const events = [];
    let cursor = null;
    // Pages come oldest first; keep the newest `limit` of the last hour.
    for (let page = 0; page < 20; page++) {
      const query = new URLSearchParams({ ...narrow, from: since, limit: "1000" });
      if (cursor) {
        query.delete("from");
        query.set("cursor", cursor);
      }
      const answer = await this.request("GET", `/v3/events?${query}`);
      events.push(...answer.Events);
      if (events.length > limit) events.splice(0, events.length - limit);
      cursor = answer.NextCursor;
      if (!cursor) break;
    }
    return events;
  }
}

/** The `from` and `to` query of a report; either may be null (the server's default). */
function range(from, to) {
  const query = new URLSearchParams();
  if (from) query.set("from", from);
  if (to) query.set("to", to);
  return query;
}
