"""ccarena.vm without booting anything: the vng command line, the accelerator choice, the
guest script (run here with sh), finding the cached kernel and the errors when it is
missing, and what a VM that died leaves of a results directory."""
import json
import subprocess

import pytest

from ccarena.vm import boot as vb
from ccarena.testbed.guest import accel as ga
from ccarena.testbed.guest import image as vi
from ccarena.vm.boot import KvmProbe, VmError, choose_accel, guest_env, guest_script, vng_argv
from ccarena.vm.guest import vm_record

from conftest import ccarena_cli

IMG = vi.KernelImage(package="linux-image-6.12.95+deb12-amd64", version="6.12.95-1~bpo12+1",
                     release="6.12.95+deb12-amd64", root="/c/k",
                     vmlinuz="/c/k/boot/vmlinuz-6.12.95+deb12-amd64", sha256="ab")


def _opt(argv, name):
    return [argv[i + 1] for i, a in enumerate(argv) if a == name]


# -- the vng command line -------------------------------------------------------------------
def test_tcg_disables_kvm_and_kvm_does_not():
    common = dict(cpus=2, memory="2G", rwdirs=["/p"], cwd="/p", guest_cmd="sh /p/g.sh")
    tcg = vng_argv(IMG, accel="tcg", **common)
    kvm = vng_argv(IMG, accel="kvm", **common)
    assert "--disable-kvm" in tcg and "--disable-kvm" not in kvm
    # TCG runs every vCPU in one host thread (cross-CPU code patching panicked the guest),
    # on a CPU without AVX2 (QEMU 7.2 emulates its masked gathers wrongly)
    assert "--qemu-opts=-accel tcg,thread=single -cpu max,avx2=off" in tcg
    assert not any(a.startswith("--qemu-opts") for a in kvm)
    for argv in (tcg, kvm):
        assert _opt(argv, "--run") == [IMG.vmlinuz]
        assert _opt(argv, "--cpus") == ["2"] and _opt(argv, "--memory") == ["2G"]
        assert _opt(argv, "--cwd") == ["/p"]
        # the command comes last, as one argument: vng hands it to the guest's shell
        assert argv[-2:] == ["--exec", "sh /p/g.sh"]
        # the console goes to vng's output, which boot() keeps for error messages
        assert "--verbose" in argv


def test_each_writable_folder_is_passed_once_in_order():
    argv = vng_argv(IMG, accel="tcg", cpus=1, memory="1G", rwdirs=["/p", "/r", "/p", "/s"],
                    cwd="/p", guest_cmd="true")
    assert _opt(argv, "--rwdir") == ["/p", "/r", "/s"]


def test_an_unknown_accelerator_is_refused_in_the_argv():
    with pytest.raises(ValueError, match="accel must be kvm or tcg, not 'auto'"):
        vng_argv(IMG, accel="auto", cpus=1, memory="1G", rwdirs=[], cwd="/", guest_cmd="true")


# -- the accelerator ------------------------------------------------------------------------
def test_auto_takes_kvm_when_it_boots_and_tcg_otherwise_saying_why():
    assert choose_accel("auto", KvmProbe(True, "KVM boots it"))[0] == "kvm"
    accel, why = choose_accel("auto", KvmProbe(False, "/dev/kvm: No such file or directory"))
    assert accel == "tcg" and "/dev/kvm: No such file or directory" in why


def test_tcg_asked_for_is_tcg_even_where_kvm_works():
    assert choose_accel("tcg", KvmProbe(True, "ok"))[0] == "tcg"


def test_kvm_asked_for_where_it_cannot_work_is_one_line_naming_the_cause():
    with pytest.raises(VmError) as e:
        choose_accel("kvm", KvmProbe(False, "failed to set MSR 0x10a"))
    msg = str(e.value)
    assert "KVM" in msg and "failed to set MSR 0x10a" in msg and "\n" not in msg


def test_an_unknown_accelerator_is_an_error():
    with pytest.raises(VmError, match="expected auto, kvm or tcg"):
        choose_accel("hvf", KvmProbe(True, ""))


