//! Slurm host lists (`SLURM_STEP_NODELIST`, `SLURM_NODELIST`) expanded to
//! host names, as `scontrol show hostnames` does:
//!
//! * entries are separated by commas outside brackets:
//!   `a[1-3,7],b-[01-02]` → `a1 a2 a3 a7 b-01 b-02`;
//! * a bracket group holds comma-separated numbers and ranges `lo-hi`; a
//!   range keeps the width of its lower bound (`[08-10]` → `08 09 10`,
//!   `[8-10]` → `8 9 10`);
//! * a name may hold several groups, the first varying slowest:
//!   `r[1-2]n[1-2]` → `r1n1 r1n2 r2n1 r2n2`.
//!
//! Malformed text (an unclosed or nested bracket, an empty group, a range
//! running backwards, a non-digit inside brackets) is an error that quotes
//! the entry. No crate covers this syntax with a maintained parser (the
//! `hostlist` crate returns `&'static str` errors and pulls in clap 2 and
//! nom 6), so this is ours, checked against generated lists.

/// The most host names one list may expand to (a typo such as
/// `n[0-9999999999]` is an error, not an allocation of gigabytes).
pub(crate) const MAX_HOSTS: usize = 1 << 20;

/// Expand a Slurm host list to its host names, in order.
pub(crate) fn expand(list: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for entry in split_top(list.trim())? {
        let entry = entry.trim();
        if entry.is_empty() {
            return Err(format!("empty entry in the host list {list:?}"));
        }
        expand_entry(entry, &mut out).map_err(|e| format!("{e} in {entry:?}"))?;
        if out.len() > MAX_HOSTS {
            return Err(format!(
                "the host list {list:?} names more than {MAX_HOSTS} hosts"
            ));
        }
    }
    Ok(out)
}

