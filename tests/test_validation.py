"""The shared input checks of resnet_theory (``_validation``)."""

import numpy as np
import pytest
from resnet_theory._validation import finite_array


@pytest.mark.parametrize("value", [np.eye(2) + 0j, [1.0, 2j], np.array([1.0, 0.5j])])
def test_complex_input_is_refused_not_cut_to_its_real_part(value):
    with pytest.raises(TypeError, match="x must be an array of real numbers, got complex"):
        finite_array(value, "x")


def test_real_input_of_any_numeric_type_becomes_a_float_array():
    assert finite_array([[1, 2], [3, 4]], "x").dtype == np.float64


def test_ragged_input_is_refused_with_the_argument_named():
    with pytest.raises(TypeError, match="x must be an array of real numbers"):
        finite_array([[1, 2], [3]], "x")
