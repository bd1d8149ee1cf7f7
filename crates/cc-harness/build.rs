//! Compiles every bpf/cc/<name>.bpf.c, unchanged, for the host (and once more with
//! -DCCA_PAPER as "<name>:paper" when the source has a paper variant) (clang, through the `cc`
//! crate) against the running kernel's vmlinux.h, so struct tcp_sock and friends have
//! exactly the kernel's layout; shim/ stands in for libbpf's bpf_helpers.h and
//! bpf_tracing.h (SEC and BPF_PROG become plain C, helpers become calls into
//! csrc/model.c). Each algorithm is compiled through a two-line wrapper that renames the
//! three globals every algorithm shares through cca_common.h (_license and the maps
//! cca_guard and cca_prr_state), so all of them link into one library; algos.c lists
//! them (name, ops, guard map) for the model. csrc/common.c exports cca_common.h's
//! helpers for tests/common.rs, built the same way; csrc/bbr_view.c reads BBR's model for
//! tests/bbr*.rs.
//! vmlinux.h: $CCARENA_VMLINUX_H, else build/vmlinux.h (made by `make bpf`), else
//! generated here with `bpftool btf dump` from /sys/kernel/btf/vmlinux (like crates/trace).
//! $CCARENA_CC_DIR, when set, replaces bpf/cc as the source directory: the C mutation
//! runner (tools/mutants/cc_mutants.py) points it at a copy holding one mutant, so the real
//! tree is never edited.
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

fn vmlinux_dir(root: &Path, out: &Path) -> PathBuf {
    println!("cargo:rerun-if-env-changed=CCARENA_VMLINUX_H");
    if let Ok(p) = std::env::var("CCARENA_VMLINUX_H") {
        return Path::new(&p).parent().unwrap().to_path_buf();
    }
    let built = root.join("build/vmlinux.h");
    if built.exists() {
        println!("cargo:rerun-if-changed={}", built.display());
        return root.join("build");
    }
    let dump = Command::new("bpftool")
        .args(["btf", "dump", "file", "/sys/kernel/btf/vmlinux", "format", "c"])
        .output()
        .expect("ccarena-cc-harness build: run bpftool (needed for vmlinux.h; or run `make bpf` first)");
    assert!(
        dump.status.success(),
        "ccarena-cc-harness build: bpftool btf dump failed: {}",
        String::from_utf8_lossy(&dump.stderr)
    );
    std::fs::write(out.join("vmlinux.h"), dump.stdout).unwrap();
    out.to_path_buf()
}

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let root = manifest.parent().unwrap().parent().unwrap().to_path_buf();
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    println!("cargo:rerun-if-env-changed=CCARENA_CC_DIR");
    let cc_dir = match std::env::var_os("CCARENA_CC_DIR") {
        Some(d) => PathBuf::from(d),
        None => root.join("bpf/cc"),
    };
    let vmlinux = vmlinux_dir(&root, &out);
    println!("cargo:rerun-if-changed={}", cc_dir.display());
    for f in ["shim/bpf/bpf_helpers.h", "shim/bpf/bpf_tracing.h", "csrc/model.c", "csrc/common.c", "csrc/bbr_view.c"] {
        println!("cargo:rerun-if-changed={}", manifest.join(f).display());
    }
    println!("cargo:rerun-if-env-changed=BPF_CLANG");

    let mut names: Vec<String> = std::fs::read_dir(&cc_dir)
        .unwrap_or_else(|e| panic!("ccarena-cc-harness build: read {}: {e}", cc_dir.display()))
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.strip_suffix(".bpf.c")).map(String::from))
        .collect();
    names.sort();
    assert!(!names.is_empty(), "ccarena-cc-harness build: no *.bpf.c in {}", cc_dir.display());

    let mut build = cc::Build::new();
    build
        .compiler(std::env::var("BPF_CLANG").unwrap_or_else(|_| "clang".into()))
        .std("gnu11")
        .opt_level(1)
        .warnings(false)
        .extra_warnings(false)
        .define("BPF_NO_PRESERVE_ACCESS_INDEX", None)
        .define("CCA_HARNESS", None)
        .include(manifest.join("shim"))
        .include(&vmlinux)
        .include(&cc_dir)
        .flag("-Wall")
        .flag("-Wno-unused-function")
        .flag("-Werror=implicit-function-declaration")
        .flag("-Werror=incompatible-pointer-types")
        .flag("-Werror=int-conversion");
    let mut table = String::from("#include \"vmlinux.h\"\n");
    let mut rows = String::new();
    let mut listed = Vec::new();
    for n in &names {
        let src = cc_dir.join(format!("{n}.bpf.c"));
        println!("cargo:rerun-if-changed={}", src.display());
        // a source with a paper variant is compiled twice: the default, and -DCCA_PAPER as
        // "<n>:paper" (ccarena.cc.variants), its globals renamed apart
        let text = std::fs::read_to_string(&src).unwrap_or_default();
        let paper = text.lines().any(|l| l.starts_with("#if") && l.contains("CCA_PAPER"));
        for (id, name, defs) in [(n.clone(), n.clone(), String::new()), (format!("{n}_p"), format!("{n}:paper"), format!("#define CCA_PAPER 1\n#define cca_{n}_ops cca_{n}_p_ops\n"))] {
            if name.ends_with(":paper") && !paper {
                continue;
            }
            let wrapper = out.join(format!("cch_{id}.c"));
            std::fs::write(
                &wrapper,
                format!(
                    "/* generated by crates/cc-harness/build.rs */\n{defs}\
                     #define _license cch_license_{id}\n\
                     #define cca_guard cca_guard_{id}\n\
                     #define cca_prr_state cca_prr_state_{id}\n\
                     #include \"{}\"\n",
                    src.display()
                ),
            )
            .unwrap();
            build.file(&wrapper);
            writeln!(table, "extern struct tcp_congestion_ops cca_{id}_ops;\nextern char cca_guard_{id}[];").unwrap();
            writeln!(rows, "\t{{ \"{name}\", &cca_{id}_ops, cca_guard_{id} }},").unwrap();
            listed.push(name);
        }
    }
    write!(
        table,
        "struct cch_algo {{ const char *name; struct tcp_congestion_ops *ops; void *guard_map; }};\n\
         const struct cch_algo cch_algos[] = {{\n{rows}\t{{ 0, 0, 0 }},\n}};\n"
    )
    .unwrap();
    let algos = out.join("algos.c");
    std::fs::write(&algos, table).unwrap();
    build
        .file(&algos)
        .file(manifest.join("csrc/model.c"))
        .file(manifest.join("csrc/common.c"))
        .file(manifest.join("csrc/bbr_view.c"));
    build.compile("cch");
    // the algorithm names, for the Rust side
    let list: Vec<String> = listed.iter().map(|n| format!("{n:?}")).collect();
    std::fs::write(out.join("algos.rs"), format!("pub const ALGOS: &[&str] = &[{}];\n", list.join(", "))).unwrap();
}
