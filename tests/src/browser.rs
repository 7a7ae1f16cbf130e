//! A headless Chromium driven over W3C WebDriver (chromedriver), for the console's tests: the
//! test starts chromedriver on a free port and ends it (with the browser) when the `Browser` is
//! dropped. A few WebDriver commands over plain HTTP are all the tests need, so this speaks the
//! protocol with the test's own HTTP client instead of pulling in a WebDriver crate.
//!
//! Every browser records the page's errors, and [`Browser::close`] fails the test when there was
//! one: the browser's own log (chromedriver's `goog:loggingPrefs`, read with its `se/log`
//! command) holds every uncaught exception and unhandled promise rejection of the page
//! (`javascript`), each `console.error` (`console-api`), Content-Security-Policy violations
//! (`security`) and every request of the page that failed or was answered 4xx or 5xx (`network`),
//! across reloads and navigations, from the first script on. The API's refusals (`/v3/…`) are
//! not errors: the page shows them, and the tests provoke them on purpose. A listener installed
//! with CDP's `Page.addScriptToEvaluateOnNewDocument` would see the page's exceptions too, but
//! not its failed loads (a missing icon or script), and would lose what it held at each
//! navigation.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use base64::Engine as _;
use serde_json::{Value, json};

use crate::process::free_port;

/// Where Debian's packages put the browser and its driver.
pub const CHROMIUM: &str = "/usr/bin/chromium";
/// Where Debian's packages put chromedriver.
pub const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const INSTALL: &str = "apt-get install -y chromium chromium-driver";

/// The Enter key, for [`Browser::press`].
pub const ENTER: &str = "\u{E007}";
/// The Escape key, for [`Browser::press`].
pub const ESCAPE: &str = "\u{E00C}";

/// The W3C name of the key of a WebDriver element reference.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// How the browser draws. The machines that run the tests have no GPU, so WebGL is drawn by a
/// software renderer; what composites the page differs. `BROWSER_GRAPHICS` picks one for the
/// benchmarks; the tests use [`Graphics::Chromium`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Graphics {
    /// As Chromium comes, no graphics flag: on a machine without a GPU it draws WebGL with
    /// SwiftShader and composites the page in software (chrome://gpu: "WebGL: Software only",
    /// "Compositing: Software only"). `BROWSER_GRAPHICS=chromium`, the default.
    #[default]
    Chromium,
    /// SwiftShader made Chromium's GPU (`--use-angle=swiftshader`), the page composited through
    /// it too: `BROWSER_GRAPHICS=swiftshader-gpu`.
    SwiftShaderGpu,
    /// SwiftShader made Chromium's GPU, the page composited in software
    /// (`--disable-gpu-compositing`): `BROWSER_GRAPHICS=swiftshader-software`.
    SwiftShaderSoftware,
    /// Mesa's llvmpipe through ANGLE's OpenGL ES back end on a surfaceless EGL display, the page
    /// composited through it: needs Mesa's drivers (`apt-get install libgl1-mesa-dri libegl1`).
    /// `BROWSER_GRAPHICS=llvmpipe`.
    Llvmpipe,
}

impl Graphics {
    /// What `BROWSER_GRAPHICS` names; [`Graphics::Chromium`] when it is unset.
    pub fn from_env() -> Self {
        match std::env::var("BROWSER_GRAPHICS").as_deref() {
            Ok("chromium") | Err(_) => Self::Chromium,
            Ok("swiftshader-gpu") => Self::SwiftShaderGpu,
            Ok("swiftshader-software") => Self::SwiftShaderSoftware,
            Ok("llvmpipe") => Self::Llvmpipe,
            Ok(other) => {
                panic!("BROWSER_GRAPHICS={other}: expected chromium, swiftshader-gpu, swiftshader-software or llvmpipe")
            }
        }
    }

    fn args(self) -> &'static [&'static str] {
        match self {
            Self::Chromium => &[],
            Self::SwiftShaderGpu => &["--enable-unsafe-swiftshader", "--use-angle=swiftshader"],
            Self::SwiftShaderSoftware => {
                &["--enable-unsafe-swiftshader", "--use-angle=swiftshader", "--disable-gpu-compositing"]
            }
            // Chromium keeps Mesa's software driver off its list of GPUs it trusts.
            Self::Llvmpipe => &["--use-angle=gl-egl", "--ignore-gpu-blocklist"],
        }
    }
}

