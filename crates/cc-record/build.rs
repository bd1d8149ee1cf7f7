//! Compiles bpf/record/ccrecord.bpf.c with clang into OUT_DIR/ccrecord.bpf.o, which
//! src/main.rs embeds with include_bytes!: one binary, and the BPF object can never be
//! out of step with the loader. vmlinux.h: $CCARENA_VMLINUX_H, else build/vmlinux.h
//! (made by `make bpf`), else generated here with `bpftool btf dump` from the running
//! kernel's BTF. Needs clang (>= 14) and libbpf's headers (<bpf/bpf_helpers.h>,
//! Debian: libbpf-dev) — the same as mk/bpf.mk. Also the `--version` line
//! (ccarena-buildinfo: crate version and git commit).
#![forbid(unsafe_code)]
use std::path::PathBuf;

use ccarena_buildinfo::bpf;

fn main() {
    ccarena_buildinfo::emit(); // the --version line
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let root = manifest.parent().unwrap().parent().unwrap().to_path_buf();
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let src = root.join("bpf/record/ccrecord.bpf.c");
    let hdr = root.join("bpf/record/ccrecord.h");
    println!("cargo:rerun-if-changed={}", hdr.display());
    let vmlinux_dir = bpf::vmlinux_dir(&root, &out, "ccarena-cc-record");
    let includes = [vmlinux_dir, root.join("bpf/record")];
    bpf::compile(&src, &out.join("ccrecord.bpf.o"), &includes, "ccarena-cc-record");
}
