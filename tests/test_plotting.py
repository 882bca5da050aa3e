"""Specification of resnet_theory.plotting (the book's figure style)."""

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.colors import to_hex
from resnet_theory import plotting
from resnet_theory.landscape import CriticalPoint, critical_points


@pytest.fixture(autouse=True)
def _isolated_figures():
    """Restore matplotlib's settings and close every figure after each test."""
    with mpl.rc_context():
        yield
    plt.close("all")


def point(kind, value, w=0.0, v=0.0):
    return CriticalPoint(w=w, v=v, kind=kind, value=value, eigenvalues=(1.0, 2.0))


def legend_labels(ax):
    return [text.get_text() for text in ax.legend().get_texts()]


# --- style ----------------------------------------------------------------------------


def test_use_book_style_sets_the_colour_cycle():
    plotting.use_book_style()
    cycle = [to_hex(c) for c in mpl.rcParams["axes.prop_cycle"].by_key()["color"]]
    expected = [
        plotting.COLORS[name].lower()
        for name in ("blue", "orange", "green", "red", "purple", "sky", "black")
    ]
    assert cycle == expected


def test_use_book_style_is_idempotent():
    plotting.use_book_style()
    first = dict(mpl.rcParams)
    plotting.use_book_style()
    assert dict(mpl.rcParams) == first


def test_lines_drawn_in_the_book_style_start_with_the_blue_of_the_palette():
    plotting.use_book_style()
    fig, ax = plt.subplots()
    (line,) = ax.plot([1, 2], [1, 4])
    assert to_hex(line.get_color()) == plotting.COLORS["blue"].lower()


def test_every_kind_of_critical_point_has_a_marker():
    kinds = {"minimum", "spurious minimum", "saddle", "maximum", "degenerate"}
    assert set(plotting.MARKERS) == kinds
    assert all({"marker", "color"} <= set(style) for style in plotting.MARKERS.values())


# --- subplots -------------------------------------------------------------------------


@pytest.mark.parametrize(("nrows", "ncols"), [(1, 2), (2, 1), (2, 3)])
def test_subplots_returns_the_requested_grid(nrows, ncols):
    fig, axes = plotting.subplots(nrows, ncols, squeeze=False)
    assert axes.shape == (nrows, ncols)
    assert len(fig.axes) == nrows * ncols


def test_subplots_squeezes_a_single_row_like_matplotlib():
    _, axes = plotting.subplots(1, 3)
    assert axes.shape == (3,)


def test_subplots_with_one_panel_returns_a_single_axes():
    fig, ax = plotting.subplots()
    assert isinstance(ax, mpl.axes.Axes)


def test_subplots_single_panel_is_two_thirds_of_the_page_wide():
    fig, _ = plotting.subplots()
    width, height = fig.get_size_inches()
    assert width == pytest.approx(0.66 * plotting.PAGE_WIDTH)
    assert height == pytest.approx(min(width * 0.68, 4.2))


def test_subplots_several_panels_share_the_full_page_width():
    fig, _ = plotting.subplots(2, 3)
    width, height = fig.get_size_inches()
    assert width == pytest.approx(plotting.PAGE_WIDTH)
    assert height == pytest.approx(2 * min(plotting.PAGE_WIDTH / 3 * 0.68, 4.2))


def test_subplots_honours_explicit_sizes():
    fig, _ = plotting.subplots(width=4.0, height=3.0)
    assert tuple(fig.get_size_inches()) == pytest.approx((4.0, 3.0))


def test_subplots_applies_the_book_style():
    plotting.subplots()
    assert mpl.rcParams["svg.hashsalt"] == "near-the-identity"


def test_subplots_passes_other_arguments_to_matplotlib():
    _, axes = plotting.subplots(1, 2, sharey=True)
    assert axes[0].get_shared_y_axes().joined(axes[0], axes[1])


@pytest.mark.parametrize(("nrows", "ncols"), [(0, 1), (1, -1)])
def test_subplots_rejects_non_positive_grid_sizes(nrows, ncols):
    with pytest.raises(ValueError, match="nrows|ncols"):
        plotting.subplots(nrows, ncols)


def test_subplots_rejects_grid_sizes_that_are_not_integers():
    with pytest.raises(TypeError, match="ncols"):
        plotting.subplots(1, 2.0)


def test_close_closes_one_figure_or_all():
    first, _ = plotting.subplots()
    second, _ = plotting.subplots()
    plotting.close(first)
    assert plt.get_fignums() == [second.number]
    plotting.close()
    assert plt.get_fignums() == []


# --- rate reference lines -------------------------------------------------------------


@pytest.mark.parametrize("rate", [-0.5, -1.0, 2.0])
def test_add_rate_reference_draws_a_line_of_the_requested_slope_on_log_log(rate):
    fig, ax = plotting.subplots()
    ax.set_xscale("log")
    ax.set_yscale("log")
    x = np.geomspace(3.0, 3000.0, 25)
    line = plotting.add_rate_reference(ax, x, rate=rate, anchor=2.0)
    xdata, ydata = line.get_xdata(), line.get_ydata()
    np.testing.assert_array_equal(xdata, x)
    slopes = np.diff(np.log(ydata)) / np.diff(np.log(xdata))
    np.testing.assert_allclose(slopes, rate, rtol=1e-10)


def test_add_rate_reference_passes_through_the_anchor_at_the_first_x():
    _, ax = plotting.subplots()
    line = plotting.add_rate_reference(ax, [10.0, 20.0, 40.0], rate=-1.0, anchor=0.3)
    np.testing.assert_allclose(line.get_ydata(), [0.3, 0.15, 0.075])


