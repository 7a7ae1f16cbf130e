//! The forwarder's MQTT 3.1.1 client: it connects (TCP or TLS, with a user name and password if
//! set), publishes at QoS 1 and reads the broker's acknowledgements, nothing more. It exists for
//! one reason: it writes every publish that is ready in one system call, and reads every
//! acknowledgement that has arrived in one. A general client writes and flushes each publish
//! on its own, one system call per event, and at full speed that was a twentieth of the
//! server's CPU.
//!
//! CONNECT goes out, and what the broker sends is read, through rumqttc's MQTT 3.1.1 codec;
//! PUBLISH is encoded here, straight into the output. What to send, and what to send again after
//! a reconnect, is the outbox's business ([`crate::outbox`]); [`crate::link`] runs a
//! connection's sessions.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use bytes::{BufMut, BytesMut};
use rumqttc::tokio_rustls::TlsConnector;
use rumqttc::tokio_rustls::rustls::ClientConfig;
use rumqttc::tokio_rustls::rustls::pki_types::ServerName;
use rumqttc::{ConnectReturnCode, Packet};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadHalf, WriteHalf};
use tokio::net::TcpStream;

/// How long connecting may take: TCP, TLS and the broker's CONNACK together.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Largest packet taken from the broker. It sends this client acknowledgements and ping
/// answers only; anything larger is not an MQTT broker talking.
const MAX_INCOMING: usize = 64 * 1024;

/// How much encoded output is gathered before it is written (an event that crosses it still
/// goes in): enough for a few hundred events per system call, little enough that a slow broker
/// holds no more than this and one event in memory.
pub const OUTPUT_HIGH: usize = 256 * 1024;

/// What a connection needs.
pub struct Options {
    /// The MQTT client id.
    pub client_id: String,
    /// Host name or address; also the TLS server name.
    pub host: String,
    pub port: u16,
    /// The keep-alive asked of the broker: a ping goes out this often, and an unanswered one
    /// by the next ends the connection.
    pub keep_alive: Duration,
    /// User name and password.
    pub login: Option<(String, String)>,
    /// TLS with this configuration (trust roots and client identity), or plain TCP.
    pub tls: Option<Arc<ClientConfig>>,
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the password.
        write!(f, "Options({} at {}:{}, tls: {})", self.client_id, self.host, self.port, self.tls.is_some())
    }
}

/// Why a connection failed or ended, as shown in a connection's status: never a secret.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The network or TLS failed (a refused TCP connection, a certificate rejected either way).
    #[error("{0}")]
    Io(#[from] io::Error),
    /// The broker answered CONNECT with a refusal.
    #[error("broker refused the connection: {0:?}")]
    Refused(ConnectReturnCode),
    /// No CONNACK within [`CONNECT_TIMEOUT`], or no answer to a ping within the keep-alive.
    #[error("no answer from the broker in time")]
    Timeout,
    /// The broker closed the connection.
    #[error("the broker closed the connection")]
    Closed,
    /// The broker sent something this client does not expect.
    #[error("the broker broke the MQTT protocol: {0}")]
    Protocol(String),
    /// The host cannot be a TLS server name.
    #[error("{0:?} is not a valid TLS server name")]
    ServerName(String),
}

/// A byte stream to the broker: TCP, or TLS over TCP.
trait Stream: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Stream for T {}

/// What the broker sent, taken from the input as far as it holds whole packets.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Received {
    /// The packet ids the broker acknowledged, in the order it did.
    pub acked: Vec<u16>,
    /// A ping answer came.
    pub pong: bool,
}

/// A connected session: the two halves of the stream, with what is read and not yet parsed
/// and what is encoded and not yet written.
pub struct Connection {
    pub reader: Reader,
    pub writer: Writer,
}

/// The reading half of a connection.
pub struct Reader {
    stream: ReadHalf<Box<dyn Stream>>,
    input: BytesMut,
}

/// The writing half of a connection, with its encoded output.
pub struct Writer {
    stream: WriteHalf<Box<dyn Stream>>,
    output: BytesMut,
    /// Output written but not yet flushed (TLS may hold some back).
    unflushed: bool,
    /// The packet id of the next publish (1 to 65535; 0 is not a packet id).
    next_pkid: u16,
}

/// Connects, sends CONNECT with a clean session and waits for the broker's CONNACK, all within
/// [`CONNECT_TIMEOUT`].
pub async fn connect(options: &Options) -> Result<Connection, Error> {
    tokio::time::timeout(CONNECT_TIMEOUT, handshake(options)).await.unwrap_or(Err(Error::Timeout))
}

