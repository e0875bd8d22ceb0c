"""Which kind of testbed a run gets, chosen by the environment (SATLAB_TESTBED):

  namespaces  (default) one network namespace per box, built for the run and removed after it
              (satlab.testbed.testbed); needs root on the machine, or a privileged container
  containers  the boxes of a Docker Compose deployment, containers that outlive the run
              (satlab.testbed.containers)

Both give the runner the same Testbed interface and the same host agents.
"""

from __future__ import annotations

import os

from satlab.testbed.testbed import Testbed, TestbedError

KINDS = ("namespaces", "containers")


def create_testbed(
    servers: int = 1,
    clients: int = 1,
    mtu: int = 1500,
    gateway: bool = False,
    hops: list[int] | None = None,
) -> Testbed:
    """`hops`: the cross hosts at each end of each terrestrial hop (satlab.testbed.hops)."""
    kind = os.environ.get("SATLAB_TESTBED", "namespaces")
    if kind == "namespaces":
        return Testbed(servers, clients, mtu, gateway=gateway, hops=hops)
    if kind == "containers":
        from satlab.testbed.containers import ContainerTestbed

        return ContainerTestbed(servers, clients, mtu, gateway=gateway, hops=hops)
    raise TestbedError(f"SATLAB_TESTBED: {kind!r} is not one of {', '.join(KINDS)}")
