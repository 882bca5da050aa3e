"""resnet_theory: numerical companions to the theory of deep residual networks.

The library behind the book *Near the Identity*. Modules are named after the
mathematics they implement:

- :mod:`resnet_theory.mlp`: plain and residual multilayer perceptrons with
  hand-written backpropagation (Chapters 1 and 2);
- :mod:`resnet_theory.linear_residual`: the population risk of a linear
  residual network and its gradient (Hardt and Ma);
- :mod:`resnet_theory.near_identity`: factorising a matrix with positive
  determinant into near-identity factors;
- :mod:`resnet_theory.expressivity`: Hardt and Ma's residual network that fits
  any finite labelled sample;
- :mod:`resnet_theory.smooth_maps`: near-identity layer maps of a smooth
  invertible map and Lipschitz seminorms (Bartlett, Evans and Long);
- :mod:`resnet_theory.deep_linear`: gradient descent in deep linear residual
  networks (Bartlett, Helmbold and Long);
- :mod:`resnet_theory.landscape`: the two-parameter landscape of Shamir's
  Example 1, with all of its critical points;
- :mod:`resnet_theory.residual_unit`: a residual unit with a linear output,
  its objective, derivatives and the bounds of Shamir's Theorems 1 and 2;
- :mod:`resnet_theory.linear_predictors`: the best linear predictor (in a ball);
- :mod:`resnet_theory.projected_sgd`: projected SGD with a skip connection to
  the output (Shamir's Theorem 4);
- :mod:`resnet_theory.plotting`: the book's figure style;
- :mod:`resnet_theory.checks` and :mod:`resnet_theory.homework`: checks for
  the auto-graded exercises, student editions and grading.

Every function validates its inputs and raises :class:`ValueError` or
:class:`TypeError` naming the offending argument; iterative methods that blow
up raise :class:`DivergenceError` (a :class:`ValueError`).
"""

from ._validation import DivergenceError

__all__ = ["DivergenceError", "__version__"]
__version__ = "0.1.0"