async fn handshake(options: &Options) -> Result<Connection, Error> {
    let tcp = TcpStream::connect((options.host.as_str(), options.port)).await?;
    // Publishes are gathered before they are written; Nagle's delay would only add to that.
    tcp.set_nodelay(true)?;
    let mut stream: Box<dyn Stream> = match &options.tls {
        None => Box::new(tcp),
        Some(config) => {
            let name =
                ServerName::try_from(options.host.clone()).map_err(|_| Error::ServerName(options.host.clone()))?;
            Box::new(TlsConnector::from(config.clone()).connect(name, tcp).await?)
        }
    };
    let mut connect = rumqttc::Connect::new(options.client_id.clone());
    connect.keep_alive = u16::try_from(options.keep_alive.as_secs()).unwrap_or(u16::MAX);
    connect.clean_session = true;
    if let Some((user, password)) = &options.login {
        connect.set_login(user.clone(), password.clone());
    }
    let mut output = BytesMut::new();
    connect.write(&mut output).map_err(|e| Error::Protocol(e.to_string()))?;
    stream.write_all(&output).await?;
    stream.flush().await?;
    let mut input = BytesMut::with_capacity(4096);
    loop {
        match Packet::read(&mut input, MAX_INCOMING) {
            Ok(Packet::ConnAck(ack)) if ack.code == ConnectReturnCode::Success => break,
            Ok(Packet::ConnAck(ack)) => return Err(Error::Refused(ack.code)),
            Ok(other) => return Err(Error::Protocol(format!("{other:?} before CONNACK"))),
            Err(rumqttc::Error::InsufficientBytes(_)) => {
                if stream.read_buf(&mut input).await? == 0 {
                    return Err(Error::Closed);
                }
            }
            Err(e) => return Err(Error::Protocol(e.to_string())),
        }
    }
    let (reader, writer) = tokio::io::split(stream);
    output.clear();
    Ok(Connection {
        reader: Reader { stream: reader, input },
        writer: Writer { stream: writer, output, unflushed: false, next_pkid: 1 },
    })
}

impl Reader {
    /// Waits for what the broker sends and returns it; an error when the connection fails or
    /// the broker closes it. Cancel-safe: dropped before it returns, it loses nothing.
    pub async fn read(&mut self) -> Result<Received, Error> {
        let mut received = Received::default();
        loop {
            // What came with the last read, even with the CONNACK, first.
            loop {
                match Packet::read(&mut self.input, MAX_INCOMING) {
                    Ok(Packet::PubAck(ack)) => received.acked.push(ack.pkid),
                    Ok(Packet::PingResp) => received.pong = true,
                    Ok(other) => return Err(Error::Protocol(format!("unexpected {other:?}"))),
                    Err(rumqttc::Error::InsufficientBytes(_)) => break,
                    Err(e) => return Err(Error::Protocol(e.to_string())),
                }
            }
            if received != Received::default() {
                return Ok(received);
            }
            if self.stream.read_buf(&mut self.input).await? == 0 {
                return Err(Error::Closed);
            }
        }
    }
}

impl Writer {
    /// Whether more publishes may be gathered before the output is written.
    pub fn has_room(&self) -> bool {
        self.output.len() < OUTPUT_HIGH
    }

    /// Whether encoded output waits to be written or flushed.
    pub fn is_pending(&self) -> bool {
        self.unflushed || !self.output.is_empty()
    }

    /// Encodes a QoS 1 PUBLISH of `payload` to `topic` and returns its packet id. Topics are
    /// 1 to 65535 bytes (the API refuses others) and payloads at most the forwarder's limit.
    ///
    /// Packet ids are handed out in turn. The broker acknowledges QoS 1 publishes in the order
    /// it got them, so with fewer than 65535 in flight an id is never one still in flight.
    pub fn publish(&mut self, topic: &str, payload: &[u8]) -> u16 {
        let pkid = self.next_pkid;
        self.next_pkid = self.next_pkid.checked_add(1).unwrap_or(1);
        let remaining = 2 + topic.len() + 2 + payload.len();
        self.output.reserve(5 + remaining);
        // PUBLISH, QoS 1, neither DUP nor RETAIN.
        self.output.put_u8(0x32);
        put_remaining_length(&mut self.output, remaining);
        self.output.put_u16(topic.len() as u16);
        self.output.put_slice(topic.as_bytes());
        self.output.put_u16(pkid);
        self.output.put_slice(payload);
        pkid
    }

    /// Encodes a PINGREQ.
    pub fn ping(&mut self) {
        self.output.put_slice(&[0xC0, 0x00]);
    }

    /// Writes as much of the output as the stream takes now, and flushes it once all of it
    /// is written. Cancel-safe: dropped before it returns, it loses nothing, and what it
    /// left undone is done by the next call.
    pub async fn write(&mut self) -> Result<(), Error> {
        if !self.output.is_empty() {
            if self.stream.write_buf(&mut self.output).await? == 0 {
                return Err(Error::Io(io::ErrorKind::WriteZero.into()));
            }
            self.unflushed = true;
        }
        if self.output.is_empty() {
            self.stream.flush().await?;
            self.unflushed = false;
        }
        Ok(())
    }

