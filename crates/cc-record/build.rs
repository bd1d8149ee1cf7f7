//! Compiles bpf/record/ccrecord.bpf.c with clang into OUT_DIR/ccrecord.bpf.o, which
//! src/main.rs embeds with include_bytes!: one binary, and the BPF object can never be
//! out of step with the loader. vmlinux.h: $CCARENA_VMLINUX_H, else build/vmlinux.h
//! (made by `make bpf`), else generated here with `bpftool btf dump` from the running
//! kernel's BTF. Needs clang (>= 14) and libbpf's headers (<bpf/bpf_helpers.h>,
//! Debian: libbpf-dev) — the same as mk/bpf.mk. Also the `--version` line
//! (ccarena-buildinfo: crate version and git commit).
#![forbid(unsafe_code)]
use std::path::{Path, PathBuf};
use std::process::Command;

use ccarena_buildinfo::bpf;

fn main() {
    ccarena_buildinfo::emit(); // the --version line
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let root = manifest.parent().unwrap().parent().unwrap().to_path_buf();
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let src = root.join("bpf/record/ccrecord.bpf.c");
    let hdr = root.join("bpf/record/ccrecord.h");
    println!("cargo:rerun-if-changed={}", hdr.display());
    println!("cargo:rerun-if-env-changed=CCARENA_VMLINUX_H");

    let vmlinux_dir = match std::env::var("CCARENA_VMLINUX_H") {
        Ok(p) => Path::new(&p).parent().unwrap().to_path_buf(),
        Err(_) if root.join("build/vmlinux.h").exists() => {
            println!("cargo:rerun-if-changed={}", root.join("build/vmlinux.h").display());
            root.join("build")
        }
        Err(_) => {
            let dump = Command::new("bpftool")
                .args(["btf", "dump", "file", "/sys/kernel/btf/vmlinux", "format", "c"])
                .output()
                .expect("ccarena-cc-record build: run bpftool (needed for vmlinux.h; or run `make bpf` first)");
            assert!(dump.status.success(), "ccarena-cc-record build: bpftool btf dump failed: {}", String::from_utf8_lossy(&dump.stderr));
            std::fs::write(out.join("vmlinux.h"), dump.stdout).unwrap();
            out.clone()
        }
    };
    let includes = [vmlinux_dir, root.join("bpf/record")];
    bpf::compile(&src, &out.join("ccrecord.bpf.o"), &includes, "ccarena-cc-record");
}
