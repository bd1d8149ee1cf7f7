"""Testbed.ipr refuses other threads: pyroute2 would silently use the root namespace."""
import threading
from types import SimpleNamespace

import pytest

from ccarena.errors import TestbedError
from ccarena.testbed.build import Testbed


def test_ipr_from_another_thread_is_an_error_not_the_root_namespace():
    tb = Testbed(SimpleNamespace(run_id="r-threads"), study=None)
    caught = []

    def use():
        try:
            tb.ipr("ccarena-nonexistent")
        except TestbedError as e:
            caught.append(str(e))

    t = threading.Thread(target=use, name="sampler")
    t.start()
    t.join()
    assert len(caught) == 1 and "'sampler'" in caught[0] and "r-threads" in caught[0]
    assert tb._ipr == {}        # nothing was opened on the way
