//! A pass over a JSON body's bytes that bounds what parsing it would build, before it is parsed:
//! a JSON tree costs tens of bytes per value, so an 8 MiB body of small numbers (a polygon of a
//! million vertices) would take hundreds of megabytes before any rule could refuse it. The pass
//! allocates nothing but a stack as deep as the body's nesting.

use zonecast_model::Limits;

/// Deepest nesting of arrays and objects.
pub const MAX_DEPTH: usize = 64;

/// What a body may hold before it is parsed, derived from the [`Limits`] so that raising a
/// limit raises these with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// Most elements in one JSON array or members in one object: twice the longest list the
    /// limits let through ([`Limits::longest_list`]; 20,000 by default), so that a list just
    /// past its own limit is answered by that limit's more precise 422, and only far larger
    /// ones stop here.
    pub elements: usize,
    /// Most JSON values (numbers, strings, booleans, nulls, arrays, objects) in one body: 25
    /// times `elements` (500,000 by default).
    pub values: usize,
}

impl Bounds {
    /// The bounds that go with `limits`.
    pub fn of(limits: &Limits) -> Self {
        let elements = limits.longest_list().saturating_mul(2);
        Self { elements, values: elements.saturating_mul(25) }
    }
}

/// What crossed a bound, and where (`GeometryData`, `[3].DeviceList`; empty for the top level).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooBig {
    /// JSON path of the list that crossed the bound.
    pub path: String,
    /// The bound crossed.
    pub rule: String,
}

impl std::fmt::Display for TooBig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.path.is_empty() { f.write_str(&self.rule) } else { write!(f, "{}: {}", self.path, self.rule) }
    }
}

/// One open array or object; `count` of an array is also the index of the element being read.
struct Open {
    array: bool,
    /// Elements or members seen so far.
    count: usize,
    /// Key of the member being read (objects).
    key: Option<String>,
}

/// Checks `body` against `bounds` and [`MAX_DEPTH`]. Malformed JSON passes: the parser that
/// follows says what is wrong with it.
pub fn check(body: &[u8], bounds: Bounds) -> Result<(), TooBig> {
    let Bounds { elements: max_elements, values: max_values } = bounds;
    let mut stack: Vec<Open> = Vec::new();
    let mut values = 0usize;
    let mut i = 0;
    // Whether the string being read is an object key.
    let mut expecting_key = false;
    while i < body.len() {
        match body[i] {
            b'"' => {
                let start = i + 1;
                i = string_end(body, start);
                if expecting_key {
                    if let Some(top) = stack.last_mut() {
                        top.key = Some(String::from_utf8_lossy(&body[start..i.min(body.len())]).into_owned());
                    }
                    expecting_key = false;
                } else {
                    values += 1;
                }
            }
            b'[' | b'{' => {
                values += 1;
                let array = body[i] == b'[';
                if stack.len() >= MAX_DEPTH {
                    return Err(TooBig { path: path(&stack), rule: format!("nests deeper than {MAX_DEPTH} levels") });
                }
                stack.push(Open { array, count: 0, key: None });
                expecting_key = !array;
            }
            b']' | b'}' => {
                stack.pop();
                expecting_key = false;
            }
            b',' => {
                if let Some(top) = stack.last_mut() {
                    top.count += 1;
                    if top.count >= max_elements {
                        let what = if top.array { "elements" } else { "members" };
                        return Err(TooBig {
                            path: path(&stack),
                            rule: format!("must have at most {max_elements} {what}"),
                        });
                    }
                    expecting_key = !top.array;
                }
            }
            b if b.is_ascii_digit() || b == b'-' || b == b't' || b == b'f' || b == b'n' => {
                values += 1;
                // Skip the rest of the literal.
                while i + 1 < body.len() && !b",]} \t\r\n".contains(&body[i + 1]) {
                    i += 1;
                }
            }
            _ => {}
        }
        if values > max_values {
            return Err(TooBig { path: String::new(), rule: format!("holds more than {max_values} JSON values") });
        }
        i += 1;
    }
    Ok(())
}

/// Index of the closing quote of the string whose text starts at `from` (or the body's end).
fn string_end(body: &[u8], from: usize) -> usize {
    let mut i = from;
    while i < body.len() {
        match body[i] {
            b'\\' => i += 2,
            b'"' => return i,
            _ => i += 1,
        }
    }
    body.len()
}

/// The JSON path of the innermost open list, for the message.
fn path(stack: &[Open]) -> String {
    let mut out = String::new();
    for pair in stack.windows(2) {
        let parent = &pair[0];
        if parent.array {
            out.push_str(&format!("[{}]", parent.count));
        } else if let Some(key) = &parent.key {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(key);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOUNDS: Bounds = Bounds { elements: 20_000, values: 500_000 };
    const MAX_ELEMENTS: usize = BOUNDS.elements;

    fn check(body: &[u8]) -> Result<(), TooBig> {
        super::check(body, BOUNDS)
    }

    #[test]
    fn the_default_limits_give_the_documented_bounds_and_larger_limits_larger_ones() {
        assert_eq!(Bounds::of(&Limits::DEFAULT), BOUNDS);
        let raised = Bounds::of(&Limits { device_list: 100_000, ..Limits::DEFAULT });
        assert_eq!(raised, Bounds { elements: 200_000, values: 5_000_000 });
    }

    fn rows(n: usize) -> String {
        format!("[{}]", vec!["[0,0,0]"; n].join(","))
    }

    #[test]
    fn ordinary_bodies_pass() {
        check(br#"{"Name": "a, [b] {c}", "GeometryData": [[0,0,0],[1,0,0]], "DeviceList": ["00:00:00:00:00:01"]}"#)
            .unwrap();
        check(rows(MAX_ELEMENTS).as_bytes()).unwrap();
        check(br#"not json at all"#).unwrap();
    }

    #[test]
    fn a_list_past_the_bound_is_named_by_its_path() {
        let body = format!(r#"{{"Name": "x", "GeometryData": {}}}"#, rows(MAX_ELEMENTS + 1));
        let e = check(body.as_bytes()).unwrap_err();
        assert_eq!(e.to_string(), "GeometryData: must have at most 20000 elements");
        let body = format!(r#"[{{"Name": "a"}}, {{"Name": "b", "DeviceList": {}}}]"#, rows(MAX_ELEMENTS + 1));
        assert_eq!(check(body.as_bytes()).unwrap_err().path, "[1].DeviceList");
        let e = check(rows(MAX_ELEMENTS + 1).as_bytes()).unwrap_err();
        assert_eq!(e.to_string(), "must have at most 20000 elements");
    }

    #[test]
    fn escaped_quotes_and_brackets_in_strings_do_not_count() {
        let body = format!(r#"{{"Name": "{}", "a": [1]}}"#, r#"\"[,,,,]\""#.repeat(5_000));
        check(body.as_bytes()).unwrap();
    }

    #[test]
    fn too_many_values_or_too_deep_a_nesting_is_refused() {
        let many = format!("[{}]", vec![rows(15_000); 10].join(","));
        assert_eq!(check(many.as_bytes()).unwrap_err().rule, "holds more than 500000 JSON values");
        let deep = "[".repeat(MAX_DEPTH + 1);
        assert_eq!(check(deep.as_bytes()).unwrap_err().rule, "nests deeper than 64 levels");
    }
}