def test_add_rate_reference_is_a_dashed_grey_line_by_default():
    _, ax = plotting.subplots()
    line = plotting.add_rate_reference(ax, [1.0, 2.0], rate=1.0, anchor=1.0)
    assert line.get_linestyle() == "--"
    assert to_hex(line.get_color()) == plotting.COLORS["grey"].lower()
    assert line in ax.get_lines()


def test_add_rate_reference_uses_the_label_and_colour_given():
    _, ax = plotting.subplots()
    line = plotting.add_rate_reference(
        ax,
        [1.0, 2.0],
        rate=1.0,
        anchor=1.0,
        label="$t^{-1/2}$",
        color=plotting.COLORS["red"],
    )
    assert line.get_label() == "$t^{-1/2}$"
    assert to_hex(line.get_color()) == plotting.COLORS["red"].lower()


@pytest.mark.parametrize("x", [[0.0, 1.0], [-1.0, 1.0]])
def test_add_rate_reference_rejects_non_positive_x(x):
    _, ax = plotting.subplots()
    with pytest.raises(ValueError, match="x must be positive"):
        plotting.add_rate_reference(ax, x, rate=1.0, anchor=1.0)


@pytest.mark.parametrize("anchor", [0.0, -1.0])
def test_add_rate_reference_rejects_non_positive_anchor(anchor):
    _, ax = plotting.subplots()
    with pytest.raises(ValueError, match="anchor"):
        plotting.add_rate_reference(ax, [1.0, 2.0], rate=1.0, anchor=anchor)


def test_add_rate_reference_rejects_non_finite_rate():
    _, ax = plotting.subplots()
    with pytest.raises(ValueError, match="rate"):
        plotting.add_rate_reference(ax, [1.0, 2.0], rate=np.nan, anchor=1.0)


# --- critical points ------------------------------------------------------------------


def test_mark_critical_points_adds_one_legend_label_per_kind():
    _, ax = plotting.subplots()
    points = [
        point("minimum", 0.0, 1.0, 0.0),
        point("minimum", 0.0, 2.0, 0.0),
        point("saddle", 0.5, 0.0, -1.0),
        point("saddle", 0.6, 0.0, 1.0),
        point("maximum", 2.0, 3.0, 3.0),
    ]
    plotting.mark_critical_points(ax, points)
    assert sorted(legend_labels(ax)) == ["maximum", "minimum", "saddle"]


def test_mark_critical_points_draws_every_point_where_it_lies():
    _, ax = plotting.subplots()
    points = critical_points(eps=1.0, weight_decay=0.25)
    plotting.mark_critical_points(ax, points)
    offsets = np.concatenate([c.get_offsets() for c in ax.collections])
    np.testing.assert_allclose(offsets, [(p.w, p.v) for p in points])


def test_mark_critical_points_uses_the_marker_colour_of_each_kind():
    _, ax = plotting.subplots()
    plotting.mark_critical_points(ax, [point("saddle", 0.5)])
    (collection,) = ax.collections
    assert (
        to_hex(collection.get_facecolor()[0])
        == plotting.MARKERS["saddle"]["color"].lower()
    )


def test_mark_critical_points_marks_a_high_minimum_as_spurious():
    _, ax = plotting.subplots()
    points = [
        point("minimum", 0.0, 1.0, 0.0),
        point("minimum", 0.52, -1.0, -1.6),
        point("saddle", 0.6, -0.3, -1.0),
    ]
    plotting.mark_critical_points(ax, points, spurious_above=0.1)
    assert sorted(legend_labels(ax)) == ["global minimum", "saddle", "spurious minimum"]
    spurious = ax.collections[1]
    assert to_hex(spurious.get_facecolor()[0]) == (
        plotting.MARKERS["spurious minimum"]["color"].lower()
    )


def test_mark_critical_points_labels_minima_up_to_the_threshold_as_global():
    _, ax = plotting.subplots()
    plotting.mark_critical_points(
        ax, [point("minimum", 0.1), point("minimum", 0.05)], spurious_above=0.1
    )
    assert legend_labels(ax) == ["global minimum"]
    (first, second) = ax.collections
    for collection in (first, second):
        assert to_hex(collection.get_facecolor()[0]) == (
            plotting.MARKERS["minimum"]["color"].lower()
        )


def test_mark_critical_points_gives_one_label_to_several_spurious_minima():
    _, ax = plotting.subplots()
    points = [point("minimum", 0.0), point("minimum", 0.5), point("minimum", 0.7)]
    plotting.mark_critical_points(ax, points, spurious_above=0.1)
    assert sorted(legend_labels(ax)) == ["global minimum", "spurious minimum"]


def test_mark_critical_points_without_threshold_never_marks_spurious_minima():
    _, ax = plotting.subplots()
    plotting.mark_critical_points(ax, [point("minimum", 0.0), point("minimum", 5.0)])
    assert legend_labels(ax) == ["minimum"]


def test_mark_critical_points_annotates_each_value():
    _, ax = plotting.subplots()
    plotting.mark_critical_points(
        ax, [point("minimum", 0.0755), point("saddle", 0.6335)]
    )
    assert sorted(t.get_text() for t in ax.texts) == ["F=0.0755", "F=0.633"]


def test_mark_critical_points_without_annotation_writes_no_text():
    _, ax = plotting.subplots()
    plotting.mark_critical_points(ax, [point("minimum", 0.0)], annotate=False)
    assert len(ax.texts) == 0


def test_mark_critical_points_of_an_empty_list_draws_nothing():
    _, ax = plotting.subplots()
    plotting.mark_critical_points(ax, [])
    assert len(ax.collections) == 0