def test_dev_kvm_that_cannot_be_opened_is_unusable_without_booting(monkeypatch, tmp_path):
    def no_kvm():
        return "/dev/kvm: No such file or directory"
    monkeypatch.setattr(ga, "_dev_kvm", no_kvm)
    p = vb.probe_kvm(IMG, qemu="/nonexistent/qemu", cache=tmp_path)
    assert not p.usable and "/dev/kvm" in p.why


# -- the guest's environment and script -----------------------------------------------------
def test_guest_env_passes_ccarenas_settings_and_puts_the_venv_first():
    env = guest_env({"CCARENA_LINK_IO": "copy", "CCARENA_VM": "{...}", "HOME": "/home/x",
                     "SSH_AUTH_SOCK": "/s", "PATH": "/usr/bin:/bin", "CI": "true",
                     "PYTHONPATH": "/wt/src"},
                    {"EXTRA": "1"}, venv_bin="/p/.venv/bin")
    assert env["CCARENA_LINK_IO"] == "copy" and env["CI"] == "true" and env["EXTRA"] == "1"
    assert env["PYTHONPATH"] == "/wt/src"      # the guest imports what the host does
    # the host's own VM record is not passed on: the guest gets a fresh one at boot
    assert "CCARENA_VM" not in env and "HOME" not in env and "SSH_AUTH_SOCK" not in env
    path = env["PATH"].split(":")
    assert path[0] == "/p/.venv/bin" and "/usr/sbin" in path and "/sbin" in path


