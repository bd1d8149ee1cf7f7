from ccarena.study.plan import make_plan
from ccarena.study.load import loads_study

TEXT = '''
[study]
name = "p"
duration = "1s"
repetitions = 4
[bottleneck]
rate = "10mbit"
[[flow]]
name = "f"
from = "s1"
to = "r1"
[sweep]
"flow.f.cc" = ["reno", "cubic", "bbr"]
'''


def test_runs_are_cells_times_repetitions_with_recorded_seed():
    s = loads_study(TEXT)
    p = make_plan(s, seed=42)
    assert len(p.runs) == 12
    assert {(r.cell, r.rep) for r in p.runs} == {(f"c00{i}", k) for i in range(3)
                                                 for k in range(1, 5)}
    again = make_plan(s, seed=42)
    assert [r.label for r in p.runs] == [r.label for r in again.runs]
    assert [r.seed for r in p.runs] == [r.seed for r in again.runs]
    assert p.to_json()["seed"] == 42


def test_shuffle_can_be_turned_off():
    s = loads_study(TEXT)
    p = make_plan(s, seed=1, shuffle=False)
    assert [r.label for r in p.runs][:4] == ["c000-r1", "c000-r2", "c000-r3", "c000-r4"]
    shuffled = make_plan(s, seed=1, shuffle=True)
    assert sorted(r.label for r in shuffled.runs) == sorted(r.label for r in p.runs)
    assert [r.label for r in shuffled.runs] != [r.label for r in p.runs]


def test_the_plan_records_how_often_a_noisy_run_is_run_again():
    s = loads_study(TEXT)
    assert make_plan(s, seed=1).to_json()["reruns"] == 1            # the default
    assert make_plan(s, seed=1, reruns=0).to_json()["reruns"] == 0  # --reruns 0
    s3 = loads_study(TEXT.replace("repetitions = 4", "repetitions = 4\nreruns = 3"))
    assert make_plan(s3, seed=1).to_json()["reruns"] == 3
