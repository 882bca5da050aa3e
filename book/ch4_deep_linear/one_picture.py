"""Draw ``one_picture.svg``, the figure of Chapter 4's index page.

The chapter's organising picture for scalar layers (d = 1, L = 2): the rescaling
orbits (curves of equal product), the conserved imbalances, the balanced lines,
the wall of singular products, gradient flow from the identity and from an
unbalanced start, and a re-balancing move; beside it, the speed factor of the
balanced flow of the product, |w|^(2 - 2/L). The numbers drawn are computed here
and the facts the figure shows are asserted before it is written. Run from the
repository root after changing it:

    .venv/bin/python book/ch4_deep_linear/one_picture.py

The SVG is written without a date and with a fixed hash salt, so that a run on an
unchanged script reproduces the file.
"""

from pathlib import Path

OUT = Path(__file__).with_name("one_picture.svg")


def scalar_flow(phi, start, t_max):
    """Gradient flow of (theta_2 theta_1 - phi)^2 / 2 from ``start``: (times, path)."""
    import numpy as np
    import scipy.integrate

    def velocity(_, theta):
        error = theta[1] * theta[0] - phi
        return [-error * theta[1], -error * theta[0]]

    times = np.linspace(0.0, t_max, 400)
    sol = scipy.integrate.solve_ivp(velocity, (0.0, t_max), start, t_eval=times,
                                    rtol=1e-10, atol=1e-12)
    return times, sol.y.T


