//! The evaluator's compiled view of the configuration: zones with their prepared regions in a
//! scene, the settings in force and device radii. Zone writes are applied in place, zone by zone
//! ([`Catalog::patch`]): a few microseconds each, whatever the number of zones; a settings or
//! radius change keeps the zones and their scene and replaces only those.

use foldhash::{HashMap, HashMapExt};

use chrono::{DateTime, Utc};
use uuid::Uuid;
use zonecast_geometry::{Region, Scene, Vec3};
use zonecast_model::{AlarmKind, DeviceTag, Mac, SettingName, Settings, ZoneSpec};

/// One zone, ready for evaluation.
#[derive(Debug, Clone)]
pub struct Zone {
    /// The configuration as stored.
    pub spec: ZoneSpec,
    /// Prepared geometry (for mobile zones: at its configured place; see `centre`).
    pub region: Region,
    /// Centre of the configured region: a mobile zone is offset by `source − centre`.
    pub centre: Vec3,
}

impl Zone {
    /// Whether the zone is live at `t` (Active and inside its time window).
    pub fn live_at(&self, t: DateTime<Utc>) -> bool {
        self.spec.active && self.in_window(t)
    }

    /// Whether `t` is inside the zone's time window (always, for untimed zones).
    pub fn in_window(&self, t: DateTime<Utc>) -> bool {
        if !self.spec.is_timed {
            return true;
        }
        self.spec.start_time.is_none_or(|s| s <= t) && self.spec.stop_time.is_none_or(|s| t < s)
    }
}

/// A stored zone left out of a catalog because its geometry no longer validates (it was
/// validated on write, so only after a rule change); the shell logs it.
#[derive(Debug, Clone, PartialEq)]
pub struct Skipped {
    /// The zone.
    pub zone: Uuid,
    /// What the geometry rules say.
    pub reason: String,
}

/// `spec` ready for evaluation, or why not.
fn prepare(spec: ZoneSpec) -> Result<Zone, Skipped> {
    match zonecast_geometry::validate(spec.geometry_type, &spec.geometry_data) {
        Ok(shape) => {
            let region = Region::new(&shape);
            let centre = region.centre();
            Ok(Zone { spec, region, centre })
        }
        Err(e) => Err(Skipped { zone: spec.id, reason: e.to_string() }),
    }
}

/// The zones of `specs` that prepare, and the others in `skipped`.
fn prepare_all(specs: Vec<ZoneSpec>, skipped: &mut Vec<Skipped>) -> Vec<Zone> {
    specs.into_iter().filter_map(|spec| prepare(spec).map_err(|s| skipped.push(s)).ok()).collect()
}

/// A device registry entry as evaluators keep it: the name and group events carry, and the
/// device's own OfflineSeconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registered {
    /// Name and group.
    pub tag: DeviceTag,
    /// OfflineSeconds, if the device has its own.
    pub offline_seconds: Option<u64>,
}

/// How stale the recorded presence of a device may grow at most.
const PRESENCE_INTERVAL: chrono::Duration = chrono::Duration::seconds(60);

/// All zones, the scene over them, settings and radii.
pub struct Catalog {
    /// Zones by index.
    pub zones: Vec<Zone>,
    /// Zone ID → index.
    pub by_id: HashMap<Uuid, usize>,
    /// Static zones in the scene's hierarchy (scene index → zone index); mobile zones are the
    /// scene's movable entries keyed by their zone index.
    pub scene: Scene,
    static_zone: Vec<usize>,
    /// Zone index → its scene index (static zones only): the inverse of `static_zone`.
    scene_index: Vec<Option<u32>>,
    /// Mobile zones by their source device.
    pub mobile_by_source: HashMap<Mac, Vec<usize>>,
    /// Settings in force.
    pub settings: Settings,
    radii: HashMap<Mac, f64>,
    /// The device registry's names and groups, which events carry.
    names: HashMap<Mac, DeviceTag>,
    /// The registry's own OfflineSeconds of the devices that have one.
    offline_after: HashMap<Mac, chrono::Duration>,
    default_radius: f64,
    /// ExitToleranceMeters.
    pub exit_tolerance: f64,
    /// EntryDelayMs as a duration.
    pub entry_delay: chrono::Duration,
    /// ExitDelayMs as a duration.
    pub exit_delay: chrono::Duration,
    /// DeviceTimeoutSeconds; `None` when 0 (never).
    pub device_timeout: Option<chrono::Duration>,
    /// DeviceOfflineSeconds; `None` when 0 (never).
    device_offline: Option<chrono::Duration>,
    /// Largest device radius, for query margins.
    pub max_radius: f64,
    /// Zones of the last build or patch left out (see [`Skipped`]).
    pub skipped: Vec<Skipped>,
}

