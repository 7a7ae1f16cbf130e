//! The forwarder's connections: the routing table, one outbox and client per connection, and
//! reloading both from the store. A reload starts added connections, stops removed ones,
//! restarts those whose client settings (host, port, TLS, profile, credentials) changed, and
//! only re-routes those whose topics alone changed.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::watch;
use uuid::Uuid;
use zonecast_bus::Journal;
use zonecast_bus::journal::Kind;
use zonecast_model::{EventType, format_id};
use zonecast_runtime::{Keys, Shutdown};
use zonecast_store::{ForwarderStore, StoreError, StoredCertificate};

use crate::Settings;
use crate::consumer::{Consumer, consumer_name};
use crate::endpoint::{self, Key, MAX_PAYLOAD};
use crate::link::Wake;
use crate::link::{Link, LinkState};
use crate::outbox::Message;
use crate::router::{BadEvent, Envelope, Router};
use crate::status::Table;
use crate::task::Stoppable;

/// What a reload does to the running clients.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// New connections.
    pub start: Vec<Uuid>,
    /// Connections whose client settings changed.
    pub restart: Vec<Uuid>,
    /// Connections that are gone.
    pub stop: Vec<Uuid>,
}

/// Compares the running clients' keys with the wanted ones. Pure; order follows `wanted`
/// (and, for `stop`, is sorted).
pub fn plan<K: PartialEq>(current: &HashMap<Uuid, K>, wanted: &[(Uuid, K)]) -> Plan {
    let mut plan = Plan::default();
    for (id, key) in wanted {
        match current.get(id) {
            None => plan.start.push(*id),
            Some(old) if old != key => plan.restart.push(*id),
            Some(_) => {}
        }
    }
    plan.stop = current.keys().filter(|id| !wanted.iter().any(|(w, _)| w == *id)).copied().collect();
    plan.stop.sort_unstable();
    plan
}

/// One connection: what its client was built from, its outbox, its client if it has one,
/// and its consumer of the event journal.
struct Entry {
    key: Key,
    shared: Arc<LinkState>,
    link: Option<Stoppable>,
    consumer: Stoppable,
}

/// Every connection of this replica.
pub struct Fleet {
    store: Arc<dyn ForwarderStore>,
    journal: Arc<dyn Journal>,
    keys: Arc<Keys>,
    settings: Settings,
    replica: String,
    shutdown: Shutdown,
    poke: Arc<Wake>,
    table: watch::Sender<Table>,
    router: Router,
    /// Outboxes in router order.
    outboxes: Vec<Arc<LinkState>>,
    entries: HashMap<Uuid, Entry>,
    /// Clients and consumers told to stop and not yet awaited.
    retired: Vec<Stoppable>,
}

impl Fleet {
    /// An empty fleet; [`Fleet::reload`] fills it. `poke` wakes the status reporter.
    pub fn new(
        store: Arc<dyn ForwarderStore>,
        journal: Arc<dyn Journal>,
        keys: Arc<Keys>,
        settings: Settings,
        replica: String,
        shutdown: Shutdown,
        poke: Arc<Wake>,
    ) -> (Self, watch::Receiver<Table>) {
        let (table, reader) = watch::channel(Table::default());
        let fleet = Self {
            store,
            journal,
            keys,
            settings,
            replica,
            shutdown,
            poke,
            table,
            router: Router::default(),
            outboxes: Vec::new(),
            entries: HashMap::new(),
            retired: Vec::new(),
        };
        (fleet, reader)
    }

