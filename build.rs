//! Build script: links the `agent` program with packed relative relocations
//! (`-z pack-relative-relocs`, the DT_RELR format) where this machine's linker and C library
//! both support them. A position-independent Rust program carries a relocation for every
//! pointer in its read-only data (vtables, string tables): in the classic format 24 bytes
//! each, which the dynamic loader reads through at every start — a quarter of a million of
//! them here, several megabytes of file that `agent --version` paged in before printing a
//! line (docs/benchmarks.md, "Packed relocations"). DT_RELR encodes them in a bitmap, a few
//! kilobytes.
//!
//! The format needs GNU ld 2.38 (or lld 15, mold) and glibc 2.36 at run time; a program
//! linked with it refuses to start on an older glibc. So it is used only when a small
//! program linked the same way here (the same linker driver, the same link arguments)
//! runs, and not when `AGENT_NO_PACKED_RELOCS` is set (a program built to be copied to an
//! older system).
//! Written by hand because no crate probes link flags this way (the `cc` crate compiles
//! C, it does not run what it built).
//!
//! It also makes cargo link the program again when the start-up order's files or switches
//! change (link/start-up-first, the linker .cargo/config.toml names).

use std::path::PathBuf;
use std::process::{Command, Stdio};

const FLAG: &str = "-Wl,-z,pack-relative-relocs";

/// A program with relative relocations: a table of pointers in read-only data.
const PROBE: &str = "static const char *const names[] = {\"relr\", \"probe\"};\n\
                     int main(void) { return names[1][0] == 'p' ? 0 : 1; }\n";

/// Set (to anything but empty) for a program that must start on an older glibc than the
/// one it is built on (README, "Install").
const OPT_OUT: &str = "AGENT_NO_PACKED_RELOCS";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    println!("cargo:rerun-if-env-changed={OPT_OUT}");
    // The start-up order (link/start-up-first, the linker .cargo/config.toml names) is decided
    // at the link, which cargo repeats only when something it tracks changed: a new list or
    // switch must relink the program.
    for file in ["start-up-first", "start-up.awk", "start-up.keys"] {
        println!("cargo:rerun-if-changed=link/{file}");
    }
    println!("cargo:rerun-if-env-changed=AGENT_NO_START_UP_ORDER");
    println!("cargo:rerun-if-env-changed=AGENT_LINKER");
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let native = var("HOST") == var("TARGET");
    if var("CARGO_CFG_TARGET_OS") != "linux"
        || var("CARGO_CFG_TARGET_ENV") != "gnu"
        || !native
        || !var(OPT_OUT).is_empty()
    {
        return;
    }
    if links_and_runs() {
        println!("cargo:rustc-link-arg-bins={FLAG}");
    }
}

/// Whether the probe, linked with the flag by the linker Rust links with, starts here.
fn links_and_runs() -> bool {
    let Some(out_dir) = std::env::var_os("OUT_DIR").map(PathBuf::from) else {
        return false;
    };
    let link = Link::from_rustflags();
    if link.other_flavor {
        // Not a C compiler driver: `-Wl,` means nothing to it.
        return false;
    }
    let source = out_dir.join("relr_probe.c");
    let program = out_dir.join("relr_probe");
    if std::fs::write(&source, PROBE).is_err() {
        return false;
    }
    // The C compiler driver Rust links through on Linux, unless the build names another.
    let linker = link
        .linker
        .or_else(|| std::env::var("RUSTC_LINKER").ok())
        .unwrap_or_else(|| "cc".to_string());
    let linked = Command::new(linker)
        .args(&link.args)
        .args(["-fPIE", "-pie", FLAG, "-Wl,--fatal-warnings", "-o"])
        .arg(&program)
        .arg(&source)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    linked
        && Command::new(&program)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
}

/// How the build's RUSTFLAGS link: the probe is linked as the program will be.
#[derive(Default)]
struct Link {
    /// `-C link-arg=…` and `-C link-args=…` (e.g. `-fuse-ld=mold`).
    args: Vec<String>,
    /// `-C linker=…`.
    linker: Option<String>,
    /// `-C linker-flavor=…` naming something other than a C compiler driver.
    other_flavor: bool,
}

impl Link {
    fn from_rustflags() -> Link {
        let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
        let mut link = Link::default();
        let mut flags = flags.split('\x1f').filter(|f| !f.is_empty());
        while let Some(flag) = flags.next() {
            // `-C opt`, `-Copt`, `--codegen opt`, `--codegen=opt`.
            let option = match flag {
                "-C" | "--codegen" => flags.next(),
                _ => flag
                    .strip_prefix("--codegen=")
                    .or_else(|| flag.strip_prefix("-C")),
            };
            let Some((name, value)) = option.and_then(|o| o.split_once('=')) else {
                continue;
            };
            match name {
                "link-arg" => link.args.push(value.to_string()),
                "link-args" => link
                    .args
                    .extend(value.split_whitespace().map(str::to_string)),
                "linker" => link.linker = Some(value.to_string()),
                // `gcc`, `gnu-cc`, `gnu-lld-cc`: a C compiler driver.
                "linker-flavor" => link.other_flavor = value != "gcc" && !value.ends_with("-cc"),
                _ => {}
            }
        }
        link
    }
}