def test_guest_script_runs_the_command_and_records_output_and_status(tmp_path):
    """The script as the guest runs it, run here by sh: the host's boot record is already
    there, so it does not wait."""
    (tmp_path / "host.json").write_text('{"accel": "tcg", "boot_s": 1.5}')
    argv = ["sh", "-c", 'echo "$CCARENA_VM"; echo "$ODD"; echo e >&2; pwd; exit 7']
    script = guest_script(str(tmp_path), argv, {"ODD": "it's a \"value\" $HOME"},
                          cwd=str(tmp_path))
    (tmp_path / "g.sh").write_text(script)
    r = subprocess.run(["sh", str(tmp_path / "g.sh")], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 0, r.stderr
    out = (tmp_path / "stdout").read_text().splitlines()
    assert json.loads(out[0]) == {"accel": "tcg", "boot_s": 1.5}
    assert out[1] == "it's a \"value\" $HOME"       # quoted, not expanded
    assert out[2] == str(tmp_path)
    assert (tmp_path / "stderr").read_text() == "e\n"
    assert (tmp_path / "rc").read_text().strip() == "7"
    assert (tmp_path / "started").exists()


def test_vm_record_comes_from_the_hosts_boot_record(monkeypatch):
    monkeypatch.delenv("CCARENA_VM", raising=False)
    assert vm_record() is None
    monkeypatch.setenv("CCARENA_VM", '{"accel": "tcg", "boot_s": 17.8}')
    rec = vm_record()
    assert rec["in_vm"] is True and rec["accel"] == "tcg" and rec["boot_s"] == 17.8
    assert rec["guest_kernel"]


# -- the cached kernel ----------------------------------------------------------------------
def _image_folder(cache, package=IMG.package, version=IMG.version, release=IMG.release,
                  marker=True):
    d = cache / f"{package}_{version}"
    (d / "boot").mkdir(parents=True)
    (d / "boot" / f"vmlinuz-{release}").write_bytes(b"k")
    if marker:
        (d / vi.MARKER).write_text(json.dumps(
            {"package": package, "version": version, "release": release,
             "root": "/elsewhere", "vmlinuz": "/elsewhere/boot/x", "sha256": "ab"}))
    return d


def test_missing_image_is_one_line_naming_the_cache_and_make_vm(tmp_path):
    with pytest.raises(vi.ImageMissing) as e:
        vi.locate(tmp_path / "nope")
    msg = str(e.value)
    assert str(tmp_path / "nope") in msg and "make vm" in msg and "\n" not in msg


def test_an_interrupted_fetch_is_not_an_image(tmp_path):
    _image_folder(tmp_path, marker=False)
    with pytest.raises(vi.ImageMissing, match="is empty"):
        vi.locate(tmp_path)


def test_cached_image_is_found_where_it_is_now(tmp_path):
    d = _image_folder(tmp_path)
    img = vi.locate(tmp_path)
    assert img.release == IMG.release
    assert img.vmlinuz == str(d / "boot" / f"vmlinuz-{IMG.release}")   # not the old path


def test_the_pinned_package_wins_else_the_newest_612():
    a = vi.KernelImage("linux-image-6.12.43+deb12-amd64", "6.12.43-1~bpo12+1",
                       "6.12.43+deb12-amd64", "/a", "/a/v", "x")
    b = vi.KernelImage("linux-image-6.12.100+deb12-amd64", "6.12.100-1~bpo12+1",
                       "6.12.100+deb12-amd64", "/b", "/b/v", "x")
    assert vi.choose([a, b, IMG]) == IMG
    assert vi.choose([a, b]) == b          # 100 > 43 as numbers, not as strings
    assert vi.choose([]) is None


def test_boot_without_an_image_fails_before_starting_anything(tmp_path, monkeypatch):
    monkeypatch.setenv("CCARENA_VM_DIR", str(tmp_path / "empty"))
    r = ccarena_cli("vm", "--", "true", check=False)
    assert r.returncode == 1
    assert r.stderr.startswith("ccarena: cannot find the reference kernel")
    assert "make vm" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_vm_without_a_command_is_a_usage_error():
    r = ccarena_cli("vm", check=False)
    assert r.returncode == 2 and "ccarena vm" in r.stderr


# -- the apt source of the kernel -----------------------------------------------------------
def test_archive_uri_is_read_from_the_hosts_sources():
    deb822 = ("Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm "
              "bookworm-updates\nComponents: main\n\nTypes: deb\n"
              "URIs: http://mirror.example/debian-security\nSuites: bookworm-security\n")
    assert vi.archive_uri(deb822, "bookworm") == "http://mirror.example/debian"
    one_line = ("# comment\ndeb http://sec.example/ bookworm-security main\n"
                "deb [arch=amd64 signed-by=/k.gpg] http://m.example/debian bookworm main\n")
    assert vi.archive_uri(one_line, "bookworm") == "http://m.example/debian"
    assert vi.archive_uri(one_line, "trixie") is None


# -- a VM that died -------------------------------------------------------------------------
def _results(tmp_path, complete):
    from ccarena.store.writer import Writer
    res = Writer.create("s", tmp_path).results
    for label in complete:
        (res.path / "runs" / label).mkdir(parents=True)
        (res.path / "runs" / label / "meta.json").write_text("{}")
    (res.path / "runs" / "c000-r9").mkdir()          # the run the VM was in
    (res.path / "superseded" / ".c000-r1.next").mkdir(parents=True)
    return res.path


def test_a_vm_that_died_leaves_its_completed_runs_only(tmp_path):
    from ccarena.vm.session import _drop_incomplete
    p = _results(tmp_path, ["c000-r1"])
    _drop_incomplete(p)
    assert sorted(d.name for d in (p / "runs").iterdir()) == ["c000-r1"]
    assert not (p / "superseded" / ".c000-r1.next").exists()


def test_a_vm_that_died_before_any_run_completed_leaves_nothing(tmp_path):
    from ccarena.vm.session import _drop_incomplete
    p = _results(tmp_path, [])
    _drop_incomplete(p)
    assert not p.exists()


def test_a_study_beyond_a_tcg_guest_is_warned_of():
    from ccarena.study.load import loads_study
    from ccarena.vm.session import tcg_advice
    base = ('[study]\nname = "t"\nduration = "5s"\nsample_interval = "{si}"\n'
            '[bottleneck]\nrate = "{rate}"\n[[flow]]\nfrom = "s1"\nto = "r1"\n')
    fast = loads_study(base.format(si="10ms", rate="100mbit"))
    w = tcg_advice(fast, "tcg")
    assert "100 Mbit/s bottleneck" in w and "samples every 10 ms" in w and "flagged" in w
    assert tcg_advice(fast, "kvm") is None
    assert tcg_advice(loads_study(base.format(si="50ms", rate="2mbit")), "tcg") is None
    swept = loads_study(base.format(si="50ms", rate="2mbit")
                        + '[sweep]\n"bottleneck.rate" = ["2mbit", "20mbit"]\n')
    assert "20 Mbit/s bottleneck" in tcg_advice(swept, "tcg")
