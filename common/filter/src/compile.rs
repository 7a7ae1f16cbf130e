//! Compiling a `FilterChain` from JSON: every rule is checked here, once, so matching never fails.

use crate::error::FilterError;
use crate::matcher::{Chain, Children, Cmp, Filter, Op, Test};
use crate::schema::TypeName;
use crate::selector::Selector;
use crate::template::Template;
use crate::value::{as_number, string_form};
use regex_automata::meta::{self, Regex};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The deepest nesting allowed: a top-level filter is at depth 1, its children at depth 2.
pub const MAX_DEPTH: usize = 16;

/// What compiling may spend: bounds on one chain and on all the chains of one connection
/// together (its topics share one [`Budget`]). Every bound is checked while compiling, before
/// the work it bounds, so a refused chain costs at most about one bound's worth.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// Most filters one chain holds, counting children at every depth.
    pub filters_per_chain: usize,
    /// Most filters all the chains of one connection hold together: a bound on topics × filters.
    pub filters_per_connection: usize,
    /// Most distinct regexes one connection uses (each is compiled once and shared).
    pub regexes: usize,
    /// Largest compiled form of one regex, in bytes (its automaton, and its lazy DFA's cache
    /// each). Unicode classes grow fast under repetition (`\w{200}` compiles to megabytes); past
    /// this a pattern is refused rather than compiled.
    pub regex_bytes: usize,
    /// Most bytes all of one connection's compiled regexes take together.
    pub regex_total_bytes: usize,
    /// Most time compiling all of one connection's regexes may take together.
    pub regex_compile: Duration,
}

impl Bounds {
    /// The defaults: 256 filters per chain, 25,600 per connection (100 topics of 256), 128
    /// distinct regexes of at most 256 KiB each and 8 MiB together (a forwarder keeps every
    /// connection's), compiled within 2 s.
    pub const DEFAULT: Self = Self {
        filters_per_chain: 256,
        filters_per_connection: 25_600,
        regexes: 128,
        regex_bytes: 256 * 1024,
        regex_total_bytes: 8 * 1024 * 1024,
        regex_compile: Duration::from_secs(2),
    };
}

impl Default for Bounds {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// What one connection's chains have spent of their [`Bounds`]: filters counted, and the
/// regexes compiled so far, each distinct pattern once, shared (one automaton, one cache) by
/// every filter that uses it, with their compiled bytes and compile time summed.
#[derive(Debug)]
pub struct Budget {
    bounds: Bounds,
    filters: usize,
    by_pattern: HashMap<String, Arc<Regex>>,
    bytes: usize,
    compiling: Duration,
}

impl Default for Budget {
    fn default() -> Self {
        Self::new(Bounds::DEFAULT)
    }
}

impl Budget {
    /// An empty budget within `bounds`.
    pub fn new(bounds: Bounds) -> Self {
        Self { bounds, filters: 0, by_pattern: HashMap::new(), bytes: 0, compiling: Duration::ZERO }
    }

    /// Distinct regexes compiled so far.
    pub fn regexes(&self) -> usize {
        self.by_pattern.len()
    }

    /// Bytes the compiled regexes take together (without their lazy DFA caches, which grow
    /// while matching, up to [`Bounds::regex_bytes`] each).
    pub fn regex_bytes(&self) -> usize {
        self.bytes
    }

    /// Time spent compiling regexes so far.
    pub fn compile_time(&self) -> Duration {
        self.compiling
    }

    /// Counts one more filter of the connection; the error is the bound crossed.
    fn filter(&mut self) -> Result<(), String> {
        self.filters += 1;
        if self.filters > self.bounds.filters_per_connection {
            return Err(format!(
                "the connection's chains hold more than {} filters together",
                self.bounds.filters_per_connection
            ));
        }
        Ok(())
    }

