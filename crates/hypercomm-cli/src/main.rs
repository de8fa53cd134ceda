//! The `hypercomm` command: launcher, benchmarks, trace tools and simulator.
//!
//! Available now: `hypercomm run` (the launcher; shm and TCP transports,
//! remote hosts over ssh),
//! `hypercomm bench` (point-to-point, collectives and the grid layer's halo
//! exchange on threads, shm and TCP), `hypercomm trace` (convert, stats,
//! report) and `hypercomm sim` (predict a collective or run a program on a
//! simulated machine, calibrate the model against a real transport).

mod bench;
mod bench_halo;
mod bench_sizes;
mod calibrate;
mod out;
mod progress;
mod run;
mod sim;
mod trace;

use clap::{CommandFactory, Parser, Subcommand};
use out::errln;
use std::ffi::OsString;
use std::process::ExitCode;

/// hypercomm: portable, instrumented message passing.
#[derive(Parser)]
#[command(name = "hypercomm", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Start N ranks of a program as processes (like mpirun).
    #[command(long_about = run::LONG_ABOUT)]
    Run(run::RunArgs),
    /// OSU-style micro-benchmarks (point-to-point, collectives, halo exchange; threads, shm, tcp).
    Bench(bench::BenchArgs),
    /// Convert, summarise and report traces (PICL, Chrome/Perfetto, HTML).
    Trace(trace::TraceArgs),
    /// Predict a collective or run a program on a simulated machine (hypercube, ring, mesh; seed 001's model).
    Sim(sim::SimArgs),
}

/// `hypercomm run -np 4 prog`, as `mpirun` users type it: `-np` among the
/// launcher's own options (before the program) means `--np`, which clap
/// cannot spell as a short option of two letters. A value attached to a
/// short option (`-n4`, `-p=8`) is split off, for `run` and for `sim`
/// alike. The program's own arguments are never touched.
///
/// `run` and `sim` take the program's arguments as they come, dashes and
/// all, so clap would take an option it does not know for the program.
/// Before the program, an unknown option is therefore an error naming it;
/// mpirun's `--oversubscribe` and `--allow-run-as-root` are accepted and
/// mean nothing here (ranks may always outnumber cores, and root may run
/// them). `run --host` starts a host program, not mpirun's host list: used
/// like one, the error says so.
fn mpirun_spelling(mut args: Vec<OsString>) -> Result<Vec<OsString>, String> {
    let Some(sub) = args.get(1).and_then(|a| a.to_str()).map(str::to_owned) else {
        return Ok(args);
    };
    if sub == "bench" {
        // Its rank count is `-n`; `-np N` (`-npN`, `-np=N`), as for
        // `run`, means it too (clap read `-np 2` as `-n p`). Bench takes
        // no program, so no word after it is anyone else's.
        for a in args.iter_mut().skip(2) {
            let t = a.to_string_lossy().into_owned();
            if t == "--" {
                break;
            }
            if let Some(v) = t.strip_prefix("-np") {
                *a = format!("-n{v}").into();
            }
        }
        return Ok(args);
    }
    if sub != "run" && sub != "sim" {
        return Ok(args);
    }
    let mut cli = Cli::command();
    cli.build();
    let Some(cmd) = cli.find_subcommand(&sub) else {
        return Ok(args);
    };
    // `sim` names its operation first (`sim bcast -p 8`, `sim run … PROG`).
    let mut op_seen = sub == "run";
    let mut i = 2;
    while i < args.len() {
        let t = args[i].to_string_lossy().into_owned();
        if sub == "run" && t == "-np" {
            args[i] = "--np".into();
            i += 2;
            continue;
        }
        if sub == "run" && t == "-np=" {
            return Err("-np= has no value: give the number of node processes (-np N)".into());
        }
        if t == "--" {
            break; // the end of the options
        }
        if !t.starts_with('-') || t == "-" {
            if op_seen {
                break; // the program
            }
            op_seen = true;
            i += 1;
            continue;
        }
        if let Some((opt, value)) = attached_value(cmd, &t) {
            // `-n4`, `-n=4`, `-np4`, `-Ha,b`: clap would take the token
            // for the program, whose arguments may start with a dash.
            args[i] = opt.into();
            args.insert(i + 1, value.into());
            i += 2;
            continue;
        }
        let name = t.split_once('=').map_or(t.as_str(), |(n, _)| n);
        let long = name.strip_prefix("--");
        let opt = cmd.get_arguments().find(|a| {
            a.get_long().is_some_and(|l| long == Some(l))
                || a.get_all_aliases()
                    .is_some_and(|v| v.iter().any(|&l| long == Some(l)))
                || a.get_short().is_some_and(|c| name == format!("-{c}"))
        });
        let Some(opt) = opt else {
            if sub == "run" && MPIRUN_NOOPS.contains(&name) {
                args.remove(i);
                continue;
            }
            return Err(format!(
                "unknown option {name} before the program (see hypercomm {sub} --help)"
            ));
        };
        if t.ends_with('=') && opt.get_num_args().is_some_and(|r| r.min_values() > 0) {
            return Err(format!("{t} has no value (see hypercomm {sub} --help)"));
        }
        if sub == "run" && name == "--host" && looks_like_host_list(&args[i + 1..]) {
            return Err(
                "--host starts a host program and needs `--` after its arguments \
                 (`--host HOSTPROG ARGS -- PROG`); the machines to run on are -H/--hosts a,b"
                    .into(),
            );
        }
        i += 1;
        if t.contains('=') {
            continue; // its value attached
        }
        // Step over the option's values.
        match opt.get_num_args() {
            Some(r) if r.max_values() == 1 && r.min_values() == 1 => i += 1,
            Some(r) if r.max_values() > 1 => {
                // `--host`'s words: up to its `--`, dashes and all
                // (`--host P --nx 9 -- prog`), or without one up to the
                // launcher's next option (`--host P -n 2 prog`), where the
                // `--` that clap needs is put.
                match args[i..].iter().position(|a| a == "--") {
                    Some(k) => i += k + 1,
                    None => {
                        let k = args[i..].iter().position(dashed).unwrap_or(args.len() - i);
                        args.insert(i + k, "--".into());
                        i += k + 1;
                    }
                }
            }
            _ => {}
        }
    }
    Ok(args)
}