impl Catalog {
    /// Compiles the stored configuration. Zones whose geometry no longer validates are left
    /// out and listed in `skipped`.
    pub fn build(specs: Vec<ZoneSpec>, written: &[zonecast_model::Setting], radii: Vec<(Mac, f64)>) -> Self {
        let mut skipped = Vec::new();
        let zones = prepare_all(specs, &mut skipped);
        let mut catalog = Self::of_zones(zones).with_parameters(Settings::from_written(written), radii);
        catalog.skipped = skipped;
        catalog
    }

    /// Replaces the zones `touched` by `changed` (those of them that still exist, as the store
    /// has them now) and removes the others of `touched`, in place: what a burst of zone writes
    /// changes, without reading, preparing or copying any other zone. Returns the former state
    /// of each touched zone that existed. Replaced zones keep their index; a removed zone's index
    /// goes to the last zone, as in [`Vec::swap_remove`]; new zones come last, in ID order.
    /// Settings and radii stay; `skipped` lists the zones of `changed` left out.
    pub fn patch(&mut self, changed: Vec<ZoneSpec>, touched: &foldhash::HashSet<Uuid>) -> HashMap<Uuid, Zone> {
        let mut skipped = Vec::new();
        let mut fresh: HashMap<Uuid, Zone> =
            prepare_all(changed, &mut skipped).into_iter().map(|z| (z.spec.id, z)).collect();
        // In ID order, so that the same burst gives the same indexes.
        let mut ids: Vec<Uuid> = touched.iter().copied().collect();
        ids.sort_unstable();
        let mut former = HashMap::new();
        for id in ids {
            match (self.by_id.get(&id).copied(), fresh.remove(&id)) {
                (Some(zone_index), Some(zone)) => {
                    former.insert(id, self.replace(zone_index, zone));
                }
                (Some(zone_index), None) => {
                    former.insert(id, self.remove(zone_index));
                }
                (None, Some(zone)) => {
                    fresh.insert(id, zone);
                }
                (None, None) => {}
            }
        }
        let mut added: Vec<Zone> = fresh.into_values().collect();
        added.sort_by_key(|z| z.spec.id);
        for zone in added {
            self.push(zone);
        }
        self.skipped = skipped;
        former
    }

    /// Adds `zone` with the next index.
    fn push(&mut self, zone: Zone) {
        let zone_index = self.zones.len();
        self.by_id.insert(zone.spec.id, zone_index);
        self.zones.push(zone);
        self.scene_index.push(None);
        self.index(zone_index);
    }

    /// Puts `zone` in place of the zone at `zone_index` and returns the zone it replaces.
    fn replace(&mut self, zone_index: usize, zone: Zone) -> Zone {
        if let (Some(si), None) = (self.scene_index[zone_index], &zone.spec.mobile_origin_source) {
            // Static before and after: the scene changes that region in place.
            self.scene.replace_static(si as usize, zone.region.clone());
            return std::mem::replace(&mut self.zones[zone_index], zone);
        }
        self.unindex(zone_index);
        let former = std::mem::replace(&mut self.zones[zone_index], zone);
        self.index(zone_index);
        former
    }

