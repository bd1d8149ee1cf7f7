"""A run is judged on the algorithm each flow's sender ran (run/collect.check_algorithms)."""


def test_a_run_is_refused_for_another_algorithm_but_not_for_dctcp_s_own_reno_fallback():
    """The sender must run what was asked: another algorithm makes the run invalid; Linux's
    dctcp switching a connection without ECN to its dctcp-reno ops is dctcp's own rule."""
    import pandas as pd
    from ccarena.run.collect import check_algorithms
    meta = {"flows": [{"flow": 0, "name": "a", "cc_kernel": "dctcp"},
                      {"flow": 1, "name": "b", "cc_kernel": "cubic"}]}

    def conns(a, b):
        return pd.DataFrame({"flow": [0, 0, 1, 1], "side": ["send", "recv", "send", "recv"],
                             "cc": [a, "cubic", b, "cubic"]})
    assert check_algorithms(conns("dctcp", "cubic"), meta) == []
    assert check_algorithms(conns("dctcp-reno", "cubic"), meta) == []
    assert check_algorithms(conns("dctcp", "reno"), meta) == \
        ["flow b: asked for cubic, the kernel ran reno"]
    assert check_algorithms(conns("reno", "cubic"), meta) == \
        ["flow a: asked for dctcp, the kernel ran reno"]
    # a fallback belongs to its own algorithm only
    meta["flows"][1]["cc_kernel"] = "reno"
    assert check_algorithms(conns("dctcp", "dctcp-reno"), meta) == \
        ["flow b: asked for reno, the kernel ran dctcp-reno"]
