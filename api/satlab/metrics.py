"""The headline metrics of a run, by name (satlab.service.results.headline computes them; the
comparison, the expectations and the reproduction report name them). A module of its own so that
what parses scenarios (the host agents too) does not import the service's numeric stack."""

METRICS = (
    "goodput_bps",
    "total_goodput_bps",
    "completion_s",
    "mean_fct_s",
    "retransmissions",
    "jain_fairness",
)