impl std::fmt::Display for Graphics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Chromium => "Chromium's own choice: WebGL by SwiftShader, compositing in software",
            Self::SwiftShaderGpu => "WebGL by SwiftShader as the GPU, compositing through it",
            Self::SwiftShaderSoftware => "WebGL by SwiftShader as the GPU, compositing in software",
            Self::Llvmpipe => "WebGL by llvmpipe, compositing through it",
        })
    }
}

/// A browser session: chromedriver (its own process group, with the browser it starts) and one
/// headless Chromium window.
pub struct Browser {
    driver: std::process::Child,
    http: reqwest::Client,
    /// `http://127.0.0.1:<port>/session/<id>`
    session: String,
    screenshots: PathBuf,
    /// The page's errors read from the browser's log so far (it hands each entry out once).
    errors: Mutex<Vec<String>>,
}

impl Browser {
    /// Starts chromedriver and a headless Chromium of `width`×`height` drawing as Chromium
    /// chooses ([`Graphics::Chromium`]); screenshots go to `<target>/console-screenshots/`. Panics with the install
    /// command when either is missing.
    pub async fn start(width: u32, height: u32) -> Self {
        Self::start_with(width, height, Graphics::default()).await
    }

    /// [`Browser::start`] drawing as `graphics` says.
    pub async fn start_with(width: u32, height: u32, graphics: Graphics) -> Self {
        for program in [CHROMIUM, CHROMEDRIVER] {
            assert!(
                Path::new(program).exists(),
                "{program} is missing: the console's tests need it; install it with: {INSTALL}"
            );
        }
        let port = free_port();
        let mut command = std::process::Command::new(CHROMEDRIVER);
        command.arg(format!("--port={port}")).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null());
        if graphics == Graphics::Llvmpipe {
            // Headless, there is no X display: Mesa's EGL must not look for one.
            command.env("EGL_PLATFORM", "surfaceless");
        }
        // A group of its own, so that ending it ends the browser too (see Drop).
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let driver = command
            .spawn()
            .unwrap_or_else(|e| panic!("{CHROMEDRIVER} does not start ({e}); install it with: {INSTALL}"));
        let http = zonecast_tls::http_client().unwrap().timeout(Duration::from_secs(60)).build().unwrap();
        let base = format!("http://127.0.0.1:{port}");
        let mut browser =
            Self { driver, http, session: String::new(), screenshots: screenshot_dir(), errors: Mutex::default() };
        crate::eventually(Duration::from_secs(20), || async {
            let ready = browser.http.get(format!("{base}/status")).send().await.ok()?.json::<Value>().await.ok()?;
            (ready["value"]["ready"] == json!(true)).then_some(())
        })
        .await;
        let mut args: Vec<String> =
            ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage"].map(String::from).into();
        args.extend(graphics.args().iter().map(|a| (*a).to_owned()));
        args.push(format!("--window-size={width},{height}"));
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": CHROMIUM, "args": args},
            // The browser's log, errors only: what `page_errors` reads.
            "goog:loggingPrefs": {"browser": "SEVERE"},
        }}});
        let answer = browser.command(reqwest::Method::POST, &format!("{base}/session"), Some(capabilities)).await;
        let id = answer["sessionId"].as_str().unwrap_or_else(|| panic!("no session: {answer}"));
        browser.session = format!("{base}/session/{id}");
        browser
    }

    async fn command(&self, method: reqwest::Method, url: &str, body: Option<Value>) -> Value {
        self.try_command(method.clone(), url, body)
            .await
            .unwrap_or_else(|(status, error)| panic!("WebDriver {method} {url} answered {status}: {error}"))
    }

    /// A WebDriver command: its value, or the status and error it was answered with.
    async fn try_command(
        &self,
        method: reqwest::Method,
        url: &str,
        body: Option<Value>,
    ) -> Result<Value, (reqwest::StatusCode, Value)> {
        let mut request = self.http.request(method.clone(), url);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap_or_else(|e| panic!("WebDriver {method} {url}: {e}"));
        let status = response.status();
        let body: Value = response.json().await.unwrap_or_else(|e| panic!("WebDriver {method} {url}: {e}"));
        if status.is_success() { Ok(body["value"].clone()) } else { Err((status, body["value"].clone())) }
    }

    async fn post(&self, path: &str, body: Value) -> Value {
        self.command(reqwest::Method::POST, &format!("{}{path}", self.session), Some(body)).await
    }

    /// Opens `url` and waits until the page has loaded.
    pub async fn goto(&self, url: &str) {
        self.post("/url", json!({"url": url})).await;
    }

    /// Runs `script` (a function body; `arguments` holds `args`) in the page; answers what it
    /// returns.
    pub async fn execute(&self, script: &str, args: Value) -> Value {
        self.post("/execute/sync", json!({"script": script, "args": args})).await
    }

    /// Runs `script` as an async function body in the page (`arguments` holds `args`); answers
    /// what its promise resolves to.
    pub async fn execute_async(&self, script: &str, args: Value) -> Value {
        let wrapped = format!(
            "const done = arguments[arguments.length - 1]; \
             (async (...arguments) => {{ {script} }})(...Array.from(arguments).slice(0, -1)) \
             .then(done, (e) => done({{error: String(e && e.stack || e)}}));"
        );
        self.post("/execute/async", json!({"script": wrapped, "args": args})).await
    }

    /// Runs the expression `script` until it is truthy, polling for at most `wait`; answers its
    /// value and the time it took. Panics with `what` and the last value when the time is up.
    pub async fn until(&self, what: &str, wait: Duration, script: &str) -> (Value, Duration) {
        let started = tokio::time::Instant::now();
        loop {
            let value =
                self.execute(&format!("try {{ return ({script}); }} catch (e) {{ return null; }}"), json!([])).await;
            let truthy = match &value {
                Value::Null => false,
                Value::Bool(b) => *b,
                Value::Number(n) => n.as_f64() != Some(0.0),
                Value::String(s) => !s.is_empty(),
                _ => true,
            };
            if truthy {
                return (value, started.elapsed());
            }
            assert!(started.elapsed() < wait, "{what}: not within {wait:?} (last: {value})");
            tokio::time::sleep(Duration::from_millis(25)).await; // sleep-ok: polling interval of a bounded wait
        }
    }

    /// The element `css` selects (the first); panics when there is none.
    async fn element(&self, css: &str) -> String {
        let found = self.post("/element", json!({"using": "css selector", "value": css})).await;
        found[ELEMENT].as_str().unwrap_or_else(|| panic!("no element {css}: {found}")).to_owned()
    }

    /// Clears the field `css` and types `text` into it, as a user would.
    pub async fn type_into(&self, css: &str, text: &str) {
        let id = self.element(css).await;
        self.post(&format!("/element/{id}/clear"), json!({})).await;
        self.post(&format!("/element/{id}/value"), json!({"text": text})).await;
    }

    /// Clicks the element `css`.
    ///
    /// A list drawn again between finding the element and clicking it leaves the element found
    /// stale, while the user sees the same button in its place: it is found again and clicked.
    pub async fn click(&self, css: &str) {
        for _ in 0..5 {
            let id = self.element(css).await;
            let url = format!("{}/element/{id}/click", self.session);
            match self.try_command(reqwest::Method::POST, &url, Some(json!({}))).await {
                Ok(_) => return,
                Err((_, error)) if error["error"] == "stale element reference" => continue,
                Err((status, error)) => panic!("clicking {css} answered {status}: {error}"),
            }
        }
        panic!("{css} was drawn again before every one of five clicks");
    }

    /// Chooses the option labelled `label` in the select `css`.
    pub async fn select(&self, css: &str, label: &str) {
        let script = "const s = document.querySelector(arguments[0]); s.value = arguments[1]; \
                      s.dispatchEvent(new Event('change', {bubbles: true})); return s.value;";
        let chosen = self.execute(script, json!([css, label])).await;
        assert_eq!(chosen, json!(label), "{css} has no option {label}");
    }

    /// Moves the mouse pointer to (`x`, `y`) of the window's viewport, in CSS pixels.
    pub async fn point_at(&self, x: f64, y: f64) {
        let mouse = json!({"type": "pointer", "id": "mouse", "parameters": {"pointerType": "mouse"},
            "actions": [{"type": "pointerMove", "duration": 0, "origin": "viewport", "x": x.round() as i64, "y": y.round() as i64}]});
        self.post("/actions", json!({"actions": [mouse]})).await;
    }

    /// Presses the left mouse button at `from`, moves to `to` over a few frames and releases
    /// it there, as a user drags (viewport CSS pixels).
    pub async fn drag(&self, from: (f64, f64), to: (f64, f64)) {
        let at = |(x, y): (f64, f64), duration: u64| json!({"type": "pointerMove", "duration": duration, "origin": "viewport", "x": x.round() as i64, "y": y.round() as i64});
        let mouse = json!({"type": "pointer", "id": "mouse", "parameters": {"pointerType": "mouse"}, "actions": [
            at(from, 0), {"type": "pointerDown", "button": 0}, at(to, 150), {"type": "pointerUp", "button": 0},
        ]});
        self.post("/actions", json!({"actions": [mouse]})).await;
    }

    /// Clicks the left mouse button at (`x`, `y`) of the viewport `times` times in a row (2 is
    /// a double-click).
    pub async fn click_at(&self, x: f64, y: f64, times: usize) {
        let mut actions = vec![
            json!({"type": "pointerMove", "duration": 0, "origin": "viewport", "x": x.round() as i64, "y": y.round() as i64}),
        ];
        for _ in 0..times {
            actions.push(json!({"type": "pointerDown", "button": 0}));
            actions.push(json!({"type": "pointerUp", "button": 0}));
        }
        let mouse =
            json!({"type": "pointer", "id": "mouse", "parameters": {"pointerType": "mouse"}, "actions": actions});
        self.post("/actions", json!({"actions": [mouse]})).await;
    }

    /// Presses and releases `key` on the keyboard: a character, or a WebDriver key such as
    /// [`ENTER`] or [`ESCAPE`].
    pub async fn press(&self, key: &str) {
        let keyboard = json!({"type": "key", "id": "keyboard", "actions": [
            {"type": "keyDown", "value": key}, {"type": "keyUp", "value": key},
        ]});
        self.post("/actions", json!({"actions": [keyboard]})).await;
    }

    /// Accepts the open `confirm()` or `alert()` dialog, waiting for it at most `wait`.
    pub async fn accept_dialog(&self, wait: Duration) {
        let url = format!("{}/alert/accept", self.session);
        let started = tokio::time::Instant::now();
        loop {
            let response = self.http.post(&url).json(&json!({})).send().await.unwrap();
            if response.status().is_success() {
                return;
            }
            assert!(
                started.elapsed() < wait,
                "no dialog within {wait:?}: {}",
                response.text().await.unwrap_or_default()
            );
            tokio::time::sleep(Duration::from_millis(25)).await; // sleep-ok: polling interval of a bounded wait
        }
    }

    /// Runs the Chrome DevTools Protocol command `cmd` with `params` in the page (for
    /// measurements: `Performance.getMetrics`, `Profiler.start`, …); answers its result.
    pub async fn cdp(&self, cmd: &str, params: Value) -> Value {
        self.post("/goog/cdp/execute", json!({"cmd": cmd, "params": params})).await
    }

    /// The process id of chromedriver, whose descendants are the browser's processes.
    pub fn driver_pid(&self) -> u32 {
        self.driver.id()
    }

    /// The text of the element `css`.
    pub async fn text(&self, css: &str) -> String {
        let id = self.element(css).await;
        let text = self.command(reqwest::Method::GET, &format!("{}/element/{id}/text", self.session), None).await;
        text.as_str().unwrap_or_default().to_owned()
    }

    /// Saves a screenshot of the window as `<target>/console-screenshots/<name>.png`.
    pub async fn screenshot(&self, name: &str) -> PathBuf {
        let png = self.command(reqwest::Method::GET, &format!("{}/screenshot", self.session), None).await;
        let bytes = base64::engine::general_purpose::STANDARD.decode(png.as_str().unwrap()).unwrap();
        std::fs::create_dir_all(&self.screenshots).unwrap();
        let path = self.screenshots.join(format!("{name}.png"));
        std::fs::write(&path, bytes).unwrap();
        path
    }

    /// Every error of the page since the browser started (see the module's documentation):
    /// each as the browser logged it, e.g. `http://…/console/js/zone-layer.js 354:12 Uncaught
    /// TypeError: …` or `http://…/favicon.ico - Failed to load resource: the server responded
    /// with a status of 404 (Not Found)`.
    pub async fn page_errors(&self) -> Vec<String> {
        let entries = self.post("/se/log", json!({"type": "browser"})).await;
        let mut errors = self.errors.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        for entry in entries.as_array().into_iter().flatten() {
            if is_page_error(entry) {
                let (source, message) = (entry["source"].as_str().unwrap_or("?"), entry["message"].as_str());
                errors.push(format!("{source}: {}", message.unwrap_or_default()));
            }
        }
        errors.clone()
    }

    /// Panics, naming `when` and every error, when the page has had one since the browser
    /// started (see [`Browser::page_errors`]).
    pub async fn assert_no_page_errors(&self, when: &str) {
        let errors = self.page_errors().await;
        assert!(errors.is_empty(), "the page had {} error(s) {when}:\n{}", errors.len(), errors.join("\n"));
    }

    /// Ends the session (the browser closes) and chromedriver. Panics when the page had an
    /// error while it ran ([`Browser::page_errors`]): every test that closes its browser checks
    /// that.
    pub async fn close(self) {
        let errors = self.page_errors().await;
        let _ = self.http.delete(&self.session).send().await;
        assert!(errors.is_empty(), "the page had {} error(s):\n{}", errors.len(), errors.join("\n"));
    }
}

