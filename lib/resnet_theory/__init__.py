"""resnet_theory: numerical companions to the theory of deep residual networks.

The library behind the book *Near the Identity*. Modules are named after the
mathematics they implement:

- :mod:`resnet_theory.landscape`: the two-parameter landscape of Shamir's
  Example 1, with all of its critical points;
- :mod:`resnet_theory.residual_unit`: a residual unit with a linear output,
  its objective, derivatives and the bounds of Shamir's Theorems 1 and 2;
- :mod:`resnet_theory.linear_predictors`: the best linear predictor (in a ball);
- :mod:`resnet_theory.projected_sgd`: projected SGD with a skip connection to
  the output (Shamir's Theorem 4);
- :mod:`resnet_theory.plotting`: the book's figure style.

Every function validates its inputs and raises :class:`ValueError` or
:class:`TypeError` naming the offending argument; iterative methods that blow
up raise :class:`DivergenceError` (a :class:`ValueError`).
"""

from ._validation import DivergenceError

__all__ = ["DivergenceError", "__version__"]
__version__ = "0.1.0"
