//! The start-up order (link/start-up-first, the linker driver .cargo/config.toml names): a
//! real C compiler, rust-lld and nm link a small program whose functions carry v0-style
//! names with made-up crate hashes, and the functions a key list names come first, in the
//! list's order, whatever their hashes; a debug build and a list that names nothing link as
//! the plain `cc` would; a stripped program stays stripped.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::skip::{on_path, skip};

const WRAPPER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/link/start-up-first");

/// Two start-up functions (in the source after the rest, in the opposite order to the list)
/// among ten others, each big enough to be told apart by its address.
fn program_source() -> String {
    let mut source = String::from("#include <stdio.h>\n");
    let body = |name: &str| {
        format!(
            "__attribute__((noinline)) int {name}(int x) {{ volatile int a[64]; \
             for (int i = 0; i < 64; i++) a[i] = x * i; int s = 0; \
             for (int i = 0; i < 64; i++) s += a[i] ^ (s >> 3); return s; }}\n"
        )
    };
    for i in 0..10 {
        source.push_str(&body(&format!("other{i}")));
    }
    source.push_str(&body("_RNvNtCsQq7Zw1_5agent3cli4beta"));
    // A local copy as LLVM names it: the key drops the suffix.
    source.push_str(
        "int gamma(int x) __asm__(\"_RNvCsX9yA2b_5agent5gamma.llvm.7\");\n\
         __attribute__((noinline)) int gamma(int x) { return x * 3 + 1; }\n",
    );
    source.push_str(&body("_RNvCsX9yA2b_5agent5alpha"));
    source.push_str(
        "int main(void) { int s = 0;\n\
         s += _RNvCsX9yA2b_5agent5alpha(1); s += _RNvNtCsQq7Zw1_5agent3cli4beta(2);\n\
         s += gamma(3);\n",
    );
    for i in 0..10 {
        source.push_str(&format!("s += other{i}({i});\n"));
    }
    source.push_str("printf(\"ran %d\\n\", s != 12345); return 0; }\n");
    source
}

/// The keys: the two functions with other hashes (as another profile or compiler gives
/// them), `alpha` first, and one function the program does not have.
const KEYS: &str = "# a comment\n_RNvCs_5agent5alpha\n_RNvCs_5agent7missing\n\
                    _RNvNtCs_5agent3cli4beta\n_RNvCs_5agent5gamma\n";

/// rustc's own way of linking on this target: the C compiler driver with rust-lld.
fn lld_args() -> Option<Vec<String>> {
    let sysroot = Command::new("rustc")
        .args(["--print", "sysroot"])
        .output()
        .ok()?;
    let sysroot = String::from_utf8(sysroot.stdout).ok()?.trim().to_string();
    let gcc_ld = Path::new(&sysroot).join("lib/rustlib/x86_64-unknown-linux-gnu/bin/gcc-ld");
    gcc_ld.join("ld.lld").exists().then(|| {
        vec![
            format!("-B{}", gcc_ld.display()),
            "-fuse-ld=lld".to_string(),
        ]
    })
}

struct Setup {
    dir: tempfile::TempDir,
    object: PathBuf,
    keys: PathBuf,
    lld: Vec<String>,
}

fn setup() -> Option<Setup> {
    if !cfg!(all(target_os = "linux", target_arch = "x86_64")) {
        skip("the start-up order is linked on x86_64 Linux only");
        return None;
    }
    if !on_path("cc") || !on_path("nm") {
        skip("needs cc and nm (binutils)");
        return None;
    }
    let Some(lld) = lld_args() else {
        skip("this toolchain has no rust-lld (gcc-ld/ld.lld)");
        return None;
    };
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("program.c");
    std::fs::write(&source, program_source()).unwrap();
    let object = dir.path().join("program.o");
    let compiled = Command::new("cc")
        .args(["-c", "-O1", "-fPIE", "-ffunction-sections", "-o"])
        .arg(&object)
        .arg(&source)
        .status()
        .unwrap();
    assert!(compiled.success(), "cc -c failed");
    let keys = dir.path().join("start-up.keys");
    std::fs::write(&keys, KEYS).unwrap();
    Some(Setup {
        dir,
        object,
        keys,
        lld,
    })
}

