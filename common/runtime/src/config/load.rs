//! Where each setting's value comes from: its flag, else its `ZONECAST_*` variable, else the
//! TOML file named by `--config` / `ZONECAST_CONFIG`, else its default. The variables are
//! taken from a map rather than read by clap, so that tests load without touching the
//! process's environment; clap still declares them, for `--help`.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::Path;

use clap::error::ErrorKind;
use clap::parser::ValueSource;
use clap::{ArgMatches, Command, CommandFactory, Parser};

use super::args::Check;
use super::origins::{Origins, env_name};
use super::{ConfigError, ENV_VARS, Loaded, Problem};

/// The command as parsed: clap reads no variable itself (values from `env` are passed as
/// flags), so it is the declaration without them.
fn without_env<P: CommandFactory>() -> Command {
    P::command().mut_args(|arg| arg.env(None))
}

fn command_line_problem(e: &clap::Error) -> ConfigError {
    let text = e.to_string();
    let reason = text.lines().next().unwrap_or_default().trim_start_matches("error: ").to_owned();
    ConfigError::Invalid(vec![Problem { name: "command line".into(), reason }])
}

/// The TOML file's settings as text, by key; keys no binary knows are problems.
fn read_file(path: &Path, problems: &mut Vec<Problem>) -> HashMap<String, String> {
    let name = format!("config file {}", path.display());
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) => {
            problems.push(Problem { name, reason: e.to_string() });
            return HashMap::new();
        }
    };
    let table: toml::Table = match toml::from_str(&text) {
        Ok(table) => table,
        Err(e) => {
            problems.push(Problem { name, reason: e.to_string() });
            return HashMap::new();
        }
    };
    let mut values = HashMap::new();
    for (key, value) in table {
        let known = key != "config" && ENV_VARS.contains(&env_name(&key).as_str());
        let text = match value {
            _ if !known => Err("unknown setting".to_owned()),
            toml::Value::String(s) => Ok(s),
            toml::Value::Integer(n) => Ok(n.to_string()),
            toml::Value::Float(n) => Ok(n.to_string()),
            toml::Value::Boolean(b) => Ok(b.to_string()),
            toml::Value::Array(items) => items
                .into_iter()
                .map(|item| match item {
                    toml::Value::String(s) => Ok(s),
                    other => Err(format!("list items must be strings, found {}", other.type_str())),
                })
                .collect::<Result<Vec<_>, _>>()
                .map(|items| items.join(",")),
            other => Err(format!("must be a string, a number or a list of strings, found {}", other.type_str())),
        };
        match text {
            Ok(text) => {
                values.insert(key, text);
            }
            Err(reason) => problems.push(Problem { name: format!("{key} (in {})", path.display()), reason }),
        }
    }
    values
}

/// Parses `args` as command line `P` with the variables of `env` and the file, then checks
/// the result with `check` (which returns the configuration and whether logs are JSON); every
/// problem found along the way is reported together. Each binary's [`super::Load`] calls it.
pub fn load<P, C>(
    args: Vec<OsString>,
    env: &HashMap<String, String>,
    check: impl Fn(&P, &mut Check<'_>) -> (C, bool),
) -> Result<Loaded<C>, ConfigError>
where
    P: Parser,
{
    let given = match without_env::<P>().try_get_matches_from(&args) {
        Ok(matches) => matches,
        Err(e) if e.kind() == ErrorKind::DisplayHelp => {
            return Err(ConfigError::Help(P::command().render_long_help().to_string()));
        }
        Err(e) if e.kind() == ErrorKind::DisplayVersion => {
            return Err(ConfigError::Help(P::command().render_version()));
        }
        Err(e) => return Err(command_line_problem(&e)),
    };
    let mut problems = Vec::new();
    let on_command_line = |matches: &ArgMatches, id: &str| matches.value_source(id) == Some(ValueSource::CommandLine);
    let file_path = if on_command_line(&given, "config") {
        given.get_one::<std::path::PathBuf>("config").cloned()
    } else {
        env.get("ZONECAST_CONFIG").filter(|p| !p.is_empty()).map(std::path::PathBuf::from)
    };
    let file = file_path.as_deref().map(|p| read_file(p, &mut problems)).unwrap_or_default();
    // Every setting not on the command line: its variable, else its file key, as a flag.
    let mut origins = Origins::default();
    let mut layered = args.clone();
    for arg in P::command().get_arguments() {
        let (Some(env_var), Some(long)) = (arg.get_env(), arg.get_long()) else { continue };
        let id = arg.get_id().as_str();
        if on_command_line(&given, id) {
            origins.given(id, format!("--{long}"));
            continue;
        }
        let from_env = env_var.to_str().and_then(|name| env.get(name).map(|v| (name.to_owned(), v)));
        let from_file = || {
            file.get(id).map(|v| (format!("{id} (in {})", file_path.as_deref().unwrap_or(Path::new("")).display()), v))
        };
        if let Some((origin, value)) = from_env.or_else(from_file) {
            origins.given(id, origin);
            layered.push(format!("--{long}={value}").into());
        }
    }
    let matches = without_env::<P>().try_get_matches_from(&layered).map_err(|e| command_line_problem(&e))?;
    let parsed = P::from_arg_matches(&matches).map_err(|e| command_line_problem(&e))?;
    let mut c = Check::new(&origins);
    let (config, log_json) = check(&parsed, &mut c);
    problems.extend(c.into_problems());
    if problems.is_empty() { Ok(Loaded { config, log_json }) } else { Err(ConfigError::Invalid(problems)) }
}