    /// The compiled `pattern`, compiled now if this budget has not seen it; the error is the
    /// reason it is refused.
    fn regex(&mut self, pattern: &str) -> Result<Arc<Regex>, String> {
        if let Some(regex) = self.by_pattern.get(pattern) {
            return Ok(regex.clone());
        }
        let b = self.bounds;
        if self.by_pattern.len() >= b.regexes {
            return Err(format!("a connection may use at most {} distinct regexes", b.regexes));
        }
        let too_many_bytes = || {
            format!(
                "the connection's regexes take more than {} compiled together; use fewer or smaller ones",
                bytes(b.regex_total_bytes)
            )
        };
        let left = b.regex_total_bytes.saturating_sub(self.bytes);
        // The automaton is refused as soon as it outgrows what is left, so a pattern past the
        // budget costs no more than the budget to find out.
        let limit = b.regex_bytes.min(left);
        let started = Instant::now();
        let built = Regex::builder()
            .configure(Regex::config().nfa_size_limit(Some(limit)).hybrid_cache_capacity(b.regex_bytes))
            .build(pattern);
        self.compiling += started.elapsed();
        let regex = built.map_err(|err| match err.size_limit() {
            // Past what the others left: the budget ran out (the first regex has it all).
            Some(_) if limit < b.regex_bytes && self.bytes > 0 => too_many_bytes(),
            Some(_) => format!(
                "regex is too large when compiled (at most {}); shorten its repetitions or use ASCII classes \
                 such as (?-u:\\w)",
                bytes(limit)
            ),
            None => format!("invalid regex: {}", regex_reason(&err)),
        })?;
        if self.compiling > b.regex_compile {
            return Err(format!(
                "the connection's regexes took more than {} ms to compile; use fewer or simpler ones",
                b.regex_compile.as_millis()
            ));
        }
        self.bytes += regex.memory_usage();
        if self.bytes > b.regex_total_bytes {
            return Err(too_many_bytes());
        }
        let regex = Arc::new(regex);
        self.by_pattern.insert(pattern.to_owned(), regex.clone());
        Ok(regex)
    }
}

/// `n` bytes as people read a bound: KiB or MiB when it is a whole number of them.
fn bytes(n: usize) -> String {
    match n {
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{} MiB", n >> 20),
        n if n >= 1 << 10 && n % (1 << 10) == 0 => format!("{} KiB", n >> 10),
        n => format!("{n} bytes"),
    }
}

/// Compiles a FilterChain (must be a JSON array of filter objects; null is treated as an empty
/// chain).
///
/// Errors name the place in the chain (`[0].Children.all[1].Match`) and the rule broken; the
/// first problem found is reported. Besides unknown templates and types, regexes that do not
/// compile, bad selectors and non-numeric `Match` values for numeric types, this rejects:
/// a filter with nothing to test (no `FilterTemplate`, `Type` or child filter), an empty `any`,
/// `Selector` or `Match` without a `Type`, `Invert` on a filter that has only `Children`
/// (it would negate nothing), a non-finite numeric `Match`, more than [`MAX_DEPTH`] levels and
/// more filters than the [`Bounds`] allow. Any field set to `null` counts as absent.
/// The chain is compiled on its own, within [`Bounds::DEFAULT`].
pub fn compile(chain: &Value) -> Result<Chain, FilterError> {
    compile_in(chain, &mut Budget::default())
}

/// [`compile`] spending `budget`: compile every chain of one connection with one budget so that
/// they share their regexes and are bounded together.
pub fn compile_in(chain: &Value, budget: &mut Budget) -> Result<Chain, FilterError> {
    let items = match chain {
        Value::Null => return Ok(Chain::default()),
        Value::Array(items) => items,
        other => {
            return Err(FilterError::new("", format!("must be a JSON array of filters, got {}", json_kind(other))));
        }
    };
    let filters = Compiler { count: 0, budget }.list(items, "", 1)?;
    Ok(Chain { filters })
}

impl TryFrom<&Value> for Chain {
    type Error = FilterError;

    /// Same as [`compile`].
    fn try_from(chain: &Value) -> Result<Self, Self::Error> {
        compile(chain)
    }
}

/// Walks one chain, counting filters across all depths.
struct Compiler<'p> {
    count: usize,
    budget: &'p mut Budget,
}

