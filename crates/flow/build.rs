//! Build script: the `--version` line (ccarena-buildinfo: crate version and git commit).
fn main() {
    ccarena_buildinfo::emit();
}
