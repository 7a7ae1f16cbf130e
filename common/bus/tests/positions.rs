//! One contract for both position logs, opened as the services open them
//! (`zonecast_bus::open`): what ingest publishes reaches the follower of its partition in order
//! and every tap that wants it; over NATS it is kept, stored together with other partitions'
//! positions, and each follower takes its own; in one process it is handed over as the
//! publisher held it.
//!
//! The NATS half needs a server at `ZONECAST_TEST_NATS_URL` (default `nats://127.0.0.1:4222`)
//! and fails, never skips, when there is none.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use tokio::time::timeout;
use zonecast_bus::positions::{self, Batch};
use zonecast_bus::{Channels, Decoded, Encode, Message, Site};

const START_NATS: &str = "start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log";

/// Longest wait for something that must arrive.
const ARRIVES: Duration = Duration::from_secs(10);

/// A batch as a publisher holds it: its lines.
#[derive(Debug)]
struct Lines(Vec<String>);

impl Encode for Lines {
    fn decoded(&self) -> &(dyn std::any::Any + Send + Sync) {
        &self.0
    }

    fn encode(&self) -> Bytes {
        let mut bytes = bytes::BytesMut::new();
        for line in &self.0 {
            positions::push_line(&mut bytes, line.as_bytes());
        }
        bytes.freeze()
    }

    fn weight(&self) -> usize {
        self.0.len()
    }
}

fn batch(lines: &[&str]) -> Decoded {
    Arc::new(Lines(lines.iter().map(|l| (*l).to_owned()).collect()))
}

/// The lines a follower or tap got: decoded where it was handed over, else read.
fn read(decoded: Option<&Vec<String>>, payload: &Bytes) -> Vec<String> {
    match decoded {
        Some(lines) => lines.clone(),
        None => positions::lines(payload).map(|l| String::from_utf8(l.to_vec()).unwrap()).collect(),
    }
}

fn of_batch(batch: &Batch) -> Vec<String> {
    read(batch.decoded::<Vec<String>>(), &batch.payload)
}

fn of_message(message: &Message) -> Vec<String> {
    read(message.decoded::<Vec<String>>(), &message.payload)
}

fn nats_url() -> String {
    std::env::var("ZONECAST_TEST_NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".to_owned())
}

/// The channels of a fresh site of two partitions: over NATS when `nats`, else in-process.
async fn open(nats: bool) -> Channels {
    open_site(nats, &format!("zt{}", uuid::Uuid::new_v4().simple())).await
}

/// [`open`] with the subject prefix `prefix`.
async fn open_site(nats: bool, prefix: &str) -> Channels {
    let url = nats_url();
    let site =
        Site { prefix, partitions: 2, journal: Default::default(), positions: Default::default(), journal_file: None };
    zonecast_bus::open(nats.then_some(url.as_str()), "positions-contract", site).await.unwrap_or_else(|e| {
        panic!("the NATS half needs a NATS server ({e}); start one with:\n  {START_NATS}\nor point ZONECAST_TEST_NATS_URL at another server")
    })
}

async fn next<S: futures::Stream + Unpin>(stream: &mut S) -> S::Item {
    timeout(ARRIVES, stream.next()).await.expect("in time").expect("the stream goes on")
}

async fn published_batches_reach_their_follower_in_order_and_every_tap(nats: bool) {
    let channels = open(nats).await;
    let log = &channels.positions;
    assert_eq!(log.partitions(), 2);
    assert_eq!(log.keeps(), nats, "JetStream keeps batches, one process does not");
    log.prepare().await.unwrap();
    let mut follower = log.follow(1, 10, None).await.unwrap();
    let mut every = log.tap(None, None).await.unwrap();
    let mut first = log.tap(Some(&[0]), None).await.unwrap();

    log.publish(vec![(1, batch(&["a1", "a2"])), (0, batch(&["b1"]))]).await.unwrap().confirmed().await.unwrap();
    log.publish(vec![(1, batch(&["c1"]))]).await.unwrap().confirmed().await.unwrap();

    let a = next(&mut follower).await;
    let c = next(&mut follower).await;
    assert_eq!((a.partition, of_batch(&a)), (1, vec!["a1".to_owned(), "a2".to_owned()]));
    assert_eq!((c.partition, of_batch(&c)), (1, vec!["c1".to_owned()]));
    assert_eq!(a.decoded.is_some(), !nats, "handed over decoded in one process only");
    assert_eq!(a.skipped, 0);
    match nats {
        true => assert!(a.sequence.is_some_and(|a| c.sequence.is_some_and(|c| c > a)), "kept in order"),
        false => assert_eq!((a.sequence, c.sequence), (None, None), "nothing kept, no place in a stream"),
    }
    match nats {
        true => {
            // Stored together: one message per publication, each partition's lines together.
            let together = of_message(&next(&mut every).await);
            assert_eq!(together, ["b1", "a1", "a2"], "the first publication is one message");
            assert_eq!(of_message(&next(&mut every).await), ["c1"]);
            assert_eq!(of_message(&next(&mut first).await), together, "a tap of partition 0 takes what holds it");
        }
        false => {
            let mut tapped = Vec::new();
            for _ in 0..3 {
                tapped.push(of_message(&next(&mut every).await));
            }
            tapped.sort();
            assert_eq!(tapped, [vec!["a1", "a2"], vec!["b1"], vec!["c1"]], "the tap of every partition sees all three");
            assert_eq!(of_message(&next(&mut first).await), ["b1"], "the tap of partition 0 sees its batch only");
        }
    }

    match nats {
        true => {
            assert!(log.backlog().await.unwrap() >= Some(1), "not acknowledged yet");
            c.ack.ack();
            let mut backlog = log.backlog().await.unwrap();
            let deadline = tokio::time::Instant::now() + ARRIVES;
            while backlog != Some(0) && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(20)).await; // sleep-ok: polling
                backlog = log.backlog().await.unwrap();
            }
            assert_eq!(backlog, Some(0), "acknowledging the newest batch acknowledges the earlier one too");
            log.remove_all().await.unwrap();
        }
        false => assert_eq!(log.backlog().await.unwrap(), None, "nothing is kept in one process"),
    }
}

