import math

from satlab.stats import mean_ci95


def test_ci_matches_the_student_t_table() -> None:
    est = mean_ci95([1.0, 2.0, 3.0, 4.0])
    assert est.mean == 2.5
    # t(0.975, 3) = 3.182; sd = 1.291; half width = 3.182 * 1.291 / 2
    assert math.isclose(est.half_width or 0, 3.182446 * 1.2909944 / 2, rel_tol=1e-5)


def test_one_sample_has_no_interval() -> None:
    assert mean_ci95([5.0]).half_width is None
    assert mean_ci95([5.0]).format() == "5.00"
    assert mean_ci95([]).format() == "-"
