//! The house rules of the library's layout, checked on its source:
//!
//! * the modules (each top-level file of `src/`, each top-level folder with
//!   everything in it) import each other without a cycle;
//! * `transport/` imports nothing from the layers above it, the engine
//!   nothing from the collectives, `trace/` nothing above the engine's
//!   hook; `sim.rs` (the simulator's user-facing module) sits on top, and
//!   nothing imports it; the simulator's pure half
//!   (`hypercomm-algo/src/sim/`) sits above the algorithms and does no I/O;
//! * `collective/` has at most five lines with `unsafe` and no `unsafe fn`;
//! * no library file is longer than 800 lines.
//!
//! Imports are read from the code with comments removed: every
//! `crate::<module>` path, in `use` declarations and inline.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The library crates' source folders (the workspace root is two levels up).
fn src(krate: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(krate)
        .join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("reading the source folder") {
        let p = e.expect("a directory entry").path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The code of a Rust file without its comments (string literals kept).
fn strip_comments(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let (mut i, mut in_str, mut block) = (0, false, 0usize);
    while i < b.len() {
        let c = b[i];
        if block > 0 {
            if b[i..].starts_with(b"*/") {
                block -= 1;
                i += 2;
            } else if b[i..].starts_with(b"/*") {
                block += 1;
                i += 2;
            } else {
                i += 1;
            }
            continue;
        }
        if in_str {
            out.push(c as char);
            if c == b'\\' && i + 1 < b.len() {
                out.push(b[i + 1] as char);
                i += 2;
                continue;
            }
            if c == b'"' {
                in_str = false;
            }
            i += 1;
            continue;
        }
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if b[i..].starts_with(b"/*") {
            block = 1;
            i += 2;
            continue;
        }
        if c == b'"' {
            in_str = true;
        } else if c == b'\'' && i + 2 < b.len() && b[i + 2] == b'\'' {
            // A character literal such as '"': keep it out of the strings.
            out.push_str(&text[i..i + 3]);
            i += 3;
            continue;
        }
        out.push(c as char);
        i += 1;
    }
    out
}

/// The module a file belongs to: its top-level folder, or its own stem.
fn module_of(root: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(root).expect("a file under src/");
    let first = rel
        .components()
        .next()
        .expect("a path")
        .as_os_str()
        .to_string_lossy()
        .into_owned();
    first.trim_end_matches(".rs").to_string()
}

/// Every `crate::<name>` the code names.
fn crate_paths(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        let before = rest[..i].chars().last();
        let after = &rest[i + 7..];
        let name: String = after
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        // Not `hypercomm_crate::` or the like.
        if !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') && !name.is_empty() {
            out.insert(name);
        }
        rest = after;
    }
    out
}

/// Module → the modules it imports.
type Graph = BTreeMap<String, BTreeSet<String>>;

/// The library's module graph and every file's text.
fn graph(krate: &str) -> (Graph, Vec<(PathBuf, String)>) {
    let root = src(krate);
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    files.sort();
    let modules: BTreeSet<String> = files.iter().map(|f| module_of(&root, f)).collect();
    let mut g: Graph = BTreeMap::new();
    let mut texts = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("reading a source file");
        let m = module_of(&root, f);
        let code = strip_comments(&text);
        let deps = g.entry(m.clone()).or_default();
        for name in crate_paths(&code) {
            // Items re-exported at the crate root (`crate::run`) belong to
            // their module of the same name; other root items are lib.rs's.
            if name != m && modules.contains(&name) {
                deps.insert(name);
            }
        }
        texts.push((f.clone(), text));
    }
    // lib.rs declares and re-exports everything: it is the root, not a layer.
    g.remove("lib");
    for deps in g.values_mut() {
        deps.remove("lib");
    }
    (g, texts)
}

