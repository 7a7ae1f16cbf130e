//! The evaluator's compiled view of the configuration: zones with their prepared regions in a
//! scene, the settings in force and device radii. Rebuilt when zones change; a settings or
//! radius change keeps the zones and their scene and replaces only those.

use foldhash::{HashMap, HashMapExt};

use chrono::{DateTime, Utc};
use uuid::Uuid;
use zonecast_geometry::{Region, Scene, Vec3};
use zonecast_model::{AlarmKind, Mac, SettingName, Settings, ZoneSpec};

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
    /// Mobile zones by their source device.
    pub mobile_by_source: HashMap<Mac, Vec<usize>>,
    /// Settings in force.
    pub settings: Settings,
    radii: HashMap<Mac, f64>,
    default_radius: f64,
    /// ExitToleranceMeters.
    pub exit_tolerance: f64,
    /// EntryDelayMs as a duration.
    pub entry_delay: chrono::Duration,
    /// ExitDelayMs as a duration.
    pub exit_delay: chrono::Duration,
    /// DeviceTimeoutSeconds; `None` when 0 (never).
    pub device_timeout: Option<chrono::Duration>,
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

    /// This catalog with the zones `touched` replaced by `changed` (those of them that still
    /// exist, as the store has them now) and the others of `touched` removed: what a burst of
    /// zone writes changes, without reading or preparing any other zone again. Replaced zones
    /// keep their place; new ones come last. Settings and radii stay.
    pub fn patched(&self, changed: Vec<ZoneSpec>, touched: &foldhash::HashSet<Uuid>) -> Self {
        let mut skipped = Vec::new();
        let mut fresh: HashMap<Uuid, Zone> =
            prepare_all(changed, &mut skipped).into_iter().map(|z| (z.spec.id, z)).collect();
        let mut zones: Vec<Zone> = Vec::with_capacity(self.zones.len() + fresh.len());
        for z in &self.zones {
            if !touched.contains(&z.spec.id) {
                zones.push(z.clone());
            } else if let Some(new) = fresh.remove(&z.spec.id) {
                zones.push(new);
            }
        }
        let mut added: Vec<Zone> = fresh.into_values().collect();
        added.sort_by_key(|z| z.spec.id);
        zones.extend(added);
        let mut patched = Self::of_zones(zones);
        patched.settings = self.settings;
        patched.radii = self.radii.clone();
        patched.default_radius = self.default_radius;
        patched.max_radius = self.max_radius;
        patched.exit_tolerance = self.exit_tolerance;
        patched.entry_delay = self.entry_delay;
        patched.exit_delay = self.exit_delay;
        patched.device_timeout = self.device_timeout;
        patched.skipped = skipped;
        patched
    }

    /// `zones` indexed and in a scene, with the default settings and no radii.
    fn of_zones(zones: Vec<Zone>) -> Self {
        let by_id = zones.iter().enumerate().map(|(i, z)| (z.spec.id, i)).collect();
        let mut static_zone = Vec::new();
        let mut static_regions = Vec::new();
        let mut mobile_by_source: HashMap<Mac, Vec<usize>> = HashMap::new();
        for (i, z) in zones.iter().enumerate() {
            match &z.spec.mobile_origin_source {
                Some(source) => mobile_by_source.entry(source.clone()).or_default().push(i),
                None => {
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
            mobile_by_source,
            exit_tolerance: 0.0,
            entry_delay: chrono::Duration::zero(),
            exit_delay: chrono::Duration::zero(),
            device_timeout: None,
            settings: Settings::default(),
            radii: HashMap::new(),
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
        let timeout = settings.get(SettingName::DeviceTimeoutSeconds) as i64;
        self.max_radius = radii.values().copied().fold(default_radius, f64::max);
        self.exit_tolerance = settings.get(SettingName::ExitToleranceMeters);
        self.entry_delay = ms(SettingName::EntryDelayMs);
        self.exit_delay = ms(SettingName::ExitDelayMs);
        self.device_timeout = (timeout > 0).then(|| chrono::Duration::seconds(timeout));
        self.settings = settings;
        self.radii = radii;
        self.default_radius = default_radius;
        self
    }

    /// An empty catalog.
    pub fn empty() -> Self {
        Self::build(Vec::new(), &[], Vec::new())
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
