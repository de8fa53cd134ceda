//! Opening an HTML trace report in headless Chromium and checking, from a
//! script in the page, that every expected rank has a drawn row in each
//! view (`tests/trace.rs`, `tests/sim.rs`).

use std::path::{Path, PathBuf};

/// Headless Chromium, if installed; without it the caller's test skips
/// (saying so), unless `HYPERCOMM_REQUIRE_CHROMIUM` is set (CI), which
/// makes its absence a failure.
pub(crate) fn chromium() -> Option<PathBuf> {
    for c in ["chromium", "chromium-browser", "google-chrome"] {
        if let Ok(o) = std::process::Command::new("which").arg(c).output() {
            if o.status.success() {
                return Some(PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
            }
        }
    }
    if std::env::var_os("HYPERCOMM_REQUIRE_CHROMIUM").is_some() {
        panic!("chromium not found (apt-get install chromium)");
    }
    eprintln!("SKIPPED: chromium not installed");
    None
}

/// The page's self-check: for each view (space-time diagram, Gantt chart,
/// matrix) every rank of the `expected` list has a drawn element (its own
/// or an aggregated row's, which lists its ranks in `data-ranks`); the
/// statistics table has rows; no script error. It appends `RESULT: OK`
/// (or `RESULT: FAIL` and what failed), then `<view> rows <n>` per view.
const CHECK: &str = r#"<script>
window.__errors = [];
window.addEventListener('error', function (e) { window.__errors.push(String(e.message)); });
window.addEventListener('load', function () {
  var want = JSON.parse(document.getElementById('expected').textContent);
  var out = [], rowsOf = [];
  ['spacetime', 'gantt', 'matrix'].forEach(function (id) {
    var svg = document.getElementById(id);
    if (!svg || svg.tagName.toLowerCase() !== 'svg') { out.push(id + ': no svg'); return; }
    var seen = {}, rows = 0;
    svg.querySelectorAll('g.rank').forEach(function (g) {
      var box = g.getBBox();
      if (box.width > 0 && box.height > 0) {
        // An aggregated row stands for the ranks it lists.
        var ranks = g.hasAttribute('data-ranks') ? g.getAttribute('data-ranks').split(',') : [g.getAttribute('data-rank')];
        ranks.forEach(function (r) { seen[r] = true; });
        rows++;
      }
    });
    want.forEach(function (r) { if (!seen[String(r)]) out.push(id + ': no drawn element for rank ' + r); });
    rowsOf.push(id + ' rows ' + rows);
  });
  if (!document.querySelector('#opstats tr td')) out.push('no statistics rows');
  if (window.__errors.length) out.push('js errors: ' + window.__errors.join('; '));
  var pre = document.createElement('pre');
  pre.id = 'result';
  pre.textContent = (out.length ? 'RESULT: FAIL ' + out.join(' | ') : 'RESULT: OK') + ' | ' + rowsOf.join(' | ');
  document.body.appendChild(pre);
});
</script>"#;

/// `html` with the self-check for ranks `nodes` added, written to `page`.
pub(crate) fn write_checked(html: &str, nodes: &[i32], page: &Path) {
    let checked = html.replacen(
        "<head>",
        &format!(
            "<head><script id=\"expected\" type=\"application/json\">{}</script>{CHECK}",
            serde_json::to_string(nodes).unwrap()
        ),
        1,
    );
    std::fs::write(page, checked).unwrap();
}

/// Open `page` in headless `chrome` with a fresh profile in `profile`,
/// letting its scripts run for `budget_ms` of virtual time, with `extra`
/// arguments (`--dump-dom`, `--screenshot=…`); its stdout and stderr.
pub(crate) fn open(
    chrome: &Path,
    page: &Path,
    profile: &Path,
    budget_ms: u32,
    extra: &[String],
) -> (String, String) {
    let _ = std::fs::remove_dir_all(profile);
    let out = std::process::Command::new(chrome)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
        ])
        .arg(format!("--virtual-time-budget={budget_ms}"))
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The page's verdict lines, for a failure message.
pub(crate) fn verdict(dom: &str, stderr: &str) -> String {
    format!(
        "{}\nstderr: {}",
        dom.lines()
            .filter(|l| l.contains("RESULT"))
            .collect::<Vec<_>>()
            .join("\n"),
        stderr.lines().take(20).collect::<Vec<_>>().join("\n")
    )
}
