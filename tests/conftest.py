"""Shared test configuration: a deterministic Hypothesis profile, a headless backend."""

import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # before anything imports matplotlib.pyplot

from hypothesis import HealthCheck, settings  # noqa: E402
from hypothesis.configuration import set_hypothesis_home_dir  # noqa: E402

# Hypothesis caches data under ./.hypothesis by default. pyproject.toml replaces
# pytest's default `norecursedirs`, so a .hypothesis directory in the repository
# makes the Hypothesis pytest plugin warn at collection, which is an error under
# `filterwarnings = error`. Keep that cache out of the repository.
set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "resnet_theory-hypothesis")

settings.register_profile(
    "resnet_theory",
    derandomize=True,
    deadline=None,
    max_examples=60,
    suppress_health_check=[HealthCheck.too_slow],
    database=None,  # derandomized runs need no example database
)
settings.load_profile("resnet_theory")
