"""A BPF algorithm's guard (docs/algorithms.md, "Known issue"): a late repair makes the run
invalid for the machine's kernel, which a re-run remedies as it does noise; a repair at
entry (before any use) is recorded and the run stays valid."""
from types import SimpleNamespace

from ccarena.cc.hold import GuardCounts
from ccarena.measure import validity
from ccarena.run import collect


def _ctx():
    return SimpleNamespace(meta={}, reasons=[], noise=[],
                           kernel_names={"vegas": "cca_vegas", "cubic": "cubic"})


def _counts(late=0, at_entry=0):
    return GuardCounts(late=late, at_entry=at_entry, late_ssthresh=0, late_cwnd=late,
                       late_states=1 << 3 if late else 0)


def _judge(monkeypatch, before, after):
    ctx = _ctx()
    monkeypatch.setattr(collect.ccmod, "run_guard_counts", lambda k, inodes: after)
    collect.judge_guards(ctx, {"cca_vegas": before}, [1])
    ctx.meta["invalid_reasons"] = ctx.reasons + ctx.noise
    ctx.meta["noise_reasons"] = list(ctx.noise)
    ctx.meta["valid"] = not ctx.meta["invalid_reasons"]
    return ctx


def test_a_late_repair_is_the_kernels_fault_and_the_run_is_run_again(monkeypatch):
    ctx = _judge(monkeypatch, _counts(late=1), _counts(late=3))
    assert not ctx.meta["valid"]
    assert ctx.reasons == []
    assert len(ctx.noise) == 1 and ctx.noise[0].startswith("cca_vegas: 2 corrupted")
    assert validity.noise_only(ctx.meta)
    assert ctx.meta["cc_repairs"] == {"cca_vegas": 2}
    assert ctx.meta["cc_repairs_found"]["cca_vegas"]["cwnd"] == 2
    assert ctx.meta["cc_repairs_found"]["cca_vegas"]["ca_states"] == [3]


def test_a_repair_at_entry_is_recorded_and_the_run_stays_valid(monkeypatch):
    ctx = _judge(monkeypatch, _counts(at_entry=1), _counts(at_entry=4))
    assert ctx.meta["valid"] and ctx.noise == [] and ctx.reasons == []
    assert ctx.meta["cc_guard_at_entry"] == {"cca_vegas": 3}


def test_no_change_no_judgement(monkeypatch):
    ctx = _judge(monkeypatch, _counts(late=2, at_entry=1), _counts(late=2, at_entry=1))
    assert ctx.meta == {"invalid_reasons": [], "noise_reasons": [], "valid": True}
