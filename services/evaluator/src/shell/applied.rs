//! Configuration steps put in force, and the revision reported in force: held back while the
//! evaluator awaits word on new mobile-zone sources.

use std::time::Duration;

use chrono::Utc;
use zonecast_runtime::applier::Reporter;

use super::{Engine, Output, log_skipped};
use crate::config_changes::Update;

/// How long an evaluator waits for the others to say where the new mobile-zone sources they
/// own are, before it reports a change in force without them.
pub(super) const HINT_WAIT: Duration = Duration::from_secs(1);

/// The revision an evaluator reports in force, held back while it awaits source hints.
pub(super) struct Applied {
    pub(super) reporter: Reporter,
    /// The revision reported.
    pub(super) revision: u64,
    /// A revision applied but not yet reported, and until when it may wait for hints.
    pub(super) held: Option<(u64, tokio::time::Instant)>,
}

impl Applied {
    /// `revision` has been applied: reported now, or held until the awaited hints come.
    pub(super) async fn put(&mut self, revision: u64, engine: &Engine) {
        if engine.awaiting_sources() {
            let until = self.held.map_or_else(|| tokio::time::Instant::now() + HINT_WAIT, |(_, until)| until);
            self.held = Some((revision, until));
        } else {
            self.held = None;
            self.revision = revision;
            self.reporter.report(revision).await;
        }
    }

    /// Reports a held revision once no hint is awaited any more, or, when `late` is allowed,
    /// once its wait is over.
    pub(super) async fn settle(&mut self, engine: &mut Engine, late: bool) {
        let Some((revision, until)) = self.held else { return };
        if late && tokio::time::Instant::now() >= until && engine.awaiting_sources() {
            tracing::warn!(revision, "no word on new mobile-zone sources from the evaluators that own them; going on");
            engine.stop_awaiting();
        }
        if !engine.awaiting_sources() {
            self.put(revision, engine).await;
        }
    }
}

/// Puts a step read by the configuration follower in force; true when zones changed (the
/// mobile-zone sources to follow may have too).
pub(super) fn apply(engine: &mut Engine, update: Update, out: &mut Vec<Output>) -> bool {
    let now = Utc::now();
    match update {
        Update::Zones { changed, touched, changes } => {
            engine.apply_zones(changed, &touched, &changes, now, out);
            log_skipped(engine.catalog());
            metrics::counter!("zonecast_evaluator_zone_patches_total").increment(1);
            true
        }
        Update::Catalog { catalog, changes } => {
            log_skipped(&catalog);
            engine.reload(*catalog, &changes, now, out);
            metrics::counter!("zonecast_evaluator_reloads_total").increment(1);
            true
        }
        Update::Radii(changed) => {
            engine.apply_radii(changed, now, out);
            metrics::counter!("zonecast_evaluator_radius_patches_total").increment(1);
            false
        }
        Update::Parameters { settings, radii } => {
            engine.reparameterise(settings, radii, now, out);
            metrics::counter!("zonecast_evaluator_parameter_reloads_total").increment(1);
            false
        }
        Update::Names(changed) => {
            engine.apply_names(changed, now);
            false
        }
        Update::Nothing => false,
    }
}
