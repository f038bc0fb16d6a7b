//! `report.html` opened in a real browser: Debian's `chromium`, headless, on the report `verify`
//! writes for a demo run against the simulator (with its injected failures, so the error plots
//! have data). The page must render with no console message at all (it has no script; a control
//! page with a `console.error` proves the check sees them) and the screenshots (light and dark)
//! are written under the target directory for a person to look at.
//!
//! The layout is measured at 1280 px: no element wider than the window (a wide table scrolls
//! inside its own box), no two headings alike; a control page with both faults proves the
//! measure sees them.
//!
//! Checked without a browser too: one self-contained file (no script, nothing fetched).
//! The browser part is skipped, saying so, only when `chromium` is absent (CI installs it:
//! .ci/run).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_draftgen");

fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/bin")])
        .flat_map(|dir| [dir.join("chromium"), dir.join("chromium-browser")])
        .find(|p| p.is_file())
}

/// Headless chromium on `page` with `args`, its console logged to stderr.
fn open(browser: &Path, page: &Path, profile: &Path, args: &[&str]) -> Output {
    Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("run chromium")
}

/// Console messages in chromium's log (`INFO:CONSOLE(…)` / `…:CONSOLE:…` lines) and uncaught errors.
fn console_messages(o: &Output) -> Vec<String> {
    String::from_utf8_lossy(&o.stderr)
        .lines()
        .filter(|l| l.contains("CONSOLE") || l.contains("Uncaught"))
        .map(str::to_string)
        .collect()
}

/// Measures the page as laid out: every element that reaches past the viewport's right (or
/// left) edge without a scrolling or clipping box of its own to hold it, a page wider than the
/// viewport, and headings with the same text. Appended to a copy of the page (the report itself
/// has no script); writes its findings into `<pre id="layout-check">`, first line the viewport.
const LAYOUT_CHECK: &str = r#"<script>
(function () {
  var vw = window.innerWidth, out = [];
  function clipped(el) {
    for (var a = el.parentElement; a && a !== document.body; a = a.parentElement) {
      var o = getComputedStyle(a).overflowX;
      if (o === 'auto' || o === 'scroll' || o === 'hidden') {
        return a.getBoundingClientRect().right <= vw + 0.5;
      }
    }
    return false;
  }
  document.body.querySelectorAll('*').forEach(function (el) {
    var r = el.getBoundingClientRect();
    if (r.width > 0 && (r.right > vw + 0.5 || r.left < -0.5) && !clipped(el)) {
      out.push('overflow ' + el.tagName.toLowerCase() + ' right=' + Math.round(r.right) + ': ' + (el.textContent || '').trim().slice(0, 60));
    }
  });
  if (document.documentElement.scrollWidth > vw) out.push('page scrollWidth ' + document.documentElement.scrollWidth);
  var seen = {};
  document.querySelectorAll('h1,h2,h3,h4').forEach(function (h) {
    var t = h.textContent.trim();
    if (seen[t]) out.push('duplicate heading: ' + t);
    seen[t] = 1;
  });
  var pre = document.createElement('pre');
  pre.id = 'layout-check';
  pre.textContent = 'viewport ' + vw + '\n' + out.join('\n');
  document.body.appendChild(pre);
})();
</script>"#;