/// A cycle of `g`, if it has one.
fn find_cycle(g: &Graph) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        g: &Graph,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(n.to_string(), 1);
        stack.push(n.to_string());
        for d in g.get(n).into_iter().flatten() {
            match state.get(d.as_str()).copied().unwrap_or(0) {
                1 => {
                    let at = stack.iter().position(|x| x == d).expect("on the stack");
                    let mut c = stack[at..].to_vec();
                    c.push(d.clone());
                    return Some(c);
                }
                0 => {
                    if let Some(c) = visit(d, g, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(n.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in g.keys() {
        if state.get(n.as_str()).copied().unwrap_or(0) == 0 {
            let mut stack = Vec::new();
            if let Some(c) = visit(n, g, &mut state, &mut stack) {
                return Some(c);
            }
        }
    }
    None
}

#[test]
fn the_checker_sees_imports_and_cycles() {
    let code = strip_comments(
        "use crate::comm::Comm; // crate::launch\n/* crate::run */ let s = \"//\"; crate::engine::x();",
    );
    let p = crate_paths(&code);
    assert_eq!(
        p.into_iter().collect::<Vec<_>>(),
        vec!["comm".to_string(), "engine".to_string()]
    );
    let mut g = BTreeMap::new();
    g.insert("a".to_string(), BTreeSet::from(["b".to_string()]));
    g.insert("b".to_string(), BTreeSet::from(["c".to_string()]));
    g.insert("c".to_string(), BTreeSet::new());
    assert_eq!(find_cycle(&g), None);
    g.get_mut("c").unwrap().insert("a".to_string());
    assert_eq!(
        find_cycle(&g),
        Some(
            vec!["a", "b", "c", "a"]
                .into_iter()
                .map(String::from)
                .collect()
        )
    );
}

#[test]
fn no_import_cycle_among_the_library_modules() {
    for krate in ["hypercomm", "hypercomm-algo"] {
        let (g, _) = graph(krate);
        if let Some(c) = find_cycle(&g) {
            panic!("{krate}: import cycle {}", c.join(" → "));
        }
    }
}

#[test]
fn lower_layers_import_nothing_from_higher_ones() {
    let (g, _) = graph("hypercomm");
    let forbidden: &[(&str, &[&str])] = &[
        (
            "transport",
            &[
                "engine",
                "comm",
                "p2p",
                "request",
                "collective",
                "launch",
                "run",
                "trace",
            ],
        ),
        (
            "engine",
            &["comm", "p2p", "request", "collective", "launch", "run"],
        ),
        (
            "trace",
            &[
                "engine",
                "comm",
                "p2p",
                "request",
                "collective",
                "launch",
                "run",
            ],
        ),
        ("comm", &["collective", "launch", "run"]),
        ("collective", &["launch"]),
        // The simulator's user-facing module sits on top: it starts jobs
        // (run) on its transport and reads the trace; it reaches no layer
        // in between.
        (
            "sim",
            &["engine", "comm", "p2p", "request", "collective", "launch"],
        ),
        // Grids sit on the public p2p, collective and topology API
        // (DESIGN.md), never on the engine or what is below it.
        (
            "topology",
            &["engine", "transport", "launch", "run", "grid"],
        ),
        ("grid", &["engine", "transport", "launch", "run"]),
    ];
    for (m, bad) in forbidden {
        let deps = g.get(*m).unwrap_or_else(|| panic!("no module {m}"));
        for b in *bad {
            assert!(!deps.contains(*b), "{m}/ imports from {b}: {deps:?}");
        }
    }
    // Nothing in the library imports the simulator's module: the simulated
    // transport is one folder of transport/ like the others.
    for (m, deps) in &g {
        assert!(m == "sim" || !deps.contains("sim"), "{m} imports sim");
    }
}

/// The simulator's pure half (`hypercomm-algo/src/sim/`) sits above the
/// algorithms: it reads schedules, the registry and the selection rules;
/// no algorithm, registry or rule reads it; and it does no I/O, keeps no
/// clock and starts no thread.
#[test]
fn the_schedule_simulator_sits_above_the_algorithms_and_is_pure() {
    let (g, texts) = graph("hypercomm-algo");
    for (m, deps) in &g {
        assert!(
            m == "sim" || !deps.contains("sim"),
            "hypercomm-algo/src/{m} imports the simulator"
        );
    }
    let allowed = [
        "schedule",
        "entry",
        "registry",
        "select",
        "topology",
        "ring",
        "collective",
    ];
    let sim = g.get("sim").expect("a sim module");
    for d in sim {
        // The tests of sim/ may call the algorithms themselves.
        assert!(
            allowed.contains(&d.as_str()) || d.contains('_'),
            "sim/ imports {d}"
        );
    }
    let dir = src("hypercomm-algo").join("sim");
    for (f, text) in &texts {
        if !f.starts_with(&dir) {
            continue;
        }
        let code = strip_comments(text);
        for io in [
            "std::fs",
            "std::io",
            "std::net",
            "std::process",
            "std::thread",
            "Instant",
            "SystemTime",
        ] {
            assert!(!code.contains(io), "{} uses {io}", f.display());
        }
    }
}

#[test]
fn unsafe_stays_out_of_the_collectives() {
    let (_, texts) = graph("hypercomm");
    let dir = src("hypercomm").join("collective");
    let mut lines = Vec::new();
    for (f, text) in &texts {
        if !f.starts_with(&dir) {
            continue;
        }
        for (i, l) in text.lines().enumerate() {
            if l.contains("unsafe") {
                lines.push(format!("{}:{}: {}", f.display(), i + 1, l.trim()));
                assert!(
                    !l.contains("unsafe fn"),
                    "an unsafe fn in collective/: {}:{}",
                    f.display(),
                    i + 1
                );
            }
        }
    }
    assert!(
        lines.len() <= 5,
        "{} lines with `unsafe` in collective/:\n{}",
        lines.len(),
        lines.join("\n")
    );
}

#[test]
fn no_library_file_is_longer_than_800_lines() {
    for krate in ["hypercomm", "hypercomm-algo", "hypercomm-cli"] {
        let (_, texts) = graph(krate);
        for (f, text) in texts {
            let n = text.lines().count();
            assert!(n <= 800, "{} has {n} lines", f.display());
        }
    }
}
