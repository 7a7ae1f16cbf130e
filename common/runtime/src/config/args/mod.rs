//! The setting groups several binaries share, as clap declares them (flag, `ZONECAST_*`
//! variable, default, help), and their validation into the typed sections of [`super`]. Values
//! are taken as text and checked by [`Check`] rather than by clap, so that every problem is
//! found in one pass and named by where it was given.
//!
//! [`shared`] holds the sections several binaries take (file, bus, store, listeners, secret,
//! credentials, site, log) and [`limits`] what requests and filter chains may ask. Each
//! service declares its own settings and its command line in its own crate, made of these
//! groups and its own (`#[command(flatten)]`); the all-in-one's flattens every service's.

mod limits;
mod shared;

use std::fmt::Display;
use std::str::FromStr;

use zonecast_model::Secret;

use super::Problem;
use super::origins::Origins;

pub use limits::{FilterLimitArgs, InputLimitArgs, LimitsArgs, all_limits};
pub use shared::{
    AuthArgs, BusArgs, DefaultAddr, FileArgs, HttpAddrArgs, LogArgs, OpsAddrArgs, SecretArgs, SiteArgs, StoreArgs,
};

/// Position partitions of the distributed services unless `ZONECAST_PARTITIONS` says otherwise:
/// room for 16 evaluators, each with 4.
pub const DISTRIBUTED_PARTITIONS: u32 = 64;

/// Collects the problems of one load: each binary's `check` reads its settings through it.
pub struct Check<'a> {
    origins: &'a Origins,
    problems: Vec<Problem>,
}

impl<'a> Check<'a> {
    pub(super) fn new(origins: &'a Origins) -> Self {
        Self { origins, problems: Vec::new() }
    }

    /// Notes that setting `id` is wrong for `reason`.
    pub fn bad(&mut self, id: &str, reason: impl Into<String>) {
        self.problems.push(Problem { name: self.origins.name(id), reason: reason.into() });
    }

    /// `raw` parsed as `T`, or `fallback` with a problem noted.
    pub fn parse<T: FromStr>(&mut self, id: &str, raw: &str, fallback: T) -> T
    where
        T::Err: Display,
    {
        raw.trim().parse::<T>().unwrap_or_else(|e| {
            self.bad(id, format!("'{raw}': {e}"));
            fallback
        })
    }

    /// `raw` as a switch: `true` or `false`, nothing else (false with a problem noted).
    pub fn flag(&mut self, id: &str, raw: &str) -> bool {
        match raw {
            "true" => true,
            "false" => false,
            other => {
                self.bad(id, format!("'{other}': must be true or false"));
                false
            }
        }
    }

    /// `raw` parsed as a number within `lo..=hi`.
    pub fn within<T>(&mut self, id: &str, raw: &str, lo: T, hi: T) -> T
    where
        T: FromStr + PartialOrd + Display + Copy,
        T::Err: Display,
    {
        let value = self.parse(id, raw, lo);
        if !(lo..=hi).contains(&value) {
            self.bad(id, format!("must be between {lo} and {hi}"));
        }
        value
    }

    /// A problem when `value` is missing: `binary` needs it, for `why`.
    pub fn require<T>(&mut self, id: &str, value: Option<&T>, binary: &str, why: &str) {
        if value.is_none() {
            self.bad(id, format!("is required by {binary}{why}"));
        }
    }

    pub(super) fn into_problems(self) -> Vec<Problem> {
        self.problems
    }
}

/// A secret setting: an empty value is an unset one.
pub fn secret(raw: &Option<String>) -> Option<Secret> {
    raw.as_deref().filter(|v| !v.is_empty()).map(Secret::new)
}

/// The items of a comma-separated list, trimmed, without empty ones.
pub fn split_list(v: &str) -> impl Iterator<Item = &str> {
    v.split(',').map(str::trim).filter(|s| !s.is_empty())
}
