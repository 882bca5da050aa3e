"""The one figure style of the book.

Every notebook calls :func:`use_book_style` once and draws with
:func:`subplots`, so that figures share fonts, colours and sizes and stay
readable at page width.

Examples
--------
>>> from resnet_theory import plotting
>>> plotting.use_book_style()
>>> fig, ax = plotting.subplots()
>>> ax.plot([1, 2], [1, 4], label="data")[0].get_color() == plotting.COLORS["blue"]
True
>>> plotting.close(fig)
"""

from __future__ import annotations

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

from . import _validation as _v

__all__ = [
    "COLORS",
    "MARKERS",
    "PAGE_WIDTH",
    "use_book_style",
    "subplots",
    "add_rate_reference",
    "mark_critical_points",
    "close",
]

#: Named colours (a colour-blind-safe palette, Okabe and Ito).
COLORS = {
    "blue": "#0072B2",
    "orange": "#E69F00",
    "green": "#009E73",
    "red": "#D55E00",
    "purple": "#CC79A7",
    "sky": "#56B4E9",
    "yellow": "#F0E442",
    "black": "#000000",
    "grey": "#7F7F7F",
}

#: Marker and colour for each kind of critical point.
MARKERS = {
    "minimum": {"marker": "o", "color": COLORS["green"]},
    "spurious minimum": {"marker": "X", "color": COLORS["red"]},
    "saddle": {"marker": "s", "color": COLORS["orange"]},
    "maximum": {"marker": "^", "color": COLORS["purple"]},
    "degenerate": {"marker": "D", "color": COLORS["grey"]},
}

#: Width of a full-page figure, in inches.
PAGE_WIDTH = 9.0

_STYLE = {
    "figure.dpi": 100,
    "savefig.dpi": 150,
    "figure.figsize": (PAGE_WIDTH * 0.66, PAGE_WIDTH * 0.42),
    "figure.constrained_layout.use": True,
    "font.size": 11,
    "axes.titlesize": 12,
    "axes.labelsize": 12,
    "legend.fontsize": 10,
    "xtick.labelsize": 10,
    "ytick.labelsize": 10,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "lines.linewidth": 2.0,
    "lines.markersize": 7,
    "image.cmap": "viridis",
    "axes.prop_cycle": mpl.cycler(color=[COLORS[c] for c in (
        "blue", "orange", "green", "red", "purple", "sky", "black")]),
    "svg.hashsalt": "near-the-identity",
}


def use_book_style():
    """Set matplotlib's rcParams to the book's style (idempotent).

    It also lets matplotlib's renderers share the layouts of mathtext labels
    (the private ``_share_mathtext_layouts`` of this module says how), which makes
    drawing the book's figures faster and changes no pixel.
    """
    mpl.rcParams.update(_STYLE)
    _share_mathtext_layouts()


def _share_mathtext_layouts():
    """Let every renderer reuse a mathtext layout another one has computed.

    Matplotlib lays out each mathtext string (a tick label such as ``$10^{-2}$``,
    a ``$...$`` in a label) with a pyparsing parser and keeps the result for the
    renderer that asked; but saving a figure makes new renderers (for the
    constrained-layout pass and for the image), and so does every figure, so the
    same labels were parsed again and again: about a fifth of the time the book's
    notebooks spend on their figures. The layout depends only on the string, the
    resolution, the font properties and the rendering flags, which are the key
    here, so it is kept once for all renderers of the same output type (the 2048
    most recent). The book's 46 figures come out byte for byte the same. Without
    that private method of ``matplotlib.mathtext.MathTextParser`` (another
    matplotlib), nothing is changed.
    """
    import functools

    from matplotlib import mathtext

    parse = getattr(mathtext.MathTextParser, "_parse_cached", None)
    compute = getattr(parse, "__wrapped__", None)
    if compute is None or getattr(parse, "shared_between_renderers", False):
        return
    owners = {}  # output type -> a parser of that type (they differ by nothing else)

    @functools.lru_cache(maxsize=2048)
    def layout(output_type, s, dpi, prop, antialiased, load_glyph_flags):
        return compute(owners[output_type], s, dpi, prop, antialiased, load_glyph_flags)

    def _parse_cached(self, s, dpi, prop, antialiased, load_glyph_flags):
        owners.setdefault(self._output_type, self)
        return layout(self._output_type, s, dpi, prop, antialiased, load_glyph_flags)

    _parse_cached.shared_between_renderers = True
    mathtext.MathTextParser._parse_cached = _parse_cached


def subplots(nrows=1, ncols=1, *, height=None, width=None, **kwargs):
    """:func:`matplotlib.pyplot.subplots` in the book's style and sizes.

    A single panel is two thirds of the page wide; several panels share the
    full page width. ``height`` defaults to a panel of aspect about 3:2.
    """
    use_book_style()
    nrows = _v.positive_int(nrows, "nrows")
    ncols = _v.positive_int(ncols, "ncols")
    if width is None:
        width = PAGE_WIDTH * (0.66 if ncols == 1 else 1.0)
    if height is None:
        height = min(width / ncols * 0.68, 4.2) * nrows
    return plt.subplots(nrows, ncols, figsize=(width, height), **kwargs)


def add_rate_reference(ax, x, *, rate, anchor, label=None, color=None):
    r"""Draw the reference line :math:`c\,x^{\mathrm{rate}}` through ``(x[0], anchor)``.

    For log-log plots of convergence rates: the line has slope ``rate``.
    """
    x = _v.finite_array(x, "x", ndim=1)
    if np.any(x <= 0):
        raise ValueError("x must be positive (the reference is a power law)")
    rate = _v.as_float(rate, "rate")
    anchor = _v.positive(anchor, "anchor")
    y = anchor * (x / x[0]) ** rate
    return ax.plot(x, y, linestyle="--", linewidth=1.5, color=color or COLORS["grey"],
                   label=label)[0]


def mark_critical_points(ax, points, *, spurious_above=None, annotate=True):
    """Mark critical points on a :math:`(w, v)` plot with the book's markers.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    points : sequence of :class:`~resnet_theory.landscape.CriticalPoint`
    spurious_above : float or None
        A minimum whose value exceeds this is drawn (and labelled) as a
        spurious minimum, the others are labelled global minima.
    annotate : bool
        Write each point's value next to it.
    """
    seen = set()
    for p in points:
        kind = p.kind
        label = kind
        if kind == "minimum" and spurious_above is not None:
            if p.value > spurious_above:
                kind = label = "spurious minimum"
            else:
                label = "global minimum"
        style = MARKERS[kind]
        label = None if label in seen else label
        seen.add(label)
        ax.scatter([p.w], [p.v], s=90, zorder=5, edgecolors="white", linewidths=1.2,
                   label=label, **style)
        if annotate:
            ax.annotate(f"F={p.value:.3g}", (p.w, p.v), textcoords="offset points",
                        xytext=(7, 6), fontsize=9, color=style["color"],
                        bbox={"boxstyle": "round,pad=0.15", "fc": "white", "alpha": 0.8,
                              "lw": 0})


def close(fig=None):
    """Close a figure (all figures when ``fig`` is None)."""
    plt.close("all" if fig is None else fig)
