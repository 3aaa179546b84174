"""MAD outlier rule on hand-computed examples."""

import numpy as np
import pytest

from virtbench.stats import mad_outliers, modified_z_scores


def test_hand_computed_example() -> None:
    # median 12.5; |x - median| = 2.5 1.5 0.5 0.5 1.5 37.5 -> MAD = 1.5
    # M(50) = 0.6745 * 37.5 / 1.5 = 16.8625 ; M(10) = 0.6745 * -2.5 / 1.5 = -1.1242
    x = [10.0, 11.0, 12.0, 13.0, 14.0, 50.0]
    z = modified_z_scores(x)
    assert z[5] == pytest.approx(16.8625)
    assert z[0] == pytest.approx(-1.124166, rel=1e-5)
    assert mad_outliers(x).tolist() == [False, False, False, False, False, True]


def test_threshold_is_strict_and_two_sided() -> None:
    # median 0, MAD 1 -> M = 0.6745 x ; 3.5 / 0.6745 = 5.189
    x = [-1.0, -1.0, 0.0, 1.0, 1.0, 5.18, -5.2, 0.0, 0.0]
    assert mad_outliers(x).tolist() == [False] * 5 + [False, True, False, False]
    assert mad_outliers(x, threshold=3.0).tolist()[5] is True


def test_mad_zero_falls_back_to_mean_absolute_deviation() -> None:
    # MAD = 0 (4 of 5 equal). MeanAD = 1/5 = 0.2 ; M(6) = 0.7979 * 1 / 0.2 = 3.9895 > 3.5
    x = [5.0, 5.0, 5.0, 5.0, 6.0]
    assert modified_z_scores(x)[4] == pytest.approx(3.9895)
    assert mad_outliers(x).tolist() == [False, False, False, False, True]
    # with 4 values the lone deviant scores 0.7979 * 4 = 3.19: not flagged
    assert not mad_outliers([5.0, 5.0, 5.0, 6.0]).any()


def test_constant_and_empty_samples_have_no_outliers() -> None:
    assert not mad_outliers([2.0] * 10).any()
    assert mad_outliers([]).shape == (0,)
    assert mad_outliers(np.array([1.0, 2.0])).dtype == np.bool_


def test_bad_threshold() -> None:
    with pytest.raises(ValueError, match="threshold"):
        mad_outliers([1.0, 2.0], threshold=0)
