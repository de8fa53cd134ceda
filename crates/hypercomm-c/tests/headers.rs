//! The headers `picl.h`, `cmmd.h` and `ipsc.h`:
//!
//! * each compiles alone with `gcc -std=c89 -Wall -Werror` (the manuals'
//!   era) and in a C++ file with `g++ -Wall -Werror`;
//! * every function a header declares is exported by the library, and
//!   every C entry point the library exports is declared in a header;
//! * each declaration's return and parameter types match the Rust
//!   signature (read from the source; the functions made by the two
//!   macros are listed here from their macro definitions);
//! * the ABI does not change by accident: the declarations, the constants
//!   and the Fortran 77 entry points are compared with `abi.txt`, and
//!   every CMMD and iPSC routine has its Fortran form.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

mod common;
use common::have;

fn here() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

const HEADERS: [&str; 3] = ["picl.h", "cmmd.h", "ipsc.h"];

#[test]
fn each_header_compiles_alone_as_c89_and_in_cplusplus() {
    if !have(&["gcc", "g++"]) {
        return;
    }
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("hypercomm-headers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for h in HEADERS {
        for (compiler, ext, std) in [("gcc", "c", Some("-std=c89")), ("g++", "cpp", None)] {
            let src = dir.join(format!("{h}.{ext}"));
            std::fs::write(
                &src,
                format!("#include \"{h}\"\nint hypercomm_header_check;\n"),
            )
            .unwrap();
            let mut c = Command::new(compiler);
            c.args(std)
                .args(["-Wall", "-Werror", "-fsyntax-only", "-I"]);
            c.arg(here().join("include")).arg(&src);
            let out = c.output().expect(compiler);
            assert!(
                out.status.success(),
                "{compiler} {h}:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

/// Normalised C type names.
fn c_type(t: &str) -> String {
    let t = t.trim();
    let t = t
        .replace("CMMD_combiner_t", "int")
        .replace("CMMD_scan_direction_t", "int")
        .replace("CMMD_segment_mode_t", "int")
        .replace("CMMD_scan_inclusion_t", "int");
    if t.contains("(*") {
        return "fn".into();
    }
    // Drop the parameter name: the last identifier after the type.
    let words: Vec<&str> = t.split_whitespace().collect();
    let mut s = t.clone();
    if words.len() > 1 && !t.ends_with('*') {
        let last = words[words.len() - 1].trim_start_matches('*');
        if !["int", "char", "double", "float", "void", "unsigned"].contains(&last) {
            s = t[..t.rfind(last).unwrap()].to_string();
        }
    }
    s.replace(' ', "").replace("unsignedint", "unsigned")
}

/// name → (return, params) of every declaration in the headers (the C
/// branch of `#ifdef __cplusplus` … `#else`).
fn header_decls() -> BTreeMap<String, (String, Vec<String>)> {
    decls_in(&HEADERS)
}

/// As [`header_decls`], of `headers` only.
fn decls_in(headers: &[&str]) -> BTreeMap<String, (String, Vec<String>)> {
    let mut out = BTreeMap::new();
    for &h in headers {
        let text = std::fs::read_to_string(here().join("include").join(h)).unwrap();
        let mut code = String::new();
        let mut skip = false;
        for line in text.lines() {
            let l = line.trim();
            if l.starts_with("#ifdef __cplusplus") {
                skip = true;
                continue;
            }
            if skip && (l.starts_with("#else") || l.starts_with("#endif")) {
                skip = false;
                continue;
            }
            if skip || l.starts_with('#') {
                continue;
            }
            code.push_str(line);
            code.push('\n');
        }
        let code = strip_c_comments(&code);
        for decl in code.split(';') {
            let d = decl.split_whitespace().collect::<Vec<_>>().join(" ");
            let Some(open) = d.find('(') else { continue };
            if d.starts_with("typedef") || d.starts_with("extern") || d.contains('{') {
                continue;
            }
            let head = &d[..open];
            let name = head
                .split_whitespace()
                .last()
                .unwrap()
                .trim_start_matches('*');
            let ret = c_type(&head[..head.len() - name.len()]);
            let inner = &d[open + 1..d.rfind(')').unwrap()];
            let params = if inner.trim() == "void" || inner.trim().is_empty() {
                if inner.trim().is_empty() && name == "close0" {
                    vec!["int".into()] // declared without a prototype; takes int
                } else {
                    vec![]
                }
            } else {
                split_params(inner).iter().map(|p| c_type(p)).collect()
            };
            out.insert(name.to_string(), (ret, params));
        }
    }
    out
}

fn strip_c_comments(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("/*") {
        out.push_str(&rest[..i]);
        rest = &rest[i + 2..];
        rest = &rest[rest.find("*/").map_or(rest.len(), |j| j + 2)..];
    }
    out.push_str(rest);
    out
}

fn split_params(s: &str) -> Vec<String> {
    let (mut depth, mut cur, mut out) = (0, String::new(), Vec::new());
    for ch in s.chars() {
        match ch {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(ch);
    }
    out.push(cur);
    out
}

/// A Rust FFI type as the C type it must be declared as (mutable pointers
/// may be declared `const` only where the Rust side reads).
fn rust_to_c(t: &str) -> String {
    let t = t.replace(' ', "");
    if t.starts_with("Option<extern") {
        return "fn".into();
    }
    let base = |b: &str| -> &str {
        match b {
            "c_int" | "i32" => "int",
            "c_uint" | "u32" => "unsigned",
            "f64" => "double",
            "f32" => "float",
            "c_char" => "char",
            "c_void" => "void",
            _ => panic!("unmapped Rust type {b}"),
        }
    };
    if let Some(b) = t.strip_prefix("*mut") {
        format!("{}*", base(b))
    } else if let Some(b) = t.strip_prefix("*const") {
        format!("const{}*", base(b))
    } else {
        base(&t).to_string()
    }
}

/// name → (return, params) of the C entry points defined in Rust source
/// (not the Fortran ones, whose names end in `_`).
fn rust_decls() -> BTreeMap<String, (String, Vec<String>)> {
    let mut out = BTreeMap::new();
    for f in ["picl.rs", "cmmd/mod.rs", "cmmd/collective.rs", "ipsc.rs"] {
        let text = std::fs::read_to_string(here().join("src").join(f)).unwrap();
        let mut rest = text.as_str();
        while let Some(i) = rest.find("extern \"C\" fn ") {
            rest = &rest[i + 14..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if name.is_empty() || name.ends_with('_') || name.starts_with('$') {
                continue;
            }
            let open = rest.find('(').unwrap();
            let mut depth = 0;
            let mut close = open;
            for (k, ch) in rest[open..].char_indices() {
                match ch {
                    '(' => depth += 1,
                    ')' => {
                        depth -= 1;
                        if depth == 0 {
                            close = open + k;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            let params: Vec<String> = split_params(&rest[open + 1..close])
                .iter()
                .filter(|p| !p.trim().is_empty())
                .map(|p| rust_to_c(p.split_once(':').unwrap().1))
                .collect();
            let after = &rest[close + 1..rest[close..].find('{').unwrap() + close];
            let ret = match after.split_once("->") {
                Some((_, r)) => rust_to_c(r.trim()),
                None => "void".into(),
            };
            out.insert(name, (ret, params));
        }
    }
    // Made by macros (picl.rs `gops!`, cmmd/collective.rs `reductions!`).
    for g in [
        "gsum0", "gprod0", "gmax0", "gmin0", "gand0", "gor0", "gxor0",
    ] {
        out.insert(
            g.into(),
            (
                "void".into(),
                vec![
                    "void*".into(),
                    "int".into(),
                    "int".into(),
                    "int".into(),
                    "int".into(),
                ],
            ),
        );
    }
    for (ty, val, ret) in [
        ("int", "int", "int"),
        ("uint", "unsigned", "unsigned"),
        ("float", "float", "double"),
        ("double", "double", "double"),
    ] {
        for kind in ["reduce", "reduce_from_nodes", "reduce_to_host"] {
            out.insert(
                format!("CMMD_{kind}_{ty}"),
                (ret.into(), vec![val.into(), "int".into()]),
            );
        }
        let scan = vec![
            val.into(),
            "int".into(),
            "int".into(),
            "int".into(),
            "int".into(),
            "int".into(),
        ];
        out.insert(format!("CMMD_scan_{ty}"), (ret.into(), scan));
    }
    out
}

/// `const T*` in C where Rust has `*mut T` is a header promise not to
/// write, which Rust keeps by reading only; every other difference is an
/// error.
fn compatible(c: &str, r: &str) -> bool {
    c == r || c.strip_prefix("const") == Some(r)
}

#[test]
fn headers_match_the_rust_signatures_and_the_exported_symbols() {
    let h = header_decls();
    let r = rust_decls();
    let mut problems = Vec::new();
    for (name, (ret, params)) in &h {
        match r.get(name) {
            None => problems.push(format!("{name} is declared but not defined")),
            Some((rret, rparams)) => {
                if ret != rret {
                    problems.push(format!("{name}: returns {ret} in C, {rret} in Rust"));
                }
                if params.len() != rparams.len()
                    || params.iter().zip(rparams).any(|(c, r)| !compatible(c, r))
                {
                    problems.push(format!("{name}: ({params:?}) in C, ({rparams:?}) in Rust"));
                }
            }
        }
    }
    for name in r.keys() {
        if !h.contains_key(name) {
            problems.push(format!("{name} is exported but in no header"));
        }
    }
    if let Some(syms) = exported_symbols() {
        for name in h.keys() {
            if !syms.contains(name) {
                problems.push(format!("{name} is not exported by the static library"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(h.len() > 100, "only {} declarations found", h.len());
}

/// The global functions the static library of this profile defines (`nm`),
/// the library built first. `None` when `nm` is missing (skipped).
fn exported_symbols() -> Option<std::collections::BTreeSet<String>> {
    common::cargo_build(&["hypercomm-c"]);
    if !have(&["nm"]) {
        return None;
    }
    let lib = common::profile_dir().join("libhypercomm_c.a");
    let out = Command::new("nm")
        .args(["-g", "--defined-only"])
        .arg(&lib)
        .output()
        .expect("nm");
    assert!(
        out.status.success(),
        "nm {}: {}",
        lib.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    Some(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.split_once(" T "))
            .map(|(_, name)| name.to_string())
            .collect(),
    )
}

/// The `#define NAME VALUE` constants of the headers (not the include
/// guards), as `NAME VALUE`.
fn header_constants() -> Vec<String> {
    let mut out = Vec::new();
    for h in HEADERS {
        let text = std::fs::read_to_string(here().join("include").join(h)).unwrap();
        for l in text.lines() {
            let w: Vec<&str> = l.split_whitespace().collect();
            if w.len() >= 3 && w[0] == "#define" {
                out.push(format!("{} {}", w[1], w[2..].join(" ")));
            }
        }
    }
    out
}

/// The C names of the Fortran 77 entry points: gfortran's lower case with
/// one trailing underscore.
fn is_fortran_symbol(s: &str) -> bool {
    s.len() > 1
        && s.ends_with('_')
        && !s.starts_with('_')
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// The interface as one text: every declaration, constant and Fortran
/// entry point, sorted.
fn abi_text(syms: &std::collections::BTreeSet<String>) -> String {
    let mut s = String::from(
        "# The C and Fortran 77 ABI of hypercomm-c, checked by tests/headers.rs.\n\
         # A change here breaks programs built against an earlier library:\n\
         # make it only on purpose (HYPERCOMM_C_WRITE_ABI=1 rewrites this file).\n",
    );
    for (name, (ret, params)) in header_decls() {
        s.push_str(&format!("fn {ret} {name}({})\n", params.join(", ")));
    }
    let mut consts = header_constants();
    consts.sort();
    for c in consts {
        s.push_str(&format!("const {c}\n"));
    }
    for f in syms.iter().filter(|s| is_fortran_symbol(s)) {
        s.push_str(&format!("fortran {f}\n"));
    }
    s
}

#[test]
fn the_abi_is_the_recorded_one_and_every_routine_has_its_fortran_form() {
    let Some(syms) = exported_symbols() else {
        return;
    };
    // Section 1.3 of the CMMD manual: every routine from Fortran 77; the
    // iPSC utilities are Fortran routines first.
    let mut missing = Vec::new();
    let ipsc = decls_in(&["ipsc.h"]);
    for (name, _) in header_decls() {
        let fortran = if name.starts_with("CMMD_") {
            Some(format!("{}_", name.to_lowercase()))
        } else if name == "ipsc_xor" {
            Some("xor_".to_string())
        } else if ipsc.contains_key(&name) {
            Some(format!("{name}_"))
        } else {
            None
        };
        if let Some(f) = fortran {
            if !syms.contains(&f) {
                missing.push(format!("{name} has no Fortran form {f}"));
            }
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));

    let path = here().join("abi.txt");
    let now = abi_text(&syms);
    if std::env::var_os("HYPERCOMM_C_WRITE_ABI").is_some() {
        std::fs::write(&path, &now).unwrap();
    }
    let recorded = std::fs::read_to_string(&path).unwrap_or_default();
    let old: std::collections::BTreeSet<&str> = recorded.lines().collect();
    let new: std::collections::BTreeSet<&str> = now.lines().collect();
    let removed: Vec<_> = old.difference(&new).map(|l| format!("- {l}")).collect();
    let added: Vec<_> = new.difference(&old).map(|l| format!("+ {l}")).collect();
    assert!(
        removed.is_empty() && added.is_empty(),
        "the C/Fortran ABI differs from {}:\n{}\n{}\n\
         If the change is deliberate, record it: HYPERCOMM_C_WRITE_ABI=1 cargo test --release -p hypercomm-c --test headers",
        path.display(),
        removed.join("\n"),
        added.join("\n")
    );
}

#[test]
fn no_c_name_takes_the_place_of_one_of_the_c_librarys() {
    if !have(&["gcc", "nm"]) {
        return;
    }
    // The C library and libm every program links with, as gcc finds them.
    let mut theirs = std::collections::BTreeSet::new();
    for lib in ["libc.so.6", "libm.so.6"] {
        let out = Command::new("gcc")
            .arg(format!("-print-file-name={lib}"))
            .output()
            .expect("gcc");
        let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let out = Command::new("nm")
            .args(["-D", "--defined-only"])
            .arg(&path)
            .output()
            .expect("nm");
        assert!(out.status.success(), "nm -D {path}");
        for l in String::from_utf8_lossy(&out.stdout).lines() {
            if let Some(name) = l.split_whitespace().nth(2) {
                theirs.insert(name.split('@').next().unwrap().to_string());
            }
        }
    }
    assert!(
        theirs.contains("printf"),
        "no symbols read from the C library"
    );
    let ours = exported_symbols().expect("nm");
    let clash: Vec<_> = header_decls()
        .into_keys()
        .chain(ours.into_iter().filter(|s| is_fortran_symbol(s)))
        .filter(|n| theirs.contains(n))
        .collect();
    assert!(
        clash.is_empty(),
        "these names are the C library's too: {clash:?}"
    );
}