    /// Removes the zone at `zone_index` and returns it; the last zone takes its index.
    fn remove(&mut self, zone_index: usize) -> Zone {
        self.unindex(zone_index);
        let last = self.zones.len() - 1;
        if zone_index != last {
            self.by_id.insert(self.zones[last].spec.id, zone_index);
            match (self.scene_index[last], &self.zones[last].spec.mobile_origin_source) {
                (Some(si), _) => self.static_zone[si as usize] = zone_index,
                (None, Some(source)) => {
                    if let Some(list) = self.mobile_by_source.get_mut(source) {
                        list.iter_mut().filter(|z| **z == last).for_each(|z| *z = zone_index);
                    }
                    // Placed again under its new index by whoever knows where its source is.
                    self.scene.remove_movable(last as u32);
                }
                (None, None) => {}
            }
        }
        self.by_id.remove(&self.zones[zone_index].spec.id);
        self.scene_index.swap_remove(zone_index);
        self.zones.swap_remove(zone_index)
    }

    /// Indexes the zone at `zone_index`: a static zone in the scene, a mobile one under its
    /// source (the scene gets it when its source's position is known).
    fn index(&mut self, zone_index: usize) {
        match self.zones[zone_index].spec.mobile_origin_source.clone() {
            Some(source) => self.mobile_by_source.entry(source).or_default().push(zone_index),
            None => {
                let si = self.scene.push_static(self.zones[zone_index].region.clone());
                self.static_zone.push(zone_index);
                self.scene_index[zone_index] = Some(si as u32);
            }
        }
    }

    /// Takes zone `zone_index` out of the scene and the source lists.
    fn unindex(&mut self, zone_index: usize) {
        if let Some(si) = self.scene_index[zone_index].take() {
            let si = si as usize;
            self.scene.swap_remove_static(si);
            self.static_zone.swap_remove(si);
            if let Some(&moved) = self.static_zone.get(si) {
                self.scene_index[moved] = Some(si as u32);
            }
        } else if let Some(source) = &self.zones[zone_index].spec.mobile_origin_source {
            if let Some(list) = self.mobile_by_source.get_mut(source) {
                list.retain(|z| *z != zone_index);
                if list.is_empty() {
                    self.mobile_by_source.remove(source);
                }
            }
            self.scene.remove_movable(zone_index as u32);
        }
    }

    /// `zones` indexed and in a scene, with the default settings and no radii.
    fn of_zones(zones: Vec<Zone>) -> Self {
        let by_id = zones.iter().enumerate().map(|(i, z)| (z.spec.id, i)).collect();
        let mut static_zone = Vec::new();
        let mut static_regions = Vec::new();
        let mut scene_index = vec![None; zones.len()];
        let mut mobile_by_source: HashMap<Mac, Vec<usize>> = HashMap::new();
        for (i, z) in zones.iter().enumerate() {
            match &z.spec.mobile_origin_source {
                Some(source) => mobile_by_source.entry(source.clone()).or_default().push(i),
                None => {
                    scene_index[i] = Some(static_zone.len() as u32);
                    static_zone.push(i);
                    static_regions.push(z.region.clone());
                }
            }
        }
        Self {
            scene: Scene::build(static_regions),
            zones,
            by_id,
            static_zone,
            scene_index,
            mobile_by_source,
            exit_tolerance: 0.0,
            entry_delay: chrono::Duration::zero(),
            exit_delay: chrono::Duration::zero(),
            device_timeout: None,
            device_offline: None,
            offline_after: HashMap::new(),
            settings: Settings::default(),
            radii: HashMap::new(),
            names: HashMap::new(),
            default_radius: 0.0,
            max_radius: 0.0,
            skipped: Vec::new(),
        }
    }

    /// The same zones and scene with other settings and radii: what a settings or radius write
    /// changes, without rebuilding any zone or the index over them.
    pub fn with_parameters(mut self, settings: Settings, radii: Vec<(Mac, f64)>) -> Self {
        let default_radius = settings.get(SettingName::DefaultDeviceRadiusMeters);
        let radii: HashMap<Mac, f64> = radii.into_iter().collect();
        let ms = |name| chrono::Duration::milliseconds(settings.get(name) as i64);
        let seconds = |name| Some(settings.get(name) as i64).filter(|s| *s > 0).map(chrono::Duration::seconds);
        self.max_radius = radii.values().copied().fold(default_radius, f64::max);
        self.exit_tolerance = settings.get(SettingName::ExitToleranceMeters);
        self.entry_delay = ms(SettingName::EntryDelayMs);
        self.exit_delay = ms(SettingName::ExitDelayMs);
        self.device_timeout = seconds(SettingName::DeviceTimeoutSeconds);
        self.device_offline = seconds(SettingName::DeviceOfflineSeconds);
        self.settings = settings;
        self.radii = radii;
        self.default_radius = default_radius;
        self
    }

