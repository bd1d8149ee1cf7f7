"""The emulated network of one run: namespaces, veths, addresses, routes, sysctls, the link.

topology.py     pure plan of names and addresses (unit-tested without root)
netns.py        namespaces created and entered in-process; sysctls and offloads inside them
build.py        applies a plan through netlink inside the namespaces; always tears down
cgroups.py      per-host CPU and memory limits
backend.py      which link backend a study gets
kernel_link.py / user_link.py   the two link backends behind one interface
caps.py         what this kernel can do (probed, never guessed)
proc.py         child processes with the READY/GO/DONE handshake
leftovers.py    live-run records so `ccarena cleanup` can remove what a crashed run left"""
from ccarena.testbed.topology import Topology, plan_dumbbell  # noqa: F401
