//! Contract: compile one BPF C program for a build script, with the flags of
//! mk/bpf.mk (clang -O2 -g -target bpf, warnings as errors): `compile(src, obj,
//! include dirs, who)` writes the object to `obj` (in OUT_DIR, for include_bytes!) and
//! tells cargo to rebuild when the source or $BPF_CLANG changes. Needs clang (>= 14)
//! and libbpf's headers (<bpf/bpf_helpers.h>, Debian: libbpf-dev). A failure panics
//! with one line naming `who` (the crate), the step and the file.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The `__TARGET_ARCH_*` name of the target (the kernel's arch directory name).
pub fn target_arch(who: &str) -> &'static str {
    match std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default().as_str() {
        "x86_64" => "x86",
        "aarch64" => "arm64",
        other => panic!("{who} build: no BPF target arch for {other:?}"),
    }
}

/// Debian's directory of the target's own kernel headers (<asm/types.h>, which
/// <linux/bpf.h> includes), for programs built on the UAPI headers.
pub fn multiarch_include() -> PathBuf {
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    PathBuf::from(format!("/usr/include/{arch}-linux-gnu"))
}

/// Compile `src` into `obj` (see the module contract).
pub fn compile(src: &Path, obj: &Path, includes: &[PathBuf], who: &str) {
    println!("cargo:rerun-if-changed={}", src.display());
    println!("cargo:rerun-if-env-changed=BPF_CLANG");
    let clang = std::env::var("BPF_CLANG").unwrap_or_else(|_| "clang".into());
    let st = Command::new(&clang)
        .args(["-O2", "-g", "-target", "bpf", &format!("-D__TARGET_ARCH_{}", target_arch(who)), "-Wall", "-Werror"])
        .args(includes.iter().map(|d| format!("-I{}", d.display())))
        .arg("-c")
        .arg(src)
        .arg("-o")
        .arg(obj)
        .status()
        .unwrap_or_else(|e| panic!("{who} build: run {clang}: {e} (install clang >= 14)"));
    assert!(st.success(), "{who} build: {clang} failed on {}", src.display());
}

/// The directory holding vmlinux.h for a BPF program: $CCARENA_VMLINUX_H's, else
/// <root>/build (made by `make bpf`), else `out`, where it is generated with `bpftool btf
/// dump` from the running kernel's BTF. A failure panics with one line naming `who`.
pub fn vmlinux_dir(root: &Path, out: &Path, who: &str) -> PathBuf {
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
        .unwrap_or_else(|_| panic!("{who} build: run bpftool (needed for vmlinux.h; or run `make bpf` first)"));
    assert!(dump.status.success(), "{who} build: bpftool btf dump failed: {}", String::from_utf8_lossy(&dump.stderr));
    std::fs::write(out.join("vmlinux.h"), dump.stdout).unwrap();
    out.to_path_buf()
}