fn dashed(a: &OsString) -> bool {
    a.to_string_lossy().starts_with('-')
}

/// Whether the words after `run --host` leave no node program: nothing
/// ends the host program's arguments (no `--`, no option after them), as
/// in mpirun's `--host a,b prog`. (With an option after it, `--host a,b
/// -n 2 prog`, the launcher itself explains when no program `a,b` exists.)
fn looks_like_host_list(rest: &[OsString]) -> bool {
    !rest.iter().any(|a| a == "--" || dashed(a))
}

/// mpirun options that `hypercomm run` accepts and that change nothing.
const MPIRUN_NOOPS: [&str; 2] = ["--oversubscribe", "--allow-run-as-root"];

/// A launcher option with its one value attached (`-n4`, `-n=4`, `-np4`,
/// `-np=4`, `-Ha,b`, `-xNAME=V`), split into the option and the value.
fn attached_value(cmd: &clap::Command, t: &str) -> Option<(String, String)> {
    if let Some(v) = t.strip_prefix("-np") {
        let v = v.strip_prefix('=').unwrap_or(v);
        return (!v.is_empty()).then(|| ("--np".to_string(), v.to_string()));
    }
    let rest = t.strip_prefix('-').filter(|r| !r.starts_with('-'))?;
    let mut chars = rest.chars();
    let c = chars.next()?;
    let v = chars.as_str();
    let v = v.strip_prefix('=').unwrap_or(v);
    let one_value = cmd.get_arguments().any(|a| {
        a.get_short() == Some(c)
            && a.get_num_args()
                .is_some_and(|r| r.min_values() == 1 && r.max_values() == 1)
    });
    (one_value && !v.is_empty()).then(|| (format!("-{c}"), v.to_string()))
}

