"""OpenSAND 8 interoperability: import an OpenSAND configuration directory as a scenario's link
(importer.py), export a link as an OpenSAND configuration (exporter.py), and the `opensand` link
backend: OpenSAND's entities run as a run's link (runtime.py), their statistics read from their
local output files (probes.py)."""
