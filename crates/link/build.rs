//! Build script: the `--version` line (ccarena-buildinfo: crate version and git
//! commit), and bpf/link/xsk_redirect.bpf.c compiled into OUT_DIR/xsk_redirect.bpf.o,
//! which the AF_XDP shell embeds with include_bytes! (the object can never be out of step
//! with the loader). The program uses only the kernel's UAPI headers and libbpf's
//! <bpf/bpf_helpers.h>: no vmlinux.h, no BTF of the build machine's kernel.
#![forbid(unsafe_code)]
use std::path::PathBuf;

use ccarena_buildinfo::bpf;

fn main() {
    ccarena_buildinfo::emit();
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let root = manifest.parent().unwrap().parent().unwrap();
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let src = root.join("bpf/link/xsk_redirect.bpf.c");
    bpf::compile(&src, &out.join("xsk_redirect.bpf.o"), &[bpf::multiarch_include()], "ccarena-link");
}