#[tokio::test]
async fn in_process_published_batches_reach_their_follower_in_order_and_every_tap() {
    published_batches_reach_their_follower_in_order_and_every_tap(false).await;
}

#[tokio::test]
async fn nats_published_batches_reach_their_follower_in_order_and_every_tap() {
    published_batches_reach_their_follower_in_order_and_every_tap(true).await;
}

/// A follower that reopens where it left off (`had`) gets what came after, over NATS: what it
/// had is not delivered again.
#[tokio::test]
async fn nats_a_follower_reopened_after_what_it_had_gets_only_what_came_after() {
    let channels = open(true).await;
    let log = &channels.positions;
    for line in ["one", "two", "three"] {
        log.publish(vec![(0, batch(&[line]))]).await.unwrap().confirmed().await.unwrap();
    }
    let mut follower = log.follow(0, 10, None).await.unwrap();
    let one = next(&mut follower).await;
    assert_eq!(of_batch(&one), ["one"]);
    drop(follower);
    let mut reopened = log.follow(0, 10, one.sequence).await.unwrap();
    assert_eq!(of_batch(&next(&mut reopened).await), ["two"]);
    assert_eq!(of_batch(&next(&mut reopened).await), ["three"]);
    log.remove_all().await.unwrap();
}

/// A message missing from the middle of the stream (lost on its way in a JetStream leader
/// change, or here taken out of the stream) is looked for once more, by reading again after the
/// last message taken; still missing, it is gone, and the follower counts it as skipped.
#[tokio::test]
async fn nats_messages_missing_in_the_middle_of_the_stream_are_counted_as_skipped() {
    let prefix = format!("zt{}", uuid::Uuid::new_v4().simple());
    let channels = open_site(true, &prefix).await;
    let log = &channels.positions;
    let mut sequences = Vec::new();
    for line in ["one", "two", "three"] {
        log.publish(vec![(0, batch(&[line]))]).await.unwrap().confirmed().await.unwrap();
    }
    let js = async_nats::jetstream::new(async_nats::connect(nats_url()).await.unwrap());
    let mut stream = js.get_stream(positions::stream_name(&prefix)).await.unwrap();
    let first = stream.info().await.unwrap().state.first_sequence;
    assert!(stream.delete_message(first + 1).await.unwrap());
    let mut follower = log.follow(0, 10, None).await.unwrap();
    for _ in 0..2 {
        let batch = next(&mut follower).await;
        sequences.push((of_batch(&batch), batch.skipped));
    }
    assert_eq!(
        sequences,
        [(vec!["one".to_owned()], 0), (vec!["three".to_owned()], 1)],
        "the missing message counted once"
    );
    assert_eq!(stream.info().await.unwrap().state.messages, 2, "nothing else taken out");
    log.remove_all().await.unwrap();
}