impl Setup {
    /// Link through the wrapper into `<dir>/<profile>/deps/agent-<hash>`, as rustc would.
    fn link(&self, profile: &str, extra: &[&str]) -> PathBuf {
        let deps = self.dir.path().join(profile).join("deps");
        std::fs::create_dir_all(&deps).unwrap();
        let out = deps.join("agent-0123456789abcdef");
        let status = Command::new(WRAPPER)
            .env("AGENT_START_UP_KEYS", &self.keys)
            .env_remove("AGENT_NO_START_UP_ORDER")
            .args(&self.lld)
            .arg("-pie")
            .arg(&self.object)
            .arg("-o")
            .arg(&out)
            .args(extra)
            .status()
            .unwrap();
        assert!(status.success(), "the wrapper's link failed");
        let ran = Command::new(&out).output().unwrap();
        assert_eq!(String::from_utf8_lossy(&ran.stdout), "ran 1\n");
        assert!(
            !out.with_extension("start-up-order").exists()
                && !deps.join("agent-0123456789abcdef.start-up-order").exists(),
            "the ordering file is left behind"
        );
        out
    }
}

/// The program's functions by address.
fn functions_in_order(program: &Path) -> Vec<String> {
    let listed = Command::new("nm")
        .args(["--defined-only", "--numeric-sort"])
        .arg(program)
        .output()
        .unwrap();
    String::from_utf8_lossy(&listed.stdout)
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            (fields.len() == 3 && fields[1].eq_ignore_ascii_case("t"))
                .then(|| fields[2].to_string())
        })
        .filter(|name| name.starts_with("other") || name.starts_with("_R"))
        .collect()
}

#[test]
fn the_listed_functions_come_first_in_the_lists_order_whatever_their_hashes() {
    let Some(setup) = setup() else { return };
    let program = setup.link("release", &[]);
    let order = functions_in_order(&program);
    assert_eq!(order.len(), 13, "{order:?}");
    assert_eq!(
        order[..3],
        [
            "_RNvCsX9yA2b_5agent5alpha".to_string(),
            "_RNvNtCsQq7Zw1_5agent3cli4beta".to_string(),
            "_RNvCsX9yA2b_5agent5gamma.llvm.7".to_string(),
        ],
        "{order:?}"
    );
}

#[test]
fn a_debug_build_and_a_list_that_names_nothing_link_as_usual() {
    let Some(setup) = setup() else { return };
    let debug = functions_in_order(&setup.link("debug", &[]));
    assert_eq!(debug[0], "other0", "{debug:?}");
    assert_eq!(debug[10], "_RNvNtCsQq7Zw1_5agent3cli4beta", "{debug:?}");
    assert_eq!(debug[12], "_RNvCsX9yA2b_5agent5alpha", "{debug:?}");
    std::fs::write(&setup.keys, "_RNvCs_5agent7missing\n").unwrap();
    let unlisted = functions_in_order(&setup.link("release", &[]));
    assert_eq!(unlisted, debug);
}

#[test]
fn a_stripped_program_is_ordered_and_stays_stripped() {
    if !on_path("objcopy") {
        skip("needs objcopy (binutils)");
        return;
    }
    let Some(setup) = setup() else { return };
    let stripped = setup.link("dist", &["-Wl,--strip-all"]);
    assert!(
        functions_in_order(&stripped).is_empty(),
        "the program kept its symbols"
    );
    let ordered = code_of(&stripped);
    // Its code is the unstripped ordered program's, not the plain link's.
    assert_eq!(ordered, code_of(&setup.link("release", &[])));
    assert_ne!(ordered, code_of(&setup.link("debug", &["-Wl,--strip-all"])));
    // With nothing to order, the first link (which kept the symbols) is not the result.
    std::fs::write(&setup.keys, "_RNvCs_5agent7missing\n").unwrap();
    let unordered = setup.link("dist", &["-Wl,--strip-all"]);
    assert!(functions_in_order(&unordered).is_empty(), "not stripped");
}

/// The bytes of a program's `.text`.
fn code_of(program: &Path) -> Vec<u8> {
    let out = program.with_extension("text");
    let copied = Command::new("objcopy")
        .args(["-O", "binary", "--only-section=.text"])
        .arg(program)
        .arg(&out)
        .status()
        .unwrap();
    assert!(copied.success(), "objcopy failed");
    std::fs::read(out).unwrap()
}

