"""SatLab: a GEO satellite channel emulator service (API, workers, testbed orchestrator, CLI)."""

__version__ = "0.1.0"