def draw(out=OUT):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from resnet_theory import deep_linear as dl
    from resnet_theory import plotting

    C = plotting.COLORS
    with matplotlib.rc_context():  # the book style for this figure only
        plotting.use_book_style()
        plt.rcParams["svg.hashsalt"] = "near-the-identity-ch4"

        # the paths and the facts the figure shows
        _, balanced_up = scalar_flow(2.0, [1.0, 1.0], 8.0)  # from I to Phi = 2
        _, balanced_down = scalar_flow(-0.5, [1.0, 1.0], 30.0)  # from I to Phi = -0.5
        _, unbalanced = scalar_flow(-0.5, [1.5, 0.5], 8.0)  # imbalance -2
        for path in (balanced_up, balanced_down):  # balance is kept: theta_1 = theta_2
            assert np.allclose(path[:, 0], path[:, 1], atol=1e-8)
        assert np.allclose(unbalanced[:, 1] ** 2 - unbalanced[:, 0] ** 2, -2.0, atol=1e-7)
        assert np.all(np.prod(balanced_down, axis=1) > 0)  # stalls before the wall
        assert np.prod(balanced_down[-1]) < 0.05
        assert unbalanced[-1, 1] < 0 < unbalanced[0, 1]  # crosses the wall
        assert np.isclose(np.prod(unbalanced[-1]), -0.5, atol=1e-6)
        off, on = np.array([1.8, 0.8]), np.sqrt(1.44) * np.ones(2)  # product 1.44
        assert np.isclose(np.prod(off), np.prod(on))
        for depth in (1, 2, 4):  # the speed factor is the library's balanced flow
            for w in (-0.7, 0.3, 1.5):
                speed = -dl.balanced_flow_velocity([[w]], [[w - 1.0]], depth)[0, 0]
                assert np.isclose(speed, depth * abs(w) ** (2 - 2 / depth))

        fig, (ax1, ax2) = plotting.subplots(1, 2, height=4.2)
        grid = np.linspace(-2.2, 2.2, 401)
        t1, t2 = np.meshgrid(grid, grid)
        ax1.contour(t1, t2, t1 * t2, levels=[-3, -1.5, -0.5, 0.5, 1.44, 3],
                    colors=[C["grey"]], linewidths=0.8, negative_linestyles="solid")
        ax1.contour(t1, t2, t2**2 - t1**2, levels=[-2, -1, 1, 2], colors=[C["purple"]],
                    linewidths=1.0, linestyles=":")
        ax1.plot([], [], color=C["grey"], lw=0.8, label=r"orbit: same product $w$")
        ax1.plot([], [], color=C["purple"], lw=1.0, ls=":",
                 label=r"conserved imbalance $\theta_2^2 - \theta_1^2$")
        ax1.plot(grid, grid, color=C["sky"], lw=1.2, ls="--", label="balanced")
        ax1.plot(grid, -grid, color=C["sky"], lw=1.2, ls="--")
        ax1.axhline(0, color=C["black"], lw=2.2, label="wall: $w = 0$")
        ax1.axvline(0, color=C["black"], lw=2.2)
        ax1.plot(*balanced_up.T, color=C["blue"], lw=2.5, label=r"flow from $I$")
        ax1.plot(*balanced_down.T, color=C["blue"], lw=2.5)
        ax1.plot(*unbalanced.T, color=C["orange"], lw=2.5, label="flow, unbalanced start")
        ax1.plot(*unbalanced[0], "o", color=C["orange"], ms=5)
        ax1.annotate(r"$\Phi = 2$", balanced_up[-1], xytext=(1.5, 1.75), fontsize=9)
        ax1.annotate(r"$\Phi = -0.5$", unbalanced[-1], xytext=(1.1, -0.75), fontsize=9)
        ax1.annotate(r"$\Phi = -0.5$: stalls", (0.0, 0.0), xytext=(0.12, 0.42), fontsize=9)
        along = np.linspace(off[0], on[0], 30)  # the orbit theta_2 theta_1 = 1.44
        ax1.plot(along, 1.44 / along, color=C["green"], lw=2.5, label="re-balancing")
        ax1.annotate("", xy=on, xytext=(along[-3], 1.44 / along[-3]),
                     arrowprops={"arrowstyle": "-|>", "color": C["green"], "lw": 2})
        ax1.plot(1, 1, "*", color=C["black"], ms=13, zorder=5)
        ax1.annotate("$I$", (1, 1), xytext=(0.72, 1.18), fontsize=12)
        ax1.set_xlim(-2.2, 2.2)
        ax1.set_ylim(-2.2, 2.2)
        ax1.set_aspect("equal")
        ax1.set_xlabel(r"$\theta_1$")
        ax1.set_ylabel(r"$\theta_2$")
        ax1.set_title("layers ($d = 1$, $L = 2$)", fontsize=11)
        ax1.legend(fontsize=7.5, loc="lower left", framealpha=0.95)

        w = np.linspace(-1.5, 2.0, 701)
        for depth, color in zip((1, 2, 4, 16), ("grey", "blue", "orange", "green"),
                                strict=True):
            ax2.plot(w, np.abs(w) ** (2 - 2 / depth), color=C[color], label=f"$L = {depth}$")
        ax2.axvline(1.0, color=C["black"], lw=0.8, ls=":")
        ax2.axvspan(-1.5, 0.0, color=C["red"], alpha=0.08)
        ax2.axvline(0.0, color=C["black"], lw=2.2)
        ax2.annotate("identity", (1.0, 2.6), xytext=(1.05, 2.6), fontsize=9)
        ax2.annotate(r"$\det W < 0$", (-1.4, 2.6), fontsize=9, color=C["red"])
        ax2.set_xlim(-1.5, 2.0)
        ax2.set_ylim(0, 3)
        ax2.set_xlabel(r"end-to-end $w = \theta_L \cdots \theta_1$")
        ax2.set_ylabel(r"speed factor $|w|^{2 - 2/L}$")
        ax2.set_title(r"balanced flow: $\dot w = -L|w|^{2-2/L}(w - \Phi)$", fontsize=11)
        ax2.legend(fontsize=8, loc="upper center")
        fig.savefig(out, format="svg", metadata={"Date": None})
        plt.close(fig)
    return out


if __name__ == "__main__":
    print(draw())