    /// An empty catalog.
    pub fn empty() -> Self {
        Self::build(Vec::new(), &[], Vec::new())
    }

    /// The registered name and group of `mac`, if it is registered.
    pub fn name(&self, mac: &Mac) -> Option<&DeviceTag> {
        self.names.get(mac)
    }

    /// Puts the registry's entries in force: `changed` sets or (with `None`) removes the
    /// entries of the devices it names, keeping the others.
    pub fn set_names(&mut self, changed: impl IntoIterator<Item = (Mac, Option<Registered>)>) {
        for (mac, entry) in changed {
            match entry {
                Some(Registered { tag, offline_seconds }) => {
                    match offline_seconds.and_then(|s| i64::try_from(s).ok()) {
                        Some(s) => self.offline_after.insert(mac.clone(), chrono::Duration::seconds(s)),
                        None => self.offline_after.remove(&mac),
                    };
                    self.names.insert(mac, tag);
                }
                None => {
                    self.offline_after.remove(&mac);
                    self.names.remove(&mac);
                }
            }
        }
    }

    /// How long `mac` may stay silent before it is reported offline: its own OfflineSeconds,
    /// else DeviceOfflineSeconds; `None` when neither is set.
    pub fn offline_after(&self, mac: &Mac) -> Option<chrono::Duration> {
        if self.offline_after.is_empty() {
            return self.device_offline;
        }
        self.offline_after.get(mac).copied().or(self.device_offline)
    }

    /// Whether any device may be reported offline.
    pub fn reports_offline(&self) -> bool {
        self.device_offline.is_some() || !self.offline_after.is_empty()
    }

    /// How stale the recorded presence of `mac` may grow: a minute, or a quarter of the time
    /// it may stay silent when that is shorter.
    pub fn presence_interval(&self, mac: &Mac) -> chrono::Duration {
        self.offline_after(mac).map_or(PRESENCE_INTERVAL, |o| (o / 4).min(PRESENCE_INTERVAL))
    }

    /// The own radii of the devices `changed` names replaced (`None` removes one: the device
    /// takes DefaultDeviceRadiusMeters), the others kept: what a burst of radius writes changes.
    pub fn set_radii(&mut self, changed: impl IntoIterator<Item = (Mac, Option<f64>)>) {
        let mut lowered = false;
        for (mac, radius) in changed {
            let before = match radius {
                Some(r) => {
                    self.max_radius = self.max_radius.max(r);
                    self.radii.insert(mac, r)
                }
                None => self.radii.remove(&mac),
            };
            lowered |= before.is_some_and(|b| b >= self.max_radius);
        }
        if lowered {
            // The largest radius may be gone: only then are all of them looked at again.
            self.max_radius = self.radii.values().copied().fold(self.default_radius, f64::max);
        }
    }

    /// Radius of `mac`: its own, else DefaultDeviceRadiusMeters.
    pub fn radius(&self, mac: &Mac) -> f64 {
        self.radii.get(mac).copied().unwrap_or(self.default_radius)
    }

    /// Zone index of a static scene index.
    pub fn static_zone(&self, scene_index: usize) -> usize {
        self.static_zone[scene_index]
    }

    /// Alarm kind of an entry into a zone of `alert_level`: `site` from SiteAlarmMinLevel,
    /// else `device` from DeviceAlarmMinLevel, else `log`.
    pub fn alarm_kind(&self, alert_level: u64) -> AlarmKind {
        let level = alert_level as f64;
        if level >= self.settings.get(SettingName::SiteAlarmMinLevel) {
            AlarmKind::Site
        } else if level >= self.settings.get(SettingName::DeviceAlarmMinLevel) {
            AlarmKind::Device
        } else {
            AlarmKind::Log
        }
    }
}
