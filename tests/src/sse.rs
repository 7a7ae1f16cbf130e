//! A Server-Sent Events client that reads the frames off the wire as a browser's `EventSource`
//! parses them, for the tests of the live streams.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::Value;

use crate::Server;

/// One SSE frame as a browser's `EventSource` parses it.
#[derive(Debug, Default, Clone)]
pub struct Frame {
    /// The `event:` name; `None` for a plain message.
    pub event: Option<String>,
    /// The `id:`, when the frame has one.
    pub id: Option<u64>,
    /// The `data:` lines, joined by line breaks.
    pub data: String,
    /// Whether it is a comment (`: keep-alive`).
    pub comment: bool,
}

impl Frame {
    /// The data as JSON; panics when it is not.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data).unwrap_or_else(|e| panic!("frame data is not JSON ({e}): {self:?}"))
    }
}

/// An open stream: the response and the bytes read but not yet parsed.
pub struct Sse {
    /// The answer, its body read as frames come.
    pub response: reqwest::Response,
    buffer: Vec<u8>,
}

impl Sse {
    /// Opens the stream at `path` with `query` and `headers`; it must answer 200
    /// `text/event-stream`.
    pub async fn open(server: &Server, path: &str, query: &str, headers: &[(&str, &str)]) -> Self {
        let response = request(server, path, query, headers).await;
        assert_eq!(response.status(), StatusCode::OK, "stream {path}?{query} answered {}", response.status());
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        assert_eq!(response.headers()["cache-control"], "no-cache");
        Self { response, buffer: Vec::new() }
    }

    /// The next frame, comments included; `None` once the server ended the stream.
    pub async fn frame(&mut self, wait: Duration) -> Option<Frame> {
        let until = tokio::time::Instant::now() + wait;
        loop {
            if let Some(end) = self.buffer.windows(2).position(|w| w == b"\n\n") {
                let block: Vec<u8> = self.buffer.drain(..end + 2).collect();
                return Some(parse(&String::from_utf8(block).unwrap()));
            }
            let chunk = tokio::time::timeout_at(until, self.response.chunk())
                .await
                .unwrap_or_else(|_| {
                    panic!("no frame within {wait:?}; unparsed: {:?}", String::from_utf8_lossy(&self.buffer))
                })
                .expect("the stream reads");
            match chunk {
                Some(bytes) => self.buffer.extend_from_slice(&bytes),
                None => {
                    assert!(self.buffer.is_empty(), "stream ended inside a frame: {:?}", self.buffer);
                    return None;
                }
            }
        }
    }

    /// The next frame that is not a comment; panics at the end of the stream.
    pub async fn event(&mut self, wait: Duration) -> Frame {
        loop {
            let frame = self.frame(wait).await.expect("the stream goes on");
            if !frame.comment {
                return frame;
            }
        }
    }

    /// The next `count` events (frames without an `event:` name), each with its id.
    pub async fn events(&mut self, count: usize, wait: Duration) -> Vec<(u64, Value)> {
        let mut out = Vec::new();
        while out.len() < count {
            let frame = self.event(wait).await;
            assert_eq!(frame.event, None, "an event frame, not {frame:?}");
            out.push((frame.id.expect("every event has an id"), frame.json()));
        }
        out
    }
}

/// One frame's text (up to its blank line) as `EventSource` parses it.
pub fn parse(block: &str) -> Frame {
    let mut frame = Frame::default();
    let mut data = Vec::new();
    for line in block.lines() {
        if line.starts_with(':') {
            frame.comment = true;
        } else if let Some(value) = line.strip_prefix("id: ") {
            frame.id = Some(value.parse().unwrap());
        } else if let Some(value) = line.strip_prefix("event: ") {
            frame.event = Some(value.to_owned());
        } else if let Some(value) = line.strip_prefix("data: ") {
            data.push(value);
        } else {
            assert!(line.is_empty(), "unexpected line {line:?}");
        }
    }
    frame.data = data.join("\n");
    frame
}

/// `GET <path>?<query>` with `headers`, answered as it comes (the body unread).
pub async fn request(server: &Server, path: &str, query: &str, headers: &[(&str, &str)]) -> reqwest::Response {
    let mut request = server.http.get(format!("{}{path}?{query}", server.base));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().await.expect("the request reaches the server")
}

/// `value` percent-encoded for a query string.
pub fn url_encoded(value: &str) -> String {
    value
        .bytes()
        .map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") })
        .collect()
}

/// A stream client that reads nothing until [`Stalled::finish`]: its socket's receive buffer is
/// kept small, so the server's writes block as they do for a client that cannot keep up. (On
/// loopback the kernel would otherwise grow the buffer to tens of MB and take a whole test's
/// events.) The request is HTTP/1.0, so the body comes unchunked, until the server closes it.
pub struct Stalled {
    stream: tokio::net::TcpStream,
}

impl Stalled {
    /// Opens `path` on `server` with `headers`.
    pub async fn open(server: &Server, path: &str, headers: &[(&str, &str)]) -> Self {
        use tokio::io::AsyncWriteExt;
        let addr: std::net::SocketAddr =
            server.base.trim_start_matches("http://").parse().expect("the server's address");
        let socket = tokio::net::TcpSocket::new_v4().expect("a socket");
        socket.set_recv_buffer_size(4096).expect("a small receive buffer");
        let mut stream = socket.connect(addr).await.expect("the server answers");
        let headers: String = headers.iter().map(|(name, value)| format!("{name}: {value}\r\n")).collect();
        stream
            .write_all(format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n{headers}\r\n").as_bytes())
            .await
            .expect("sent");
        Self { stream }
    }

    /// Reads what the server sent until it ended the stream (for at most `wait`): the answer's
    /// status line and its frames, comments left out.
    pub async fn finish(mut self, wait: Duration) -> (String, Vec<Frame>) {
        use tokio::io::AsyncReadExt;
        let mut answer = Vec::new();
        tokio::time::timeout(wait, self.stream.read_to_end(&mut answer))
            .await
            .unwrap_or_else(|_| panic!("the stream did not end within {wait:?}"))
            .expect("the stream reads");
        let answer = String::from_utf8(answer).expect("UTF-8");
        let (head, body) = answer.split_once("\r\n\r\n").expect("an HTTP answer");
        let status = head.lines().next().unwrap_or_default().to_owned();
        let frames = body.split_terminator("\n\n").map(parse).filter(|f| !f.comment);
        (status, frames.collect())
    }
}
