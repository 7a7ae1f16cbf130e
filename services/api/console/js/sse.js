// Server-Sent Events over fetch(). A browser's EventSource cannot send headers, and the API takes
// API keys only in headers, so the console reads the stream's body itself: SseParser turns the
// text into frames (the rules of the HTML standard's event-stream format), and openStream keeps a
// stream open, reconnecting after a failure with the last event id it saw (Last-Event-ID), so
// the event stream resumes without a gap.

/** Splits event-stream text into frames `{event, data, id}`; feed it chunks as they come. */
export class SseParser {
  constructor() {
    this.buffer = "";
    this.reset();
    this.lastEventId = "";
  }

  reset() {
    this.event = "";
    this.data = [];
    this.sawData = false;
  }

  /** Takes a chunk of text; answers the frames it completed. */
  push(text) {
    this.buffer += text;
    const frames = [];
    // A line ends with CRLF, LF or CR; a CR at the very end may be half of a CRLF.
    const lines = this.buffer.split(/\r\n|\n|\r(?!$)/);
    this.buffer = lines.pop();
    for (const line of lines) {
      const frame = this.line(line);
      if (frame) frames.push(frame);
    }
    return frames;
  }

  line(line) {
    if (line === "") {
      if (!this.sawData) {
        this.reset();
        return null;
      }
      const frame = { event: this.event || "message", data: this.data.join("\n"), id: this.lastEventId };
      this.reset();
      return frame;
    }
    if (line.startsWith(":")) return null;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") {
      this.data.push(value);
      this.sawData = true;
    } else if (field === "event") {
      this.event = value;
    } else if (field === "id" && !value.includes("\0")) {
      this.lastEventId = value;
    }
    return null;
  }
}

/**
 * Keeps a stream open until `signal` aborts: `onFrame(frame)` for every frame, `onState(state,
 * detail)` with "connecting", "open", "retrying" (detail: why) or "closed". `headers()` gives the
 * credential headers for each attempt. With `resume`, a reconnect sends Last-Event-ID. A 401 or
 * 403 is not retried: `onState("refused", message)`.
 */
export function openStream({ url, headers, onFrame, onState = () => {}, signal, resume = false }) {
  const parser = new SseParser();
  let delay = 500;
  const wait = (ms) =>
    new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      signal.addEventListener("abort", () => {
        clearTimeout(timer);
        resolve();
      }, { once: true });
    });

  (async () => {
    while (!signal.aborted) {
      onState("connecting");
      try {
        const requestHeaders = { ...headers(), Accept: "text/event-stream" };
        if (resume && parser.lastEventId) requestHeaders["Last-Event-ID"] = parser.lastEventId;
        const response = await fetch(url, { headers: requestHeaders, signal, cache: "no-store" });
        if (response.status === 401 || response.status === 403) {
          let message = `${response.status}`;
          try {
            message = (await response.json()).message || message;
          } catch {
            // The status is message enough.
          }
          onState("refused", message);
          return;
        }
        if (!response.ok || !response.body) throw new Error(`answered ${response.status}`);
        onState("open");
        delay = 500;
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          for (const frame of parser.push(value)) onFrame(frame);
        }
        // A frame cut off by the end of the connection is not a frame.
        parser.buffer = "";
        parser.reset();
        if (!signal.aborted) onState("retrying", "the server ended the stream");
      } catch (e) {
        if (signal.aborted) break;
        onState("retrying", e.message);
      }
      await wait(delay);
      delay = Math.min(delay * 2, 10000);
    }
    onState("closed");
  })();
}