/// `awk -f link/start-up.awk` in `mode` with the variables `vars`, `input` on its standard
/// input.
fn start_up_awk(mode: &str, vars: &[(&str, &str)], input: &str) -> String {
    use std::io::Write;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/link/start-up.awk");
    let mut command = Command::new("awk");
    command.args(["-v", &format!("mode={mode}")]);
    for (name, value) in vars {
        command.args(["-v", &format!("{name}={value}")]);
    }
    let mut child = command
        .args(["-f", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "awk failed");
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn a_key_leaves_out_the_hashes_back_references_and_llvm_suffixes_and_nothing_else() {
    if !on_path("awk") {
        skip("needs awk");
        return;
    }
    let names = "\
_RNvXNtNtCskcthzA1Vvys_5agent5tools4bashNtB2_8BashToolNtB4_4Tool4name.llvm.1797
_RNvXNtNtCsOTHERhash9_5agent5tools4bashNtB3_8BashToolNtB5_4Tool4name
_RNvXNtNtCskcthzA1Vvys_5agent5tools4bashNtB2_8BoatToolNtB4_4Tool4name
ts_parser_new.cold
ts_parser_new
";
    assert_eq!(
        start_up_awk("keys", &[], names),
        "\
_RNvXNtNtCs_5agent5tools4bashNtB_8BashToolNtB_4Tool4name
_RNvXNtNtCs_5agent5tools4bashNtB_8BoatToolNtB_4Tool4name
ts_parser_new
"
    );
}

#[test]
fn the_ordering_file_follows_the_list_and_is_empty_for_a_program_without_v0_names() {
    if !on_path("awk") {
        skip("needs awk");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("keys");
    std::fs::write(
        &keys,
        "# list\n_RNvCs_5agent4main\nts_parser_new\n_RNvCs_5agent3run\n",
    )
    .unwrap();
    let keys_path = &keys.display().to_string();
    let nm = "\
0000000000001000 T _RNvCsAAA_5agent3run
0000000000002000 t _RNvCsAAA_5agent3run.llvm.42
0000000000003000 T ts_parser_new
0000000000004000 T _RNvCsAAA_5agent4main
0000000000005000 D _RNvCsAAA_5agent4data
0000000000006000 T _RNvCsAAA_5agent5other
";
    assert_eq!(
        start_up_awk("order", &[("keys", keys_path)], nm),
        "\
_RNvCsAAA_5agent4main
ts_parser_new
_RNvCsAAA_5agent3run
_RNvCsAAA_5agent3run.llvm.42
"
    );
    let legacy =
        "0000000000001000 T _ZN5agent4main17h0123456789abcdefE\n0000000000003000 T ts_parser_new\n";
    assert_eq!(start_up_awk("order", &[("keys", keys_path)], legacy), "");
}

#[test]
fn the_page_faults_on_the_programs_code_name_their_functions() {
    if !on_path("awk") {
        skip("needs awk");
        return;
    }
    // `perf script -F pid,addr,ip,sym,dso --no-demangle` of page faults: the faulting address
    // with its symbol and (dso), then the instruction's.
    let faults = "\
 4242     55d000001000 _RNvCsAAA_5agent4main (/t/deps/agent-faults)     55d000001000 _RNvCsAAA_5agent4main (/t/deps/agent-faults)
 4242     55d000400010 [unknown] (/t/deps/agent-faults)     55d000002000 _RNvCsAAA_5agent3run (/t/deps/agent-faults)
 4242     55d000003000 _RNvCsAAA_5agent4wide (/t/deps/agent-faults)     55d000002ffe _RNvCsAAA_5agent4wide (/t/deps/agent-faults)
 4250     55d000005000 ts_parser_new (/t/deps/agent-faults)     55d000005000 ts_parser_new (/t/deps/agent-faults)
 4242     7f0000001000 memcpy (/usr/lib/libc.so.6)     7f0000001000 memcpy (/usr/lib/libc.so.6)
 4242     55d000006000 [unknown] (/t/deps/agent-faults)     55d000006000 [unknown] (/t/deps/agent-faults)
 4242     7ffc00001000 [unknown] ([stack])     55d000007000 _RNvCsAAA_5agent4deep (/t/deps/agent-faults)
";
    // Code: at the instruction, on the page after an instruction that straddles two, in a
    // forked process of the program too. Not: data the program reads, another library's
    // code, an address without a symbol.
    assert_eq!(
        start_up_awk("faults", &[("program", "(/t/deps/agent-faults)")], faults),
        "\
_RNvCsAAA_5agent4main
_RNvCsAAA_5agent4wide
ts_parser_new
"
    );
}
