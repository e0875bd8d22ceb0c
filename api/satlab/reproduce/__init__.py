"""`satlab reproduce`: the reproductions of the source papers' experiments, run locally or on the
service, and their report (report.json, a self-contained report.html, docs/reproductions.md).

selection.py which scenarios; local.py local runs kept per commit; service.py experiments on the
service and the report of a commit from them; parts.py what one scenario contributes (aggregate
rows, verdicts); report.py the report and its renderings; pftk.py the PFTK throughput model drawn
beside NewReno; version.py the commit; command.py the command line.
"""
