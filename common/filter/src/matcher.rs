//! The compiled chain and its evaluation against one event: the forwarder's hot path.
//!
//! Nothing here parses, compiles or fails; selectors are pre-split, regexes pre-built and numeric
//! thresholds pre-parsed by `compile`, and only the string form of an object or array allocates.

use crate::selector::Selector;
use crate::template::Template;
use crate::value::{as_number, with_string_form};
use std::sync::Arc;

use regex_automata::meta::Regex;
use serde_json::Value;

/// A compiled `FilterChain`: build it with [`compile`](crate::compile), keep it, and call
/// [`matches`](Chain::matches) per event.
///
/// `Chain::default()` is the empty chain, which matches everything. `Invert` negates a filter's
/// own condition (template and test) and not its `Children`; a test whose selector does not
/// resolve fails, so the same test inverted matches.
#[derive(Clone, Debug, Default)]
pub struct Chain {
    pub(crate) filters: Box<[Filter]>,
}

impl Chain {
    /// Whether `event` passes every filter of the chain (always, for the empty chain).
    pub fn matches(&self, event: &Value) -> bool {
        all(&self.filters, event)
    }

    /// Whether an event of this `Category` and `Type` could pass the chain: false only when a
    /// top-level template that is not inverted rules it out. Lets a caller skip parsing events
    /// that no chain can take.
    pub fn admits(&self, category: Option<&str>, kind: Option<&str>) -> bool {
        self.filters.iter().all(|f| f.invert || f.template.is_none_or(|t| t.matches_kind(category, kind)))
    }

    /// The chain's verdict on every event of this `Category` and `Type`, when they alone decide
    /// it: no filter (children included) has a `Selector` test, or one that is decided false
    /// without its test. `None` when a test must read the event. Lets a caller route an event
    /// from its Category and Type without parsing it whole; where it is `Some`, it is what
    /// [`Chain::matches`] answers.
    pub fn decide(&self, category: Option<&str>, kind: Option<&str>) -> Option<bool> {
        decide_each(&self.filters, category, kind, false)
    }

    /// Whether the chain has no filters, so it matches every event.
    pub fn is_empty(&self) -> bool {
        self.filters.is_empty()
    }
}

/// One compiled filter object.
#[derive(Clone, Debug)]
pub(crate) struct Filter {
    pub(crate) template: Option<Template>,
    pub(crate) test: Option<Test>,
    /// Negates the own condition (template and test), never the children.
    pub(crate) invert: bool,
    pub(crate) children: Children,
}

/// `Selector` + `Type` + `Match`.
#[derive(Clone, Debug)]
pub(crate) struct Test {
    pub(crate) selector: Selector,
    pub(crate) op: Op,
}

/// The compiled `Type` with its `Match`.
#[derive(Clone, Debug)]
pub(crate) enum Op {
    /// Shared by every filter of the connection that uses the same pattern.
    Regex(Arc<Regex>),
    Equals(Box<str>),
    Exists,
    Compare(Cmp, f64),
}

/// The numeric comparisons, value on the left and `Match` on the right.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cmp {
    Lt,
    Lte,
    Gt,
    Gte,
}

/// A filter's `Children`.
#[derive(Clone, Debug)]
pub(crate) enum Children {
    None,
    All(Box<[Filter]>),
    /// Never empty (compile rejects an empty `any`).
    Any(Box<[Filter]>),
}

impl Children {
    /// True when there is no child filter to hold, so the filter is its own condition alone.
    pub(crate) fn is_empty(&self) -> bool {
        match self {
            Self::None => true,
            Self::All(filters) | Self::Any(filters) => filters.is_empty(),
        }
    }

    fn hold(&self, event: &Value) -> bool {
        match self {
            Self::None => true,
            Self::All(filters) => all(filters, event),
            Self::Any(filters) => filters.iter().any(|f| f.matches(event)),
        }
    }
}

fn all(filters: &[Filter], event: &Value) -> bool {
    filters.iter().all(|f| f.matches(event))
}

/// [`all`] (`settles` false) or `any` (`settles` true) from Category and Type alone: `settles`
/// once one filter is decided so, undecided while any filter is, else the other verdict.
fn decide_each(filters: &[Filter], category: Option<&str>, kind: Option<&str>, settles: bool) -> Option<bool> {
    let mut verdict = Some(!settles);
    for filter in filters {
        match filter.decide(category, kind) {
            Some(decided) if decided == settles => return Some(settles),
            Some(_) => {}
            None => verdict = None,
        }
    }
    verdict
}

impl Filter {
    fn matches(&self, event: &Value) -> bool {
        self.own_condition(event) && self.children.hold(event)
    }

    /// [`Filter::matches`] from Category and Type alone, when they decide it.
    fn decide(&self, category: Option<&str>, kind: Option<&str>) -> Option<bool> {
        let own = match self.test {
            Some(_) => None,
            None => Some(self.template.is_none_or(|t| t.matches_kind(category, kind)) != self.invert),
        };
        let children = match &self.children {
            Children::None => Some(true),
            Children::All(filters) => decide_each(filters, category, kind, false),
            Children::Any(filters) => decide_each(filters, category, kind, true),
        };
        match (own, children) {
            (Some(false), _) | (_, Some(false)) => Some(false),
            (Some(true), Some(true)) => Some(true),
            _ => None,
        }
    }

    fn own_condition(&self, event: &Value) -> bool {
        let holds =
            self.template.is_none_or(|t| t.matches(event)) && self.test.as_ref().is_none_or(|t| t.passes(event));
        holds != self.invert
    }
}

impl Test {
    fn passes(&self, event: &Value) -> bool {
        let Some(value) = self.selector.resolve(event) else {
            return false;
        };
        match &self.op {
            Op::Exists => true,
            Op::Equals(expected) => with_string_form(value, |text| text == &**expected),
            Op::Regex(regex) => with_string_form(value, |text| regex.is_match(text)),
            Op::Compare(cmp, threshold) => as_number(value).is_some_and(|number| cmp.holds(number, *threshold)),
        }
    }
}

impl Cmp {
    /// `value <op> threshold`; false whenever either side is NaN.
    fn holds(self, value: f64, threshold: f64) -> bool {
        match self {
            Self::Lt => value < threshold,
            Self::Lte => value <= threshold,
            Self::Gt => value > threshold,
            Self::Gte => value >= threshold,
        }
    }
}