/// Every partition followed in one process takes its own lines from the shared messages, in
/// order and once: a partition followed from an earlier point makes the reading start there,
/// and the others are not handed again what they had. A partition without positions is handed
/// an empty batch at a newer message now and then, so that its mark keeps up.
#[tokio::test]
async fn nats_partitions_followed_together_take_their_own_lines_once_each() {
    let channels = open(true).await;
    let log = &channels.positions;
    log.publish(vec![(0, batch(&["p0-a"])), (1, batch(&["p1-a"]))]).await.unwrap().confirmed().await.unwrap();
    log.publish(vec![(0, batch(&["p0-b"])), (1, batch(&["p1-b"]))]).await.unwrap().confirmed().await.unwrap();
    let mut zero = log.follow(0, 1000, None).await.unwrap();
    let a = next(&mut zero).await;
    let b = next(&mut zero).await;
    assert_eq!((of_batch(&a), of_batch(&b)), (vec!["p0-a".to_owned()], vec!["p0-b".to_owned()]));
    // Partition 1 followed from its first message, which the reading has passed already.
    let mut one = log.follow(1, 1000, None).await.unwrap();
    assert_eq!(of_batch(&next(&mut one).await), ["p1-a"]);
    assert_eq!(of_batch(&next(&mut one).await), ["p1-b"]);
    log.publish(vec![(0, batch(&["p0-c"]))]).await.unwrap().confirmed().await.unwrap();
    let c = next(&mut zero).await;
    assert_eq!(of_batch(&c), ["p0-c"], "partition 0 is not handed again what it had");
    assert!(c.sequence > b.sequence);

    // Only partition 0 gets positions from now on: partition 1 is handed an empty batch at one
    // of the newer messages within a few of them.
    let (mut quiet, mut read) = (None, Vec::new());
    for round in 0..100 {
        log.publish(vec![(0, batch(&[&format!("p0-{round}")]))]).await.unwrap().confirmed().await.unwrap();
        read.push(next(&mut zero).await.sequence);
        if let Ok(Some(batch)) = timeout(Duration::from_millis(50), one.next()).await {
            quiet = Some(batch);
            break;
        }
    }
    let empty = quiet.expect("an empty batch for the quiet partition");
    assert_eq!((empty.partition, of_batch(&empty), empty.skipped), (1, Vec::<String>::new(), 0));
    assert!(read.contains(&empty.sequence) && empty.sequence > c.sequence, "at one of the newer messages");
    log.remove_all().await.unwrap();
}

/// A nats-server of the test's own, on a free port, that queues at most `max_pending` for one
/// client before cutting it off as a slow consumer, and logs to a file; killed on drop.
struct OwnServer {
    child: std::process::Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl OwnServer {
    async fn start(max_pending: &str) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("nats.conf");
        let store = dir.path().join("jetstream");
        std::fs::write(
            &config,
            format!("listen: 127.0.0.1:{port}\nmax_pending: {max_pending}\njetstream {{ store_dir: {store:?} }}\n"),
        )
        .unwrap();
        let child = std::process::Command::new("/usr/sbin/nats-server")
            .arg("-c")
            .arg(&config)
            .arg("-l")
            .arg(dir.path().join("nats.log"))
            .spawn()
            .unwrap_or_else(|e| panic!("nats-server does not run ({e}); install it with: apt-get install nats-server"));
        let deadline = tokio::time::Instant::now() + ARRIVES;
        while tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err() {
            assert!(tokio::time::Instant::now() < deadline, "nats-server on port {port} did not come up");
            tokio::time::sleep(Duration::from_millis(20)).await; // sleep-ok: polling
        }
        Self { child, port, dir }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("nats.log")).unwrap()
    }
}

impl Drop for OwnServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A backlog several times what the server queues for one client is read in order and in full
/// without the server cutting the follower off as a slow consumer (which would make it connect
/// again and be sent the backlog again): a follower asks for a bounded number of bytes at a
/// time, not a number of messages of up to half a megabyte each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nats_a_backlog_beyond_what_the_server_queues_for_a_client_is_read_without_a_cut_off() {
    const MESSAGES: usize = 96;
    const LINES: usize = 480;
    let server = OwnServer::start("16MB").await;
    let url = format!("nats://127.0.0.1:{}", server.port);
    let prefix = format!("zt{}", uuid::Uuid::new_v4().simple());
    let site = Site {
        prefix: &prefix,
        partitions: 2,
        journal: Default::default(),
        positions: Default::default(),
        journal_file: None,
    };
    let channels = zonecast_bus::open(Some(&url), "positions-contract", site).await.unwrap();
    let log = &channels.positions;
    log.prepare().await.unwrap();
    // 96 messages of about 480 KB: 46 MB, nearly three times the server's 16 MB.
    let line = "x".repeat(1000);
    let lines = vec![line.as_str(); LINES];
    for _ in 0..MESSAGES {
        log.publish(vec![(0, batch(&lines))]).await.unwrap().confirmed().await.unwrap();
    }
    let mut follower = log.follow(0, 10, None).await.unwrap();
    let mut last = None;
    for n in 0..MESSAGES {
        let batch = next(&mut follower).await;
        assert_eq!((of_batch(&batch).len(), batch.skipped), (LINES, 0), "batch {n}");
        assert!(batch.sequence > last, "batch {n} after the one before");
        last = batch.sequence;
        batch.ack.ack();
    }
    let text = server.log();
    assert!(!text.contains("Slow Consumer"), "the server cut a client off:\n{text}");
}
