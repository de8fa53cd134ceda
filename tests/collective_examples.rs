//! Runs the collective seed examples (`examples/ipsc_normalize.rs`,
//! `cmmd_scans.rs`, `kumar_matvec.rs`, `picl_sweep.rs`) as processes and
//! checks their output against values computed here, serially and
//! independently of the library:
//!
//! * `ipsc_normalize`: the norm and the normalized vector, bit for bit (the
//!   data are integer-valued, so the sum of squares is exact);
//! * `cmmd_scans`: the values of SPEC.md section 10, literally;
//! * `kumar_matvec`: y = A·x and x·y by a serial loop;
//! * `picl_sweep`: p(p+1)/2 for every p = 1, 2, 4, … ≤ P and every topology.
//!
//! As in `tests/examples.rs`, when cargo runs this test it first builds
//! the examples into the same target directory and profile; each run is
//! killed after 60 s.

mod common;

use common::procs::stdout_of;

/// The text after `label: ` on the line that starts with it.
fn field<'a>(out: &'a str, label: &str) -> &'a str {
    out.lines()
        .find_map(|l| l.strip_prefix(label).and_then(|r| r.strip_prefix(": ")))
        .unwrap_or_else(|| panic!("no line `{label}: …` in\n{out}"))
}

#[test]
fn ipsc_normalize_equals_a_serial_normalization() {
    for (p, m) in [(1usize, 4usize), (4, 3), (5, 7), (8, 16)] {
        let out = stdout_of("ipsc_normalize", &[&p.to_string(), &m.to_string()]);
        let xs: Vec<f64> = (0..p * m).map(|j| ((37 * j) % 11) as f64 - 5.0).collect();
        let norm = xs.iter().map(|v| v * v).sum::<f64>().sqrt();
        let got_norm: f64 = field(&out, "norm").parse().expect("a float");
        assert_eq!(got_norm.to_bits(), norm.to_bits(), "P={p} M={m}");
        let got: Vec<f64> = field(&out, "y")
            .split_whitespace()
            .map(|v| v.parse().expect("a float"))
            .collect();
        let want: Vec<f64> = xs.iter().map(|v| v / norm).collect();
        assert_eq!(got.len(), want.len(), "P={p} M={m}");
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g.to_bits(), w.to_bits(), "P={p} M={m}: {got:?} vs {want:?}");
        }
    }
}

#[test]
fn cmmd_scans_prints_the_manual_values() {
    let out = stdout_of("cmmd_scans", &[]);
    let want = [
        ("reduce add to host", "26"),
        ("upward exclusive add", "0 4 13 20"),
        ("downward inclusive add", "26 22 13 6"),
        (
            "segment_bit upward inclusive add, bits 1 0 1 0",
            "4 13 7 13",
        ),
        ("segment_bit upward exclusive max, bits 0 0 1 0", "0 4 0 5"),
        ("start_bit upward exclusive max, bits 0 0 1 0", "0 4 4 5"),
    ];
    for (label, values) in want {
        assert_eq!(field(&out, label), values, "{label}\n{out}");
    }
}

#[test]
fn kumar_matvec_equals_serial() {
    for (p, n) in [(1usize, 5usize), (4, 10), (3, 7), (8, 5), (6, 33)] {
        let out = stdout_of("kumar_matvec", &[&p.to_string(), &n.to_string()]);
        let a = |i: usize, j: usize| ((3 * i + 5 * j) % 7) as i64 - 3;
        let x: Vec<i64> = (0..n).map(|j| (j % 5) as i64 + 1).collect();
        let y: Vec<i64> = (0..n)
            .map(|i| (0..n).map(|j| a(i, j) * x[j]).sum())
            .collect();
        let dot: i64 = x.iter().zip(&y).map(|(a, b)| a * b).sum();
        let got: Vec<i64> = field(&out, "y")
            .split_whitespace()
            .map(|v| v.parse().expect("an integer"))
            .collect();
        assert_eq!(got, y, "P={p} N={n}");
        assert_eq!(field(&out, "x.y"), dot.to_string(), "P={p} N={n}");
    }
}

#[test]
fn picl_sweep_sums_p_p_plus_one_over_two_under_every_topology() {
    for nprocs in [1usize, 5, 8] {
        let out = stdout_of("picl_sweep", &[&nprocs.to_string()]);
        let topologies = [
            "Auto",
            "Hypercube",
            "Full",
            "Ring",
            "GrayRing",
            "BackwardRing",
            "BiRing",
        ];
        let mut want = Vec::new();
        for t in topologies {
            let mut p = 1;
            while p <= nprocs {
                let s = p * (p + 1) / 2;
                want.push(format!("{t} p={p} n=100 sum={s} expected={s}"));
                p *= 2;
            }
        }
        let got: Vec<&str> = out.lines().collect();
        assert_eq!(got, want, "P={nprocs}");
    }
}
