"""The study format's description: docs/study-keys.md is what the declarations say, the
JSON Schema accepts every shipped study and rejects the mistakes the parser rejects, and
near misses get a "did you mean"."""
import tomllib
from pathlib import Path

import jsonschema
import pytest

from ccarena.errors import SpecError
from ccarena.study import keys, reference
from ccarena.study.load import loads_study

ROOT = Path(__file__).resolve().parents[2]


def test_the_key_reference_page_is_current():
    page = (ROOT / "docs" / "study-keys.md").read_text()
    assert page == reference.markdown(), \
        "docs/study-keys.md is stale: `ccarena schema --markdown > docs/study-keys.md`"


def test_every_declared_key_is_documented_and_typed():
    for table in keys.TABLES.values():
        for name, k in table.items():
            assert k.doc and k.type, name


@pytest.mark.parametrize("path", sorted((ROOT / "studies").glob("*.toml")), ids=lambda p: p.stem)
def test_the_json_schema_accepts_every_shipped_study(path):
    jsonschema.validate(tomllib.loads(path.read_text()), reference.json_schema())


@pytest.mark.parametrize("doc", [
    {"study": {"name": "x", "duration": "5s"}, "bottleneck": {"rat": "10mbit"}},
    {"study": {"name": "x", "duration": "5s"}, "bottleneck": {"rate": 10}},
    {"study": {"name": "x", "duration": "5s"}, "bottleneck": {"queue": "redd"}},
    {"study": {"name": "x", "duration": "5s"}, "flows": []},
    {"study": {"name": "x", "duration": "5s"}, "bottleneck": {"aqm": {"mn": "5p"}}},
])
def test_the_json_schema_rejects_what_the_parser_rejects(doc):
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, reference.json_schema())


BASE = '[study]\nname = "x"\nduration = "5s"\n[[flow]]\nfrom = "s1"\nto = "r1"\n'


@pytest.mark.parametrize("extra,needle", [
    ('[bottleneck]\nrat = "10mbit"', "bottleneck.rat: unknown key (did you mean 'rate'?)"),
    ('[bottleneck]\nqueue = "codle"', "did you mean 'codel'?"),
    ('[bottlenek]\nrate = "10mbit"', "unknown table (did you mean [bottleneck]?)"),
    ('[bottleneck]\nrate = "10"', "bottleneck.rate: '10' needs a unit"),
    ('[bottleneck]\ndelay = "10m"', "bottleneck.delay: unknown time unit 'm'"),
    ('[bottleneck]\nloss = 1', "bottleneck.loss: 1 needs a unit"),
])
def test_mistakes_name_the_key_and_the_near_miss(extra, needle):
    with pytest.raises(SpecError) as e:
        loads_study(BASE + extra + "\n")
    assert needle in str(e.value)


def test_a_misspelt_algorithm_gets_a_suggestion():
    with pytest.raises(SpecError, match=r"unknown congestion control 'cubik' \(did you mean "
                       r"'cubic'\?\)"):
        loads_study(BASE.replace('to = "r1"', 'to = "r1"\ncc = "cubik"'))


# What each range the reference shows means to its parser: values it must accept and
# values it must refuse. A key with a range of another form fails until it is added here.
RANGE_PROBES = {
    ("time", "> 0"): (["1ms"], ["0s"]),
    ("time", "≥ 0"): (["0s"], ["-1ms"]),
    ("time", "≥ 1ms"): (["1ms"], ["999us"]),
    ("rate", "> 0"): (["1bit"], ["0bit"]),
    ("size", "> 0"): (["1b"], ["0b"]),
    ("size", "≥ 16MiB"): (["16MiB"], ["15MiB"]),
    ("size", "≥ 128MiB"): (["128MiB"], ["127MiB"]),
    ("probability", "0..100"): (["0%", "100%"], ["101%"]),
    ("buffer", "≥ 1"): (["1p", "1b"], ["0p"]),
    ("number", "≥ 0.01"): ([0.01], [0.009]),
    ("list", 'times increasing; rate ≥ 0 or "unlimited"'):
        ([[["0s", "1mbit"], ["1s", "unlimited"]], [["1s", "0mbit"], ["2s", "1mbit"]]],
         [[["1s", "1mbit"], ["0s", "2mbit"]], [["1s", "-1mbit"]]]),
}


def _probes(key):
    import re
    if key.type == "integer":
        m = re.fullmatch(r"(-?\d+)\.\.(-?\d+)", key.range)
        if m:
            lo, hi = int(m.group(1)), int(m.group(2))
            return [lo, hi], [lo - 1, hi + 1]
        m = re.fullmatch(r"≥ (-?\d+)", key.range)
        if m:
            return [int(m.group(1))], [int(m.group(1)) - 1]
    return RANGE_PROBES.get((key.type, key.range))


@pytest.mark.parametrize("name,key", [(f"{t}.{k}", key) for t, ks in keys.TABLES.items()
                                      for k, key in ks.items() if key.range],
                         ids=lambda x: x if isinstance(x, str) else "")
def test_each_range_in_the_reference_is_what_the_parser_accepts(name, key):
    probes = _probes(key)
    assert probes is not None, f"{name}: no probes for range {key.range!r} of a {key.type}"
    accepted, refused = probes
    for v in accepted:
        key(v)
    for v in refused:
        with pytest.raises(ValueError):
            key(v)


def test_the_reference_shows_units_and_ranges():
    page = reference.markdown()
    assert f"| `pairs` | integer | – | 1..{keys.MAX_PAIRS} | 1 |" in page
    assert "| `rate` | rate | bit/s | > 0 |" in page
    assert "| `loss` | probability | % | 0..100 | 0% |" in page


def test_a_study_may_insist_on_the_bpf_version_with_cca_():
    """cca_<name> is the BPF pack's <name> (cc.resolve): a study can sweep an algorithm
    over the kernel's module and ccarena's version side by side; a name without a BPF
    source has no cca_ form."""
    s = loads_study(BASE.replace("[[flow]]", '[[flow]]\nname = "f"')
                    + '[sweep]\n"flow.f.cc" = ["reno", "cca_reno"]\n')
    assert sorted(c.study.flows[0].cc for c in s.cells) == ["cca_reno", "reno"]
    with pytest.raises(SpecError, match=r"unknown congestion control 'cca_bbr'"):
        loads_study(BASE.replace('to = "r1"', 'to = "r1"\ncc = "cca_bbr"'))