fn main() -> ExitCode {
    let args = match mpirun_spelling(std::env::args_os().collect()) {
        Ok(a) => a,
        Err(e) => {
            let sub = std::env::args().nth(1).unwrap_or_default();
            errln!("hypercomm {sub}: {e}");
            return ExitCode::from(2);
        }
    };
    let cli = Cli::parse_from(args);
    match cli.command {
        Command::Run(a) => match run::main(a) {
            Ok(code) => ExitCode::from(code.clamp(0, 255) as u8),
            Err(e) => {
                errln!("hypercomm run: {e}");
                ExitCode::from(2)
            }
        },
        Command::Trace(a) => match trace::main(a) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                errln!("hypercomm trace: {e}");
                ExitCode::FAILURE
            }
        },
        Command::Sim(a) => match sim::main(a) {
            Ok(code) => code,
            Err(e) => {
                errln!("hypercomm sim: {e}");
                ExitCode::from(2)
            }
        },
        Command::Bench(a) => match bench::main(a) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                errln!("hypercomm bench: {e}");
                ExitCode::FAILURE
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::mpirun_spelling;
    use std::ffi::OsString;

    fn spell(line: &str) -> String {
        let args: Vec<OsString> = line.split(' ').map(OsString::from).collect();
        let out: Vec<String> = mpirun_spelling(args)
            .unwrap()
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect();
        out.join(" ")
    }

    #[test]
    fn np_before_the_program_is_the_node_count() {
        for (line, want) in [
            ("hc run -np 4 ./p", "hc run --np 4 ./p"),
            (
                "hc run --no-prefix -np 4 ./p -np 2",
                "hc run --no-prefix --np 4 ./p -np 2",
            ),
            (
                "hc run --hosts a,b --transport=tcp -np 2 ./p",
                "hc run --hosts a,b --transport=tcp --np 2 ./p",
            ),
            (
                "hc run --host ./h a -- -np 3 ./p",
                "hc run --host ./h a -- --np 3 ./p",
            ),
            // Without `--`, the host program's words end at the next option.
            (
                "hc run --host ./h -np 3 ./p",
                "hc run --host ./h -- --np 3 ./p",
            ),
            // With it, they may start with dashes.
            (
                "hc run -n 2 --host ./h --nx 17 -- -n2 ./p --nx 17",
                "hc run -n 2 --host ./h --nx 17 -- -n 2 ./p --nx 17",
            ),
            ("hc run -n 2 ./p -np 3", "hc run -n 2 ./p -np 3"),
            (
                "hc run -H a,b -f hf -np 2 ./p",
                "hc run -H a,b -f hf --np 2 ./p",
            ),
            ("hc run --timeout 5 ./p -np", "hc run --timeout 5 ./p -np"),
            ("hc bench -np 2", "hc bench -n 2"),
            ("hc bench latency -np4", "hc bench latency -n4"),
            ("hc bench -np=3 bw", "hc bench -n=3 bw"),
            ("hc run -n4 ./p -n5", "hc run -n 4 ./p -n5"),
            ("hc run -n=4 ./p", "hc run -n 4 ./p"),
            ("hc run -np4 ./p", "hc run --np 4 ./p"),
            ("hc run -np=4 ./p", "hc run --np 4 ./p"),
            (
                "hc run -Ha,b -xK=V -fhf -n2 ./p -x",
                "hc run -H a,b -x K=V -f hf -n 2 ./p -x",
            ),
            ("hc run -n 2 ./p -n4", "hc run -n 2 ./p -n4"),
            (
                "hc run --oversubscribe -n 3 ./p --oversubscribe",
                "hc run -n 3 ./p --oversubscribe",
            ),
            ("hc run -n 2 --allow-run-as-root ./p", "hc run -n 2 ./p"),
            ("hc sim bcast -p8 -m=10", "hc sim bcast -p 8 -m 10"),
            ("hc sim -p=8 bcast", "hc sim -p 8 bcast"),
            (
                "hc sim run -p8 --topology ring ./p -p4",
                "hc sim run -p 8 --topology ring ./p -p4",
            ),
            (
                "hc sim run --switch -1 -p2 ./p",
                "hc sim run --switch -1 -p 2 ./p",
            ),
        ] {
            assert_eq!(spell(line), want, "{line}");
        }
    }

    #[test]
    fn unknown_options_before_the_program_are_named() {
        let err = |line: &str| {
            let args: Vec<OsString> = line.split(' ').map(OsString::from).collect();
            mpirun_spelling(args).unwrap_err()
        };
        let e = err("hc run -n 2 --bind-to core ./p");
        assert!(e.contains("unknown option --bind-to"), "{e}");
        assert_eq!(
            spell("hc run -n 2 --machinefile f ./p"),
            "hc run -n 2 --machinefile f ./p"
        );
        let e = err("hc sim bcast --np 8");
        assert!(e.contains("unknown option --np"), "{e}");
        let e = err("hc run -n 2 --host a,b ./p");
        assert!(e.contains("-H/--hosts"), "{e}");
        let e = err("hc run -n 2 --host ./h ./p");
        assert!(e.contains("needs `--`"), "{e}");
        for (line, t) in [
            ("hc run -np= ./p", "-np="),
            ("hc run -n= ./p", "-n="),
            ("hc run --timeout= ./p", "--timeout="),
            ("hc sim bcast -p= 8", "-p="),
        ] {
            let e = err(line);
            assert!(e.contains(&format!("{t} has no value")), "{line}: {e}");
        }
        // A host program ended by `--` or by the next option is fine.
        for ok in [
            "hc run -n 2 --host ./h a -- ./p",
            "hc run --host ./h -n2 ./p",
        ] {
            let args: Vec<OsString> = ok.split(' ').map(OsString::from).collect();
            assert!(mpirun_spelling(args).is_ok(), "{ok}");
        }
        assert_eq!(
            spell("hc run --host ./h -n2 ./p"),
            "hc run --host ./h -- -n 2 ./p"
        );
        // The program's own options are its business.
        assert!(mpirun_spelling(
            "hc run -n 2 ./p --bind-to x"
                .split(' ')
                .map(OsString::from)
                .collect()
        )
        .is_ok());
    }
}
