//! The clock: what becomes due with time alone — entries whose EntryDelayMs ran out, exits
//! whose ExitDelayMs ran out, devices silent for DeviceTimeoutSeconds or DeviceOfflineSeconds,
//! timed zones past their StopTime, and stays past their zone's MaxDwellSeconds.

use chrono::{DateTime, Duration, Utc};
use uuid::Uuid;
use zonecast_model::{ExitReason, IdSource, Mac};

use super::state::{At, Phase};
use super::{Engine, Output};

impl Engine {
    /// Draws what a transition of `mac` in `zone` due at `at` causes from a source keyed by
    /// them, and returns the source to put back after it: the same transition evaluated again
    /// gets the same IDs.
    fn keyed_ids(&mut self, mac: &Mac, zone: Uuid, at: DateTime<Utc>) -> IdSource {
        std::mem::replace(&mut self.ids, IdSource::keyed(at, &[mac.as_str().as_bytes(), zone.as_bytes()]))
    }

    /// The clock: fires delayed entries and exits that are due, device timeouts, offline
    /// reports, the ends of time windows and dwell limits.
    pub fn on_tick(&mut self, now: DateTime<Utc>, out: &mut Vec<Output>) {
        let (entry_delay, exit_delay, timeout) =
            (self.catalog.entry_delay, self.catalog.exit_delay, self.catalog.device_timeout);
        let mut due: Vec<(Mac, Uuid, Phase, DateTime<Utc>)> = Vec::new();
        let mut timed_out: Vec<(Mac, DateTime<Utc>)> = Vec::new();
        let mut silent: Vec<(Mac, DateTime<Utc>, Duration)> = Vec::new();
        // Only a timeout, offline reports or a phase on a delay make a device due: without
        // any, the clock looks at no device.
        if timeout.is_some() || self.catalog.reports_offline() || self.delayed {
            let mut waiting = false;
            for (mac, device) in &self.devices {
                let offline = self.catalog.offline_after(mac);
                if let Some(o) = offline
                    && !device.offline
                    && now - device.silent_since() >= o
                {
                    silent.push((mac.clone(), device.silent_since(), o));
                }
                // A timed-out device kept for its offline report has left its zones already.
                if let Some(t) = timeout
                    && now - device.ts >= t
                {
                    if !device.zones.is_empty() || offline.is_none() {
                        timed_out.push((mac.clone(), device.ts + t));
                    }
                    continue;
                }
                for (id, phase) in &device.zones {
                    match phase {
                        Phase::Entering { since } if now - *since >= entry_delay => {
                            due.push((mac.clone(), *id, phase.clone(), *since + entry_delay));
                        }
                        Phase::Inside { exit_since: Some(since), .. } if now - *since >= exit_delay => {
                            due.push((mac.clone(), *id, phase.clone(), *since + exit_delay));
                        }
                        Phase::Entering { .. } | Phase::Inside { exit_since: Some(_), .. } => waiting = true,
                        Phase::Inside { exit_since: None, .. } => {}
                    }
                }
            }
            // What is due now ends its delay below; what waits keeps the clock looking.
            self.delayed = waiting;
        }
        due.sort_unstable_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
        timed_out.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        for (mac, id, phase, at) in due {
            let Some(&zone_index) = self.catalog.by_id.get(&id) else { continue };
            let ids = self.keyed_ids(&mac, id, at);
            match phase {
                Phase::Entering { .. } => {
                    self.forget(&mac, id);
                    self.enter(&mac, zone_index, At { ts: at, now }, out);
                }
                Phase::Inside { .. } => self.exit(&mac, zone_index, ExitReason::Position, At { ts: at, now }, out),
            }
            self.ids = ids;
        }
        for (mac, at) in timed_out {
            let zones: Vec<Uuid> =
                self.devices.get(&mac).map(|d| d.zones.iter().map(|(id, _)| *id).collect()).unwrap_or_default();
            for id in zones {
                match self.catalog.by_id.get(&id) {
                    Some(&zone_index) => {
                        let ids = self.keyed_ids(&mac, id, at);
                        self.exit(&mac, zone_index, ExitReason::Timeout, At { ts: at, now }, out);
                        self.ids = ids;
                    }
                    None => self.forget(&mac, id),
                }
            }
            // Kept while it may be reported offline: its silence is still to be reported, or
            // its return.
            if self.catalog.offline_after(&mac).is_none()
                && let Some(device) = self.devices.remove(&mac)
            {
                self.grid.removed(&mac, device.pos);
            }
        }
        silent.sort_unstable();
        self.offline(silent, now, out);
        let mut ended: Vec<usize> = self
            .occupants
            .keys()
            .filter_map(|id| self.catalog.by_id.get(id).copied())
            .filter(|&zone_index| {
                let z = &self.catalog.zones[zone_index];
                z.spec.is_timed && z.spec.stop_time.is_some_and(|stop| stop <= now)
            })
            .collect();
        ended.sort_unstable();
        for zone_index in ended {
            let zone = self.catalog.zones[zone_index].clone();
            let stop = zone.spec.stop_time.unwrap_or(now);
            let mut inside: Vec<Mac> =
                self.occupants.get(&zone.spec.id).map(|set| set.iter().cloned().collect()).unwrap_or_default();
            inside.sort_unstable();
            for mac in inside {
                self.exit(&mac, zone_index, ExitReason::Window, At { ts: stop, now }, out);
            }
        }
        self.dwell_limits(now, out);
    }
}