/// The layout check's findings on `page` at a 1280 px wide window: (viewport width, problems).
fn layout_problems(browser: &Path, page: &Path, profile: &Path) -> (String, Vec<String>) {
    let html = std::fs::read_to_string(page).expect("page");
    let checked = page.with_extension("layout.html");
    std::fs::write(
        &checked,
        html.replace("</body>", &format!("{LAYOUT_CHECK}</body>")),
    )
    .expect("write checked page");
    let o = open(
        browser,
        &checked,
        profile,
        &["--window-size=1280,900", "--dump-dom"],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let dom = String::from_utf8_lossy(&o.stdout);
    let found = dom
        .split_once(r#"<pre id="layout-check">"#)
        .and_then(|(_, rest)| rest.split_once("</pre>"))
        .map(|(text, _)| {
            text.replace("&amp;", "&")
                .replace("&lt;", "<")
                .replace("&gt;", ">")
        })
        .expect("the layout check ran");
    let mut lines = found.lines().map(str::to_string);
    let viewport = lines.next().unwrap_or_default();
    (viewport, lines.filter(|l| !l.is_empty()).collect())
}

fn verified_demo(dir: &Path) -> PathBuf {
    let o = Command::new(BIN)
        .args([
            "demo",
            "--progress",
            "none",
            "--flavor",
            "openrouter",
            "--out",
        ])
        .arg(dir)
        .output()
        .expect("run draftgen demo");
    assert!(
        o.status.success(),
        "demo: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let out = dir.join("verify");
    let o = Command::new(BIN)
        .args(["verify", "--model", "kimi-k2.5", "--run"])
        .arg(dir.join("run"))
        .arg("--out")
        .arg(&out)
        .output()
        .expect("run draftgen verify");
    assert!(
        o.status.code().is_some_and(|c| c == 0 || c == 1),
        "verify: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    out.join("report.html")
}

#[test]
fn report_renders_in_headless_chromium_with_no_console_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let page = verified_demo(dir.path());
    let html = std::fs::read_to_string(&page).expect("report.html");
    assert!(html.starts_with("<!DOCTYPE html>"));
    for needle in ["<script", "src=", "href=", "url(", "@import"] {
        assert!(!html.contains(needle), "self-contained: found {needle:?}");
    }
    for section in [
        "Fidelity classes",
        "Usage cross-check",
        "Prompt and completion lengths per dataset",
        "Over time",
        "errors by class",
        "Provider mix",
        "Tool calls",
        "Divergent samples",
        "prefers-color-scheme: dark",
    ] {
        assert!(html.contains(section), "missing {section:?}");
    }
    assert_eq!(
        html.matches("<h2>Tool calls</h2>").count(),
        1,
        "one tool-call section"
    );
    assert_eq!(
        html.matches(r#"<table class="heat">"#).count(),
        2,
        "prompt and completion lengths as heat tables"
    );

    let Some(browser) = chromium() else {
        eprintln!("SKIPPED: no chromium binary (apt-get install chromium; .ci/run does)");
        return;
    };
    let profile = dir.path().join("chromium-profile");

    // The check sees console messages: a control page that logs an error.
    let control = dir.path().join("control.html");
    std::fs::write(
        &control,
        "<!DOCTYPE html><html><body><script>console.error('control-message')</script></body></html>",
    )
    .expect("control page");
    let o = open(&browser, &control, &profile, &["--dump-dom"]);
    assert!(
        console_messages(&o)
            .iter()
            .any(|l| l.contains("control-message")),
        "chromium's console log is not visible; stderr:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );

    let o = open(&browser, &page, &profile, &["--dump-dom"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(console_messages(&o), Vec::<String>::new());
    let dom = String::from_utf8_lossy(&o.stdout);
    assert!(dom.contains("Fidelity classes") && dom.contains(r#"<table class="heat">"#));

    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report_html");
    std::fs::create_dir_all(&shots).expect("screenshot dir");
    for (name, extra) in [("light", None), ("dark", Some("--force-dark-mode"))] {
        let shot = shots.join(format!("report-{name}.png"));
        let _ = std::fs::remove_file(&shot);
        let mut args = vec![
            format!("--screenshot={}", shot.display()),
            "--window-size=1400,4200".into(),
        ];
        args.extend(extra.map(str::to_string));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = open(&browser, &page, &profile, &args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(console_messages(&o), Vec::<String>::new(), "{name}");
        let png = std::fs::read(&shot).expect("screenshot written");
        assert!(
            png.starts_with(b"\x89PNG") && png.len() > 20_000,
            "{name}: a real picture"
        );
        eprintln!("screenshot: {}", shot.display());
    }
}

#[test]
fn report_fits_1280_px_and_has_no_duplicate_headings() {
    let dir = tempfile::tempdir().expect("tempdir");
    let page = verified_demo(dir.path());
    let Some(browser) = chromium() else {
        eprintln!("SKIPPED: no chromium binary (apt-get install chromium; .ci/run does)");
        return;
    };
    let profile = dir.path().join("chromium-profile");

    // The measure sees both faults: a control page with a too-wide element and a heading twice.
    let control = dir.path().join("control.html");
    std::fs::write(
        &control,
        r#"<!DOCTYPE html><html><body><h2>Same</h2><div style="width:2000px">wide</div><div style="overflow-x:auto"><div style="width:3000px">scrolls in its box</div></div><h2>Same</h2></body></html>"#,
    )
    .expect("control page");
    let (viewport, found) = layout_problems(&browser, &control, &profile);
    assert_eq!(viewport, "viewport 1280");
    assert!(
        found
            .iter()
            .any(|p| p.starts_with("overflow div") && p.contains("wide")),
        "{found:?}"
    );
    assert!(
        !found.iter().any(|p| p.contains("scrolls in its box")),
        "{found:?}"
    );
    assert!(
        found.contains(&"duplicate heading: Same".to_string()),
        "{found:?}"
    );

    let (viewport, found) = layout_problems(&browser, &page, &profile);
    assert_eq!(viewport, "viewport 1280");
    assert_eq!(found, Vec::<String>::new(), "report.html at 1280 px");
}
