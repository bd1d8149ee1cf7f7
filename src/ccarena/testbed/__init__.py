"""The emulated network of one run: namespaces, veths, addresses, routes, sysctls, the link.

topology.py  pure plan of names and addresses (unit-tested without root)
build.py     applies a plan through netlink inside the namespaces; always tears down
kernel_link.py / user_link.py   the two link backends behind one interface
caps.py      what this kernel can do (probed, never guessed)
registry.py  live-run records so `ccarena cleanup` can remove what a crashed run left"""
from ccarena.testbed.topology import Topology, plan_dumbbell  # noqa: F401