    /// Reads every connection and the certificate profiles they use and brings the clients and
    /// routes in line. On a store error nothing changes.
    pub async fn reload(&mut self) -> Result<(), StoreError> {
        let stored = self.store.list_connections().await?;
        let mut certificates: HashMap<Uuid, Option<StoredCertificate>> = HashMap::new();
        for s in stored.iter().filter(|s| s.connection.tls) {
            let Some(profile) = s.connection.certificate_profile_id else { continue };
            if certificates.contains_key(&profile) {
                continue;
            }
            let certificate = match self.store.get_certificate(profile).await {
                Ok(c) => Some(c),
                Err(StoreError::NotFound { .. }) => None,
                Err(e) => return Err(e),
            };
            certificates.insert(profile, certificate);
        }
        let certificate_of = |s: &zonecast_store::StoredConnection| {
            s.connection.certificate_profile_id.and_then(|p| certificates.get(&p)?.as_ref())
        };
        let wanted: Vec<(Uuid, Key)> =
            stored.iter().map(|s| (s.connection.id, Key::of(s, certificate_of(s)))).collect();
        let current: HashMap<Uuid, Key> = self.entries.iter().map(|(id, e)| (*id, e.key.clone())).collect();
        let plan = plan(&current, &wanted);

        let (router, skipped) = Router::build(stored.iter().map(|s| &s.connection), self.settings.filters);
        for skip in skipped {
            tracing::warn!(connection = %format_id(&skip.connection), topic = skip.index, reason = %skip.reason,
                "stored topic cannot be used; skipped");
        }
        for id in &plan.stop {
            let Some(entry) = self.entries.remove(id) else { continue };
            if let Some(link) = entry.link {
                link.stop();
                self.retired.push(link);
            }
            entry.consumer.stop();
            self.retired.push(entry.consumer);
            // The connection is gone: so is what the journal kept for it.
            let (journal, name) = (self.journal.clone(), consumer_name(*id));
            tokio::spawn(async move {
                if let Err(e) = journal.remove_consumer(Kind::Events, &name).await {
                    tracing::warn!(consumer = %name, error = %e, "journal consumer of a removed connection not removed");
                }
            });
        }
        for s in
            stored.iter().filter(|s| plan.start.contains(&s.connection.id) || plan.restart.contains(&s.connection.id))
        {
            let id = s.connection.id;
            let (shared, consumer) = match self.entries.remove(&id) {
                Some(Entry { shared, link, consumer, .. }) => {
                    if let Some(link) = link {
                        link.stop();
                        self.retired.push(link);
                    }
                    (shared, consumer)
                }
                None => {
                    // Made before the change is reported in force: every event appended after
                    // the API answered the connection's creation is the connection's.
                    if let Err(e) =
                        self.journal.create_consumer(Kind::Events, &consumer_name(id), self.settings.queue).await
                    {
                        tracing::warn!(connection = %format_id(&id), error = %e, "journal consumer not made yet; the consumer task goes on trying");
                    }
                    let shared = LinkState::new(&self.settings, self.poke.clone());
                    // Its topics before its first event: an event taken without them would
                    // match nothing and be acknowledged unsent.
                    if let Some((_, routes)) = router.each().find(|(c, _)| *c == id) {
                        shared.set_routes(routes.into());
                    }
                    let consumer =
                        Consumer::spawn(self.journal.clone(), id, shared.clone(), self.settings.queue, &self.shutdown);
                    (shared, consumer)
                }
            };
            let certificate = certificate_of(s);
            let client_id = endpoint::client_id(&self.replica, id);
            let link = match endpoint::options(s, certificate, &self.keys, client_id) {
                Ok(options) => {
                    let name = format!("{} ({}:{})", format_id(&id), s.connection.host, s.connection.port);
                    Some(Link::spawn(shared.clone(), options, &self.settings, &self.shutdown, name))
                }
                Err(error) => {
                    tracing::warn!(connection = %format_id(&id), %error, "MQTT connection cannot be started");
                    shared.fail(error);
                    None
                }
            };
            self.entries.insert(id, Entry { key: Key::of(s, certificate), shared, link, consumer });
        }
        self.retired.retain(|task| !task.is_finished());

        for (id, routes) in router.each() {
            if let Some(entry) = self.entries.get(&id) {
                entry.shared.set_routes(routes.into());
            }
        }
        self.outboxes = router.connections().filter_map(|id| self.entries.get(&id).map(|e| e.shared.clone())).collect();
        self.router = router;
        let table: Vec<(Uuid, Arc<LinkState>)> = self.entries.iter().map(|(id, e)| (*id, e.shared.clone())).collect();
        self.table.send_replace(Arc::new(table));
        tracing::info!(
            connections = self.entries.len(),
            started = plan.start.len(),
            restarted = plan.restart.len(),
            stopped = plan.stop.len(),
            "forwarder configuration loaded"
        );
        Ok(())
    }

    /// Whether some topic's chain could take position updates (`LOCATION_RAW_UPDATE`): when none
    /// can, the forwarder does not subscribe to positions at all.
    pub fn wants_positions(&self) -> bool {
        let position = EventType::LocationRawUpdate;
        self.router.admits(Some(position.category().as_str()), Some(position.as_str()))
    }

    /// Routes one position from the bus to the outboxes of the topics it matches; returns how
    /// many. The payload is parsed once, into the JSON tree the filter chains' selectors walk;
    /// its Category and Type are read from that tree to skip one no chain can take. (Events
    /// reach the outboxes through each connection's journal consumer.)
    pub fn route(&self, payload: &Bytes) -> Result<usize, BadEvent> {
        let event = Envelope::parse(payload)?;
        let (category, kind) = event.kind();
        if !self.router.admits(category, kind) {
            return Ok(0);
        }
        let mut count = 0;
        for (index, topic) in self.router.route_indexed(event.tree()) {
            let Some(shared) = self.outboxes.get(index) else { continue };
            count += 1;
            if payload.len() > MAX_PAYLOAD {
                shared.count_dropped();
                continue;
            }
            shared.push(Message { topic: topic.clone(), payload: payload.clone(), receipt: None });
        }
        Ok(count)
    }

    /// Stops taking events and stops every client, letting each deliver what it holds for up
    /// to `settings.drain`, and returns the connections for the final status round. Events
    /// still held are not acknowledged: the journal hands them out again.
    pub async fn finish(mut self) -> Table {
        let table = self.table.borrow().clone();
        let mut links = Vec::new();
        for (_, entry) in self.entries.drain() {
            entry.consumer.stop();
            self.retired.push(entry.consumer);
            links.extend(entry.link);
        }
        // The consumers stop taking events before the clients deliver what they hold.
        futures::future::join_all(self.retired.drain(..).map(Stoppable::finish)).await;
        futures::future::join_all(links.into_iter().map(Stoppable::finish)).await;
        table
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u128) -> Uuid {
        Uuid::from_u128(n)
    }

    #[test]
    fn new_changed_and_removed_connections_are_told_apart() {
        let current: HashMap<Uuid, u32> = [(id(1), 10), (id(2), 20), (id(3), 30)].into();
        let wanted = [(id(4), 40), (id(2), 21), (id(1), 10)];
        let p = plan(&current, &wanted);
        assert_eq!(p, Plan { start: vec![id(4)], restart: vec![id(2)], stop: vec![id(3)] });
    }

    #[test]
    fn an_unchanged_configuration_changes_nothing() {
        let current: HashMap<Uuid, u32> = [(id(1), 10), (id(2), 20)].into();
        assert_eq!(plan(&current, &[(id(2), 20), (id(1), 10)]), Plan::default());
        assert_eq!(plan(&HashMap::<Uuid, u32>::new(), &[]), Plan::default());
    }
}
