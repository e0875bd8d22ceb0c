"""The host agent: a small control API that runs inside every box of a testbed (a namespace, a
container or a physical host). The orchestrator only ever talks to agents."""