/// Whether an entry of the browser's log is an error of the page: anything logged as `SEVERE`,
/// except a request to the API (`/v3/…`) answered with an error, which the page shows.
fn is_page_error(entry: &Value) -> bool {
    if entry["level"] != "SEVERE" {
        return false;
    }
    if entry["source"] != "network" {
        return true;
    }
    // "http://127.0.0.1:PORT/v3/modules/zones - Failed to load resource: …"
    let url = entry["message"].as_str().unwrap_or_default().split(' ').next().unwrap_or_default();
    let path = url.split_once("://").map_or(url, |(_, rest)| rest.find('/').map_or("/", |i| &rest[i..]));
    !path.starts_with("/v3/")
}

impl Drop for Browser {
    fn drop(&mut self) {
        // The whole group: chromedriver and the browser it started, also after a failed test.
        let group = format!("-{}", self.driver.id());
        let _ = std::process::Command::new("kill").args(["-KILL", "--", &group]).status();
        let _ = self.driver.wait();
    }
}

/// `<target>/console-screenshots`, beside the test executables' profile directory.
fn screenshot_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    // <target>/<profile>/deps/<test executable>
    let target = exe.ancestors().nth(3).expect("target directory");
    target.join("console-screenshots")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(level: &str, source: &str, message: &str) -> Value {
        json!({"level": level, "source": source, "message": message, "timestamp": 0})
    }

    #[test]
    fn errors_of_the_page_are_its_exceptions_and_failed_loads_of_its_own_files() {
        let thrown = "http://127.0.0.1:1/console/js/zone-layer.js 354:12 Uncaught TypeError: x";
        assert!(is_page_error(&entry("SEVERE", "javascript", thrown)));
        assert!(is_page_error(&entry("SEVERE", "console-api", "http://127.0.0.1:1/ 2:8 \"boom\"")));
        let icon = "http://127.0.0.1:1/favicon.ico - Failed to load resource: the server responded with a status of 404 (Not Found)";
        assert!(is_page_error(&entry("SEVERE", "network", icon)));
        // The API's refusals are the page's to show.
        let refused = "http://127.0.0.1:1/v3/modules/zones - Failed to load resource: the server responded with a status of 422 (Unprocessable Entity)";
        assert!(!is_page_error(&entry("SEVERE", "network", refused)));
        assert!(!is_page_error(&entry("WARNING", "rendering", "Automatic fallback to software WebGL")));
    }
}
