//! Route tables: every path a listener answers, with its method, operation, the authority it
//! needs and the metadata its OpenAPI entry shows. Dispatch, authorisation and the API's
//! OpenAPI document all read one table, so they cannot disagree.

pub use warp::http::Method;

use zonecast_runtime::Authority;

/// How the OpenAPI document gets the schema of a request or response body: from a Rust type,
/// through a generator (`SchemaGenerator::subschema_for::<T>`, or [`schema_of`]).
pub type BodySchema = fn(&mut schemars::SchemaGenerator) -> schemars::Schema;

/// The [`BodySchema`] of `T`: a `$ref` to its component, or its schema inline.
pub fn schema_of<T: schemars::JsonSchema>(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    generator.subschema_for::<T>()
}

/// One row of a table; `Op` names the listener's operations.
#[derive(Debug, Clone)]
pub struct Route<Op> {
    /// HTTP method.
    pub method: Method,
    /// Path template; `{Name}` segments are parameters.
    pub path: &'static str,
    /// What it does.
    pub op: Op,
    /// Needed authority; `None` for the open routes (liveness, readiness, token).
    pub authority: Option<Authority>,
    /// Operation id (OpenAPI `operationId`, and the `operation` label of request metrics).
    pub id: &'static str,
    /// One-line summary for the OpenAPI document.
    pub summary: &'static str,
    /// Request body schema, if the route takes a body.
    pub body: Option<BodySchema>,
    /// Success response schema.
    pub response: BodySchema,
}

/// One row of a route table, in the table's column order:
/// `route!(POST "/v3/positions" Positions Some(Authority::Write), "postPositions", "summary", Some(schema_of::<Body>), schema_of::<Answer>)`.
/// `Op` must name the listener's operation enum where it is used.
#[macro_export]
macro_rules! route {
    ($m:ident $path:literal $op:ident $auth:expr, $id:literal, $summary:literal, $body:expr, $resp:expr) => {
        $crate::routes::Route {
            method: $crate::routes::Method::$m,
            path: $path,
            op: Op::$op,
            authority: $auth,
            id: $id,
            summary: $summary,
            body: $body,
            response: $resp,
        }
    };
}

/// Result of looking a request up in a table.
#[derive(Debug)]
pub enum Lookup<'a, Op> {
    /// A route and its path parameters, in order.
    Found(&'a Route<Op>, Vec<String>),
    /// The path exists, the method does not; the allowed methods.
    WrongMethod(Vec<Method>),
    /// No such path.
    Missing,
}

fn match_path(template: &str, path: &str) -> Option<Vec<String>> {
    let mut params = Vec::new();
    let mut t = template.trim_matches('/').split('/');
    let mut p = path.trim_end_matches('/').trim_start_matches('/').split('/');
    loop {
        match (t.next(), p.next()) {
            (None, None) => return Some(params),
            (Some(ts), Some(ps)) if ts.starts_with('{') => {
                if ps.is_empty() {
                    return None;
                }
                params.push(ps.to_owned());
            }
            (Some(ts), Some(ps)) if ts == ps => {}
            _ => return None,
        }
    }
}

fn placeholders(template: &str) -> usize {
    template.matches('{').count()
}

/// Finds the route for `method` and `path` in `table`: literal segments win over parameters
/// (`/zones/settings` before `/zones/{ZoneID}`).
pub fn lookup<'a, Op>(table: &'a [Route<Op>], method: &Method, path: &str) -> Lookup<'a, Op> {
    let mut candidates: Vec<(&Route<Op>, Vec<String>)> =
        table.iter().filter_map(|r| match_path(r.path, path).map(|p| (r, p))).collect();
    if candidates.is_empty() {
        return Lookup::Missing;
    }
    let fewest = candidates.iter().map(|(r, _)| placeholders(r.path)).min().unwrap_or(0);
    candidates.retain(|(r, _)| placeholders(r.path) == fewest);
    match candidates.iter().position(|(r, _)| r.method == *method) {
        Some(i) => {
            let (route, params) = candidates.swap_remove(i);
            Lookup::Found(route, params)
        }
        None => Lookup::WrongMethod(candidates.iter().map(|(r, _)| r.method.clone()).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(method: Method, path: &'static str, op: u8) -> Route<u8> {
        Route { method, path, op, authority: None, id: "", summary: "", body: None, response: schema_of::<()> }
    }

    fn table() -> Vec<Route<u8>> {
        vec![
            route(Method::GET, "/v3/zones", 1),
            route(Method::POST, "/v3/zones", 2),
            route(Method::GET, "/v3/zones/settings", 3),
            route(Method::GET, "/v3/zones/{ZoneID}", 4),
        ]
    }

    #[test]
    fn literal_segments_win_over_parameters() {
        let table = table();
        let Lookup::Found(r, p) = lookup(&table, &Method::GET, "/v3/zones/settings") else { panic!() };
        assert_eq!((r.op, p.len()), (3, 0));
        let Lookup::Found(r, p) = lookup(&table, &Method::GET, "/v3/zones/abc/") else { panic!() };
        assert_eq!((r.op, p), (4, vec!["abc".to_owned()]));
    }

    #[test]
    fn unknown_paths_and_methods_are_told_apart() {
        let table = table();
        assert!(matches!(lookup(&table, &Method::GET, "/v3/nothing"), Lookup::Missing));
        assert!(matches!(lookup(&table, &Method::PATCH, "/v3/zones"), Lookup::WrongMethod(m) if m.len() == 2));
    }
}
