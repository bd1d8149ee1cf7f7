//! ccarena-buildinfo: what the binaries' build scripts share: the build-script half of
//! `--version`, and compiling the BPF C programs a binary embeds (`bpf`).
//!
//! Contract: a binary crate's build.rs calls `emit()`; the crate then has the compile-time
//! environment variable `CCARENA_VERSION` = `"<package name> <package version> (git
//! <short commit>)"`, with `unknown` for the commit when the sources are not a git
//! checkout (or git is missing). `main` prints it for `--version`, so a run records the
//! exact tools it used. The build script reruns when the checkout's HEAD moves (a commit,
//! a checkout), not on every build. Uncommitted changes are not shown.
#![forbid(unsafe_code)]

pub mod bpf;

use std::path::{Path, PathBuf};
use std::process::Command;

/// Run `git args` in the package's directory; its trimmed stdout, None on any failure.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git").arg("-C").arg(dir).args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}

/// The version line of the package being built (see the crate's contract).
pub fn version_line(name: &str, version: &str, commit: Option<&str>) -> String {
    format!("{name} {version} (git {})", commit.unwrap_or("unknown"))
}

/// Print the cargo instructions: `CCARENA_VERSION`, and rerun when HEAD moves.
pub fn emit() {
    let env = |k: &str| std::env::var(k).unwrap_or_default();
    let dir = PathBuf::from(env("CARGO_MANIFEST_DIR"));
    let commit = git(&dir, &["rev-parse", "--short", "HEAD"]);
    println!("cargo:rustc-env=CCARENA_VERSION={}", version_line(&env("CARGO_PKG_NAME"), &env("CARGO_PKG_VERSION"), commit.as_deref()));
    println!("cargo:rerun-if-changed=build.rs");
    // HEAD (per worktree) names the branch; the branch's ref (or packed-refs) names the
    // commit. Only files that exist are watched (a missing one would rerun every build).
    let mut watch = Vec::new();
    if let Some(g) = git(&dir, &["rev-parse", "--absolute-git-dir"]) {
        watch.push(PathBuf::from(g).join("HEAD"));
    }
    if let Some(common) = git(&dir, &["rev-parse", "--git-common-dir"]) {
        let common = dir.join(common); // relative to `dir` unless absolute
        watch.push(common.join("packed-refs"));
        if let Some(r) = git(&dir, &["symbolic-ref", "-q", "HEAD"]) {
            watch.push(common.join(r));
        }
    }
    for p in watch.into_iter().filter(|p| p.exists()) {
        println!("cargo:rerun-if-changed={}", p.display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_names_package_version_and_commit() {
        assert_eq!(version_line("ccarena-link", "0.1.0", Some("abc1234")), "ccarena-link 0.1.0 (git abc1234)");
        assert_eq!(version_line("ccarena-flow", "0.1.0", None), "ccarena-flow 0.1.0 (git unknown)");
    }
}
