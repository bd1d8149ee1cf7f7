//! Build script: the `--version` line (ccarena-buildinfo: crate version and git commit).
#![forbid(unsafe_code)]
fn main() {
    ccarena_buildinfo::emit();
}