impl Compiler<'_> {
    fn list(&mut self, items: &[Value], path: &str, depth: usize) -> Result<Box<[Filter]>, FilterError> {
        items.iter().enumerate().map(|(i, item)| self.filter(item, &format!("{path}[{i}]"), depth)).collect()
    }

    fn filter(&mut self, value: &Value, path: &str, depth: usize) -> Result<Filter, FilterError> {
        self.count += 1;
        let most = self.budget.bounds.filters_per_chain;
        if self.count > most {
            return Err(FilterError::new(path, format!("chain has more than {most} filters")));
        }
        self.budget.filter().map_err(|reason| FilterError::new(path, reason))?;
        if depth > MAX_DEPTH {
            return Err(FilterError::new(path, format!("filters are nested deeper than {MAX_DEPTH} levels")));
        }
        let Value::Object(object) = value else {
            return Err(FilterError::new(path, format!("must be a filter object, got {}", json_kind(value))));
        };
        let fields = Fields { object, path };

        let template = match fields.string("FilterTemplate")? {
            None => None,
            Some(name) => Some(Template::from_name(name).ok_or_else(|| {
                fields
                    .error("FilterTemplate", format!("unknown filter template '{name}' (expected {})", Template::NAMES))
            })?),
        };
        let selector = match fields.string("Selector")? {
            None => None,
            Some(text) => Some(Selector::parse(text).map_err(|message| fields.error("Selector", message))?),
        };
        let kind = match fields.string("Type")? {
            None => None,
            Some(name) => Some(TypeName::from_name(name).ok_or_else(|| {
                fields.error("Type", format!("unknown filter type '{name}' (expected {})", TypeName::NAMES))
            })?),
        };
        let test = match (kind, selector) {
            (Some(kind), Some(selector)) => Some(Test { selector, op: fields.op(kind, self.budget)? }),
            (Some(kind), None) => {
                return Err(fields.error("Selector", format!("Selector is required for Type {}", kind.as_str())));
            }
            (None, Some(_)) => {
                return Err(fields.error("Type", "Type is required when Selector is set"));
            }
            (None, None) => {
                if fields.get("Match").is_some() {
                    return Err(fields.error("Type", "Type is required when Match is set"));
                }
                None
            }
        };
        let invert = match fields.get("Invert") {
            None => false,
            Some(Value::Bool(invert)) => *invert,
            Some(other) => {
                return Err(fields.error("Invert", format!("must be a bool, got {}", json_kind(other))));
            }
        };
        let children = self.children(fields.get("Children"), path, depth)?;

        if template.is_none() && test.is_none() {
            if children.is_empty() {
                return Err(FilterError::new(path, "filter needs FilterTemplate, Type or Children"));
            }
            if invert {
                return Err(fields.error(
                    "Invert",
                    "Invert needs a FilterTemplate or Type to negate (it does not apply to Children)",
                ));
            }
        }
        Ok(Filter { template, test, invert, children })
    }

    fn children(&mut self, value: Option<&Value>, path: &str, depth: usize) -> Result<Children, FilterError> {
        let path = format!("{path}.Children");
        let object = match value {
            None => return Ok(Children::None),
            Some(Value::Object(object)) => object,
            Some(other) => {
                return Err(FilterError::new(
                    path,
                    format!("must be an object with all or any (e.g. {{\"all\": [...]}}), got {}", json_kind(other)),
                ));
            }
        };
        let mut found = None;
        for (key, list) in object {
            if key != "all" && key != "any" {
                return Err(FilterError::new(
                    format!("{path}.{key}"),
                    format!("unknown key '{key}' (expected all or any)"),
                ));
            }
            if found.is_some() {
                return Err(FilterError::new(path, "use either all or any, not both"));
            }
            found = Some((key, list));
        }
        let Some((key, list)) = found else {
            return Ok(Children::None);
        };
        let path = format!("{path}.{key}");
        let Value::Array(items) = list else {
            return Err(FilterError::new(path, format!("must be an array of filters, got {}", json_kind(list))));
        };
        if key == "any" {
            if items.is_empty() {
                return Err(FilterError::new(path, "any needs at least one filter"));
            }
            Ok(Children::Any(self.list(items, &path, depth + 1)?))
        } else {
            Ok(Children::All(self.list(items, &path, depth + 1)?))
        }
    }
}

/// One filter object's fields, with its path for errors.
struct Fields<'a> {
    object: &'a Map<String, Value>,
    path: &'a str,
}

impl<'a> Fields<'a> {
    /// The field, with `null` counted as absent.
    fn get(&self, name: &str) -> Option<&'a Value> {
        self.object.get(name).filter(|value| !value.is_null())
    }

    fn string(&self, name: &str) -> Result<Option<&'a str>, FilterError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::String(text)) => Ok(Some(text)),
            Some(other) => Err(self.error(name, format!("must be a string, got {}", json_kind(other)))),
        }
    }

    fn error(&self, name: &str, message: impl Into<String>) -> FilterError {
        FilterError::new(format!("{}.{name}", self.path), message)
    }

    /// Attaches `Match` to the `Type`.
    fn op(&self, kind: TypeName, budget: &mut Budget) -> Result<Op, FilterError> {
        let type_name = kind.as_str();
        if let TypeName::Exists = kind {
            return Ok(Op::Exists);
        }
        let value = match self.get("Match") {
            None => {
                return Err(self.error("Match", format!("Match is required for {type_name}")));
            }
            Some(value @ (Value::String(_) | Value::Number(_) | Value::Bool(_))) => value,
            Some(other) => {
                return Err(self.error("Match", format!("must be a string, number or bool, got {}", json_kind(other))));
            }
        };
        let cmp = match kind {
            TypeName::Exists => return Ok(Op::Exists),
            TypeName::Equals => return Ok(Op::Equals(string_form(value).into())),
            TypeName::Regex => {
                let pattern = string_form(value);
                let regex = budget.regex(&pattern).map_err(|reason| self.error("Match", reason))?;
                return Ok(Op::Regex(regex));
            }
            TypeName::Lt => Cmp::Lt,
            TypeName::Lte => Cmp::Lte,
            TypeName::Gt => Cmp::Gt,
            TypeName::Gte => Cmp::Gte,
        };
        let threshold = as_number(value)
            .filter(|n| n.is_finite())
            .ok_or_else(|| self.error("Match", format!("Match must be a number for {type_name}")))?;
        Ok(Op::Compare(cmp, threshold))
    }
}

/// The one line of a regex error that says what is wrong.
///
/// A syntax error prints as "regex parse error:", the pattern, a caret line and "error: <reason>";
/// its first line says nothing, so the reason line is taken. Other errors are one line already.
fn regex_reason(err: &meta::BuildError) -> String {
    let text = err.syntax_error().map_or_else(|| err.to_string(), ToString::to_string);
    let reason = text
        .lines()
        .find_map(|line| line.trim().strip_prefix("error: "))
        .or_else(|| text.lines().map(str::trim).find(|line| !line.is_empty()))
        .unwrap_or("does not compile");
    reason.to_owned()
}

/// The JSON kind of a value, for "got …" in messages.
fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}