/// The entries of a list: split at commas outside brackets.
fn split_top(list: &str) -> Result<Vec<&str>, String> {
    let (mut depth, mut start, mut parts) = (0usize, 0, Vec::new());
    for (i, c) in list.char_indices() {
        match c {
            '[' if depth > 0 => return Err(format!("nested '[' in the host list {list:?}")),
            '[' => depth = 1,
            ']' if depth == 0 => return Err(format!("']' without '[' in the host list {list:?}")),
            ']' => depth = 0,
            ',' if depth == 0 => {
                parts.push(&list[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth > 0 {
        return Err(format!("unclosed '[' in the host list {list:?}"));
    }
    parts.push(&list[start..]);
    Ok(parts)
}

/// Append the names of one entry (no comma outside its brackets).
fn expand_entry(entry: &str, out: &mut Vec<String>) -> Result<(), String> {
    // The names so far; each group multiplies them.
    let mut names = vec![String::new()];
    let mut rest = entry;
    while let Some(open) = rest.find('[') {
        let close = open + rest[open..].find(']').ok_or("unclosed '['")?;
        let literal = &rest[..open];
        let values = group(&rest[open + 1..close])?;
        if names.len().saturating_mul(values.len()) > MAX_HOSTS {
            return Err(format!("more than {MAX_HOSTS} hosts"));
        }
        names = names
            .iter()
            .flat_map(|n| values.iter().map(move |v| format!("{n}{literal}{v}")))
            .collect();
        rest = &rest[close + 1..];
    }
    out.extend(names.into_iter().map(|n| n + rest));
    Ok(())
}

/// The values of one bracket group's inside (`1-3,07`).
fn group(inner: &str) -> Result<Vec<String>, String> {
    let mut values = Vec::new();
    for item in inner.split(',') {
        let item = item.trim();
        let (lo, hi) = item.split_once('-').unwrap_or((item, item));
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(lo) || !digits(hi) {
            return Err(format!("[{inner}]: {item:?} is not a number or a range"));
        }
        let bad = |s: &str| format!("[{inner}]: {s} is too large");
        let a: u64 = lo.parse().map_err(|_| bad(lo))?;
        let b: u64 = hi.parse().map_err(|_| bad(hi))?;
        if b < a {
            return Err(format!("[{inner}]: the range {item} runs backwards"));
        }
        if (b - a) as usize >= MAX_HOSTS {
            return Err(format!(
                "[{inner}]: {item} names more than {MAX_HOSTS} hosts"
            ));
        }
        let width = lo.len();
        values.extend((a..=b).map(|v| format!("{v:0width$}")));
    }
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn names(list: &str) -> Vec<String> {
        expand(list).unwrap_or_else(|e| panic!("{list:?}: {e}"))
    }

    #[test]
    fn the_forms_slurm_writes() {
        assert_eq!(names("localhost"), ["localhost"]);
        assert_eq!(
            names("a[1-3,7],b-[01-02]"),
            ["a1", "a2", "a3", "a7", "b-01", "b-02"]
        );
        assert_eq!(names("node[07-10,12],gpu3")[..2], ["node07", "node08"]);
        assert_eq!(names("node[8-10]"), ["node8", "node9", "node10"]);
        assert_eq!(names("n[3,5]-ib"), ["n3-ib", "n5-ib"]);
        assert_eq!(names("r[1-2]n[1-2]"), ["r1n1", "r1n2", "r2n1", "r2n2"]);
        assert_eq!(names(" a , b "), ["a", "b"]);
    }

    #[test]
    fn malformed_lists_are_errors_naming_the_text() {
        for (list, says) in [
            ("", "empty entry"),
            ("a,,b", "empty entry"),
            ("a[1-3", "unclosed '['"),
            ("a1-3]", "']' without '['"),
            ("a[1[2]]", "nested '['"),
            ("a[]", "\"\" is not a number or a range"),
            ("a[x]", "\"x\" is not a number or a range"),
            ("a[1-]", "\"1-\" is not a number or a range"),
            ("a[5-3]", "the range 5-3 runs backwards"),
            ("a[0-99999999999]", "names more than"),
            ("a[0-1023]b[0-1023]c[0-1]", "more than"),
        ] {
            let e = expand(list).expect_err(list);
            assert!(e.contains(says), "{list:?}: {e}");
            if !list.is_empty() {
                let entry = list.split(",,").next().unwrap();
                assert!(e.contains(entry), "{list:?} not named: {e}");
            }
        }
    }

    /// One group of a generated entry: (lo, hi, padded width) ranges.
    type Group = Vec<(u64, u64, usize)>;

    fn arb_group() -> impl Strategy<Value = Group> {
        prop::collection::vec(
            (0u64..200, 0u64..6, 0usize..3).prop_map(|(lo, len, pad)| {
                let width = lo.to_string().len() + pad;
                (lo, lo + len, width)
            }),
            1..4,
        )
    }

    /// A generated entry: literal pieces around groups.
    fn arb_entry() -> impl Strategy<Value = (Vec<String>, Vec<Group>)> {
        (0usize..3).prop_flat_map(|groups| {
            (
                prop::collection::vec("[a-z][a-z0-9-]{0,3}", groups + 1),
                prop::collection::vec(arb_group(), groups),
            )
        })
    }

    /// The text of a generated entry.
    fn render(lits: &[String], groups: &[Group]) -> String {
        let mut s = lits[0].clone();
        for (g, lit) in groups.iter().zip(&lits[1..]) {
            let items: Vec<String> = g
                .iter()
                .map(|&(lo, hi, w)| {
                    if lo == hi {
                        format!("{lo:0w$}")
                    } else {
                        format!("{lo:0w$}-{hi:0w$}")
                    }
                })
                .collect();
            s += &format!("[{}]{lit}", items.join(","));
        }
        s
    }

    /// Its names, by nested loops over the generated numbers.
    fn by_hand(lits: &[String], groups: &[Group]) -> Vec<String> {
        let mut names = vec![lits[0].clone()];
        for (g, lit) in groups.iter().zip(&lits[1..]) {
            let mut next = Vec::new();
            for n in &names {
                for &(lo, hi, w) in g {
                    for v in lo..=hi {
                        let mut digits = v.to_string();
                        while digits.len() < w {
                            digits.insert(0, '0');
                        }
                        next.push(format!("{n}{digits}{lit}"));
                    }
                }
            }
            names = next;
        }
        names
    }

    proptest! {
        #[test]
        fn generated_lists_expand_to_their_names(
            entries in prop::collection::vec(arb_entry(), 1..4)
        ) {
            let text: Vec<String> = entries.iter().map(|(l, g)| render(l, g)).collect();
            let want: Vec<String> = entries.iter().flat_map(|(l, g)| by_hand(l, g)).collect();
            prop_assert_eq!(expand(&text.join(",")).unwrap(), want);
        }

        #[test]
        fn plain_names_are_themselves(
            hosts in prop::collection::vec("[a-z][a-z0-9.-]{0,8}", 1..6)
        ) {
            prop_assert_eq!(expand(&hosts.join(",")).unwrap(), hosts);
        }
    }
}
