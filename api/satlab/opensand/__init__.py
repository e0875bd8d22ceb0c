"""OpenSAND 8 interoperability: import an OpenSAND configuration directory as a scenario's link
(importer.py), export a link as an OpenSAND configuration (exporter.py), and the `opensand`
link backend's pre-flight check (backend.py)."""
