"""The reference kernel: a stock Debian 6.12 kernel package (bookworm-backports), fetched
once into a cache folder and booted by ccarena.vm.boot (a command in it) and by guest
hosts (ccarena.testbed.guest). It has what many hosts
lack: netem, RED, CoDel, FQ-CoDel and every kernel congestion control as modules,
BTF and struct_ops links.

    fetch()  -> KernelImage   download (verified by apt), extract, depmod; idempotent
    locate() -> KernelImage   the cached image, or ImageMissing naming how to get it

The cache lives in $CCARENA_VM_DIR, else ${XDG_CACHE_HOME:-~/.cache}/ccarena/vm, so it
survives `make clean` and a fresh clone on the same machine. Each image is a folder
<package>_<version>/ holding the package's boot/ and lib/modules/ trees (virtme-ng finds
the modules beside the image) and ccarena-image.json, written last: a folder without it
is an interrupted fetch and is never used.

apt runs with a private configuration under <cache>/apt (its own sources list, lists and
download folder): the host's apt sources are not changed. apt checks the package against
the archive's signed index (the Debian archive keyring) before it hands it over; the
SHA256 of that index is checked again here and recorded."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from ccarena.errors import CcarenaError
from ccarena.paths import file_sha256

# The kernel the reference results are measured on. When the suite no longer carries it,
# fetch() takes the 6.12 kernel its metapackage points at and says so.
PACKAGE = "linux-image-6.12.95+deb12-amd64"
METAPACKAGE = "linux-image-amd64"
SUITE = "bookworm-backports"
SERIES = "6.12"
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
MARKER = "ccarena-image.json"


class ImageError(CcarenaError):
    """Fetching or finding the reference kernel failed."""


class ImageMissing(ImageError):
    """No usable reference kernel in the cache."""


@dataclass(frozen=True)
class KernelImage:
    package: str
    version: str
    release: str            # uname -r inside the guest
    root: str               # the extracted package tree
    vmlinuz: str
    sha256: str             # of the .deb, as the archive's signed index lists it

    @property
    def label(self) -> str:
        return f"{self.package} {self.version}"


def cache_dir() -> Path:
    env = os.environ.get("CCARENA_VM_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ccarena" / "vm"


def read_marker(folder: Path) -> KernelImage | None:
    """The image in `folder`, or None when it is incomplete or damaged."""
    try:
        d = json.loads((folder / MARKER).read_text())
        # paths follow the folder, so a cache that was moved still works
        d["root"] = str(folder)
        d["vmlinuz"] = str(folder / "boot" / f"vmlinuz-{d['release']}")
        img = KernelImage(**{k: d[k] for k in KernelImage.__dataclass_fields__})
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return img if Path(img.vmlinuz).is_file() else None


def choose(images: list[KernelImage], package: str = PACKAGE) -> KernelImage | None:
    """The pinned package if cached, else the newest 6.12 image (by Debian version)."""
    pinned = [i for i in images if i.package == package]
    pool = pinned or [i for i in images if i.release.startswith(SERIES + ".")]
    return max(pool, key=lambda i: _version_key(i.version), default=None)


def _version_key(v: str) -> tuple:
    return tuple(int(x) if x.isdigit() else x for x in re.split(r"[.+~-]", v))


def locate(cache: Path | None = None) -> KernelImage:
    """The cached reference kernel -> KernelImage; ImageMissing says how to get one."""
    cache = cache or cache_dir()
    images = [i for i in (read_marker(p) for p in sorted(cache.glob("linux-image-*"))
                          if p.is_dir()) if i]
    img = choose(images)
    if img is None:
        where = f"{cache} is empty" if cache.is_dir() else f"{cache} does not exist"
        raise ImageMissing(f"cannot find the reference kernel ({PACKAGE}): {where}; "
                           "run `make vm` (or set CCARENA_VM_DIR to a cache that has it)")
    return img


# -- fetching -------------------------------------------------------------------------------

def archive_uri(sources_text: str, codename: str) -> str | None:
    """The URI of the host's Debian archive, from its apt sources (deb822 .sources text or
    one-line sources.list text): the first `deb` source serving `codename` itself (not
    -security, -updates: backports sit beside the release on the main archive)."""
    # deb822 stanzas
    for stanza in re.split(r"\n\s*\n", sources_text):
        fields = {}
        for line in stanza.splitlines():
            if line.startswith("#") or ":" not in line or line[:1].isspace():
                continue
            k, _, v = line.partition(":")
            fields[k.strip().lower()] = v.split()
        if "deb" in fields.get("types", []) and codename in fields.get("suites", []):
            uris = fields.get("uris") or []
            if uris:
                return uris[0]
    # one-line form: deb [options] uri suite components...
    for line in sources_text.splitlines():
        parts = line.split("#", 1)[0].split()
        if not parts or parts[0] != "deb":
            continue
        parts = parts[1:]
        if parts and parts[0].startswith("["):
            while parts and not parts[0].endswith("]"):
                parts = parts[1:]
            parts = parts[1:]
        if len(parts) >= 2 and parts[1] == codename:
            return parts[0]
    return None


def host_sources() -> str:
    texts = []
    for p in [Path("/etc/apt/sources.list")] + sorted(Path("/etc/apt/sources.list.d").glob("*")):
        if p.suffix in (".list", ".sources") or p.name == "sources.list":
            try:
                texts.append(p.read_text())
            except OSError:
                pass
    return "\n\n".join(texts)


def os_codename() -> str | None:
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("VERSION_CODENAME="):
                return line.split("=", 1)[1].strip().strip('"') or None
    except OSError:
        pass
    return None


class _Apt:
    """apt-get/apt-cache with a private configuration under `root`."""

    def __init__(self, root: Path, uri: str):
        self.root = root
        for d in ("lists/partial", "archives/partial"):
            (root / d).mkdir(parents=True, exist_ok=True)
        (root / "sources.list").write_text(
            f"deb [signed-by={KEYRING}] {uri} {SUITE} main\n")
        self.opts = [
            "-o", f"Dir::Etc::SourceList={root / 'sources.list'}",
            "-o", "Dir::Etc::SourceParts=/dev/null",
            "-o", f"Dir::State::Lists={root / 'lists'}",
            "-o", f"Dir::Cache={root}", "-o", f"Dir::Cache::Archives={root / 'archives'}",
            "-o", "Dir::Cache::pkgcache=", "-o", "Dir::Cache::srcpkgcache=",
            # the download lands in our folder, which the _apt user cannot write
            "-o", "APT::Sandbox::User=root", "-q"]

    def run(self, tool: str, *args, cwd=None) -> str:
        argv = [tool, *self.opts, *args]
        try:
            r = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, timeout=900)
        except FileNotFoundError:
            raise ImageError(f"fetching the reference kernel needs {tool} (apt), which is "
                             "not installed") from None
        if r.returncode != 0:
            tail = " | ".join((r.stderr or r.stdout).strip().splitlines()[-2:])
            raise ImageError(f"{tool} {' '.join(args)} failed (exit {r.returncode}): {tail}")
        return r.stdout


def _field(show: str, name: str) -> str | None:
    m = re.search(rf"^{name}: (.+)$", show, re.M)
    return m.group(1).strip() if m else None


def resolve_package(apt: _Apt, package: str = PACKAGE, log=print) -> tuple[str, str, str]:
    """-> (package, version, sha256) of the kernel to fetch."""
    try:
        show = apt.run("apt-cache", "show", package)
    except ImageError:
        meta = apt.run("apt-cache", "show", METAPACKAGE)
        m = re.search(rf"linux-image-{re.escape(SERIES)}\.[^ ,]*-amd64", _field(meta, "Depends")
                      or "")
        if not m:
            raise ImageError(f"{SUITE} carries neither {package} nor a {SERIES} kernel "
                             f"behind {METAPACKAGE}") from None
        log(f"vm: {package} is no longer in {SUITE}; taking {m.group(0)} instead")
        package = m.group(0)
        show = apt.run("apt-cache", "show", package)
    first = show.split("\n\n")[0]
    version, sha = _field(first, "Version"), _field(first, "SHA256")
    if not version or not sha:
        raise ImageError(f"apt-cache show {package}: no Version or SHA256 field")
    return package, version, sha


def fetch(cache: Path | None = None, package: str = PACKAGE, log=print) -> KernelImage:
    """Download and unpack the reference kernel once; later calls return the cached one."""
    cache = cache or cache_dir()
    try:
        img = locate(cache)
        if img.package == package:
            log(f"vm: reference kernel cached: {img.label} ({img.root})")
            return img
    except ImageMissing:
        pass
    for tool in ("dpkg", "depmod"):
        if not shutil.which(tool) and not Path(f"/usr/sbin/{tool}").exists():
            raise ImageError(f"fetching the reference kernel needs {tool}, which is not "
                             "installed (apt-get install kmod dpkg)")
    uri = os.environ.get("CCARENA_VM_APT_URI")
    codename = os_codename()
    if not uri:
        if codename != "bookworm":
            raise ImageError(f"fetching the reference kernel: it comes from Debian's "
                             f"{SUITE}, and this system is {codename or 'not Debian'}; set "
                             "CCARENA_VM_APT_URI to a Debian archive to fetch it anyway")
        uri = archive_uri(host_sources(), codename)
        if not uri:
            raise ImageError(f"fetching the reference kernel: no apt source serves "
                             f"{codename} in /etc/apt (set CCARENA_VM_APT_URI to a Debian "
                             "archive)")
    if not Path(KEYRING).is_file():
        raise ImageError(f"fetching the reference kernel: {KEYRING} is missing "
                         "(apt-get install debian-archive-keyring)")
    cache.mkdir(parents=True, exist_ok=True)
    apt = _Apt(cache / "apt", uri)
    log(f"vm: reading the {SUITE} index")
    apt.run("apt-get", "update")
    package, version, sha = resolve_package(apt, package, log)
    with tempfile.TemporaryDirectory(prefix=".fetch-", dir=cache) as tmp:
        log(f"vm: downloading {package} {version}")
        apt.run("apt-get", "download", f"{package}={version}", cwd=tmp)
        debs = list(Path(tmp).glob("*.deb"))
        if len(debs) != 1:
            raise ImageError(f"apt-get download {package}: expected one .deb, got "
                             f"{[d.name for d in debs]}")
        got = file_sha256(debs[0])
        if got != sha:
            raise ImageError(f"{debs[0].name}: SHA256 {got} differs from the archive "
                             f"index's {sha}")
        tree = Path(tmp) / "tree"
        _check(["dpkg", "-x", str(debs[0]), str(tree)], f"unpacking {debs[0].name}")
        kernels = sorted((tree / "boot").glob("vmlinuz-*"))
        if len(kernels) != 1:
            raise ImageError(f"{debs[0].name}: expected one boot/vmlinuz-*, found "
                             f"{[k.name for k in kernels]}")
        release = kernels[0].name[len("vmlinuz-"):]
        # the package ships no modules.dep (its postinst makes it): virtme-ng needs one to
        # put the 9p and virtio modules into its initramfs
        _check(["depmod", "-a", "-b", str(tree), release], f"depmod for {release}")
        final = cache / f"{package}_{version}"
        if final.exists():
            shutil.rmtree(final)
        tree.rename(final)
    img = KernelImage(package=package, version=version, release=release, root=str(final),
                      vmlinuz=str(final / "boot" / f"vmlinuz-{release}"), sha256=sha)
    tmp_marker = final / (MARKER + ".tmp")
    tmp_marker.write_text(json.dumps(asdict(img), indent=1) + "\n")
    tmp_marker.replace(final / MARKER)
    log(f"vm: reference kernel ready: {img.label} ({final})")
    return img



def _check(argv: list[str], what: str) -> None:
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode != 0:
        raise ImageError(f"{what} failed (exit {r.returncode}): "
                         f"{' | '.join(r.stderr.strip().splitlines()[-2:])}")


def main(argv=None) -> int:
    """`make vm` calls main(["fetch"]) (not `python -m`, which warns: the package imports
    this module first); main(["where"]) prints the image folder."""
    import sys
    args = sys.argv[1:] if argv is None else argv
    try:
        if args[:1] == ["where"]:
            print(locate().root)
        else:
            fetch()
    except ImageError as e:
        print(f"make vm: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