    /// Writes what is pending, then DISCONNECT: the broker ends the session at once.
    pub async fn disconnect(&mut self) -> Result<(), Error> {
        self.output.put_slice(&[0xE0, 0x00]);
        self.stream.write_all_buf(&mut self.output).await?;
        self.stream.flush().await?;
        Ok(())
    }
}

/// MQTT's variable-length "remaining length": seven bits a byte, lowest first.
fn put_remaining_length(output: &mut BytesMut, mut length: usize) {
    loop {
        let byte = (length % 128) as u8;
        length /= 128;
        if length == 0 {
            output.put_u8(byte);
            return;
        }
        output.put_u8(byte | 0x80);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use rumqttc::{Publish, QoS};

    use super::*;

    /// A publish as this client encodes it is the publish a general MQTT decoder reads, for
    /// every length of the remaining-length field.
    #[tokio::test]
    async fn publishes_decode_as_mqtt() {
        let (ours, _theirs) = tokio::io::duplex(64);
        let (_, stream) = tokio::io::split(Box::new(ours) as Box<dyn Stream>);
        let mut writer = Writer { stream, output: BytesMut::new(), unflushed: false, next_pkid: 65_534 };
        let sizes = [0, 1, 100, 127 - 10, 200, 16_383, 16_384, 2_097_151, 2_097_152];
        let mut expected = Vec::new();
        for size in sizes {
            let payload: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
            let pkid = writer.publish("zc/site/events", &payload);
            let mut publish = Publish::new("zc/site/events", QoS::AtLeastOnce, payload);
            publish.pkid = pkid;
            expected.push(publish);
        }
        let mut decoded = Vec::new();
        while !writer.output.is_empty() {
            match Packet::read(&mut writer.output, 4 * 1024 * 1024).unwrap() {
                Packet::Publish(publish) => decoded.push(publish),
                other => panic!("not a publish: {other:?}"),
            }
        }
        assert_eq!(decoded, expected);
        let ids: Vec<u16> = decoded.iter().map(|p| p.pkid).collect();
        assert_eq!(ids[..4], [65_534, 65_535, 1, 2], "ids go round and skip 0");
    }

    /// A peer on a free port that reads the client's CONNECT, then writes `answer` in pieces
    /// of `piece` bytes, then closes the connection (`close`) or waits for the client to go.
    async fn peer(answer: Vec<u8>, piece: usize, close: bool) -> Options {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut connect = BytesMut::new();
            while !matches!(Packet::read(&mut connect, 1 << 16), Ok(Packet::Connect(_))) {
                assert_ne!(socket.read_buf(&mut connect).await.unwrap(), 0, "closed before CONNECT");
            }
            for chunk in answer.chunks(piece) {
                socket.write_all(chunk).await.unwrap();
                socket.flush().await.unwrap();
                tokio::task::yield_now().await;
            }
            if !close {
                let _ = socket.read_buf(&mut connect).await;
            }
        });
        Options {
            client_id: "test".into(),
            host: "127.0.0.1".into(),
            port,
            keep_alive: Duration::from_secs(30),
            login: None,
            tls: None,
        }
    }

    const CONNACK_OK: [u8; 4] = [0x20, 0x02, 0x00, 0x00];

    #[tokio::test]
    async fn a_refusal_names_its_reason() {
        let options = peer(vec![0x20, 0x02, 0x00, 0x04], 4, false).await;
        let error = connect(&options).await.err().unwrap();
        assert_eq!(error.to_string(), "broker refused the connection: BadUserNamePassword");
    }

    #[tokio::test]
    async fn acknowledgements_split_across_reads_are_all_taken_in_order() {
        let mut answer = CONNACK_OK.to_vec();
        for pkid in [1u16, 2, 300] {
            answer.extend([0x40, 0x02]);
            answer.extend(pkid.to_be_bytes());
        }
        answer.extend([0xD0, 0x00]);
        let options = peer(answer, 3, false).await;
        let mut connection = connect(&options).await.unwrap();
        let mut got = Received::default();
        while got.acked.len() < 3 || !got.pong {
            let received = connection.reader.read().await.unwrap();
            got.acked.extend(received.acked);
            got.pong |= received.pong;
        }
        assert_eq!(got, Received { acked: vec![1, 2, 300], pong: true });
    }

    #[tokio::test]
    async fn a_broker_that_sends_what_a_publisher_never_asked_for_ends_the_connection() {
        // A SUBACK: this client never subscribes.
        let mut answer = CONNACK_OK.to_vec();
        answer.extend([0x90, 0x03, 0x00, 0x01, 0x00]);
        let options = peer(answer, 16, false).await;
        let mut connection = connect(&options).await.unwrap();
        let error = connection.reader.read().await.unwrap_err();
        assert!(matches!(error, Error::Protocol(_)), "{error}");
    }

    #[tokio::test]
    async fn a_broker_that_closes_before_its_connack_is_reported() {
        let options = peer(Vec::new(), 1, true).await;
        assert!(matches!(connect(&options).await.err().unwrap(), Error::Closed));
    }
}
