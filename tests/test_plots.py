"""The pictures a run writes (the scatter of 2D samples, report.png), read back from
their PNGs."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from PIL import Image

from ganstep.trainer import plots


def _read(path) -> np.ndarray:
    with Image.open(path) as im:
        assert im.size == (plots.SIZE, plots.SIZE) and im.mode == "RGB"
        return np.asarray(im).astype(int)


def _blue(px: np.ndarray) -> np.ndarray:
    return (px[..., 2] > px[..., 0] + 40) & (px[..., 2] > 150)


def _red(px: np.ndarray) -> np.ndarray:
    return (px[..., 0] > 200) & (px[..., 1] < 80) & (px[..., 2] < 80)


def test_samples_land_where_they_are_and_modes_are_crossed(tmp_path):
    rng = np.random.default_rng(0)
    left = rng.normal([-3.0, 1.0], 0.05, size=(400, 2))
    right = rng.normal([3.0, 1.0], 0.05, size=(100, 2))
    modes = np.array([[-3.0, 1.0], [3.0, 1.0]])
    plots.scatter(np.concatenate([left, right]), modes, tmp_path / "s.png", "two modes")
    px = _read(tmp_path / "s.png")
    frame = px[plots.FRAME[1] + 2 : plots.FRAME[3] - 1, plots.FRAME[0] + 2 : plots.FRAME[2] - 1]
    half = frame.shape[1] // 2
    rows, cols = np.nonzero(_blue(frame))
    red_rows, red_cols = np.nonzero(_red(frame))
    for side, red_side in ((cols < half, red_cols < half), (cols >= half, red_cols >= half)):
        assert red_side.sum() > 5  # each blob's middle is its mode's cross
        assert abs(rows[side].mean() - red_rows[red_side].mean()) < 2
        assert abs(cols[side].mean() - red_cols[red_side].mean()) < 2
    ink = 255 - frame[rows, cols, 0]  # 400 dots against 100: darker, not just wider
    assert ink[cols < half].sum() > 1.5 * ink[cols >= half].sum() > 0
    assert (frame[:, half - 20 : half + 20] == 255).all()  # nothing between the modes
    # where the 400 dots pile up the colour is the point colour, near opaque
    darkest = frame[_blue(frame)].min(0)
    assert np.abs(darkest - np.array(plots.POINT_RGB)).max() <= 2


def test_dots_stack_as_translucent_markers():
    """A pixel under k dots is the point colour at opacity 1 - 0.6^k."""
    points = np.array([[0.0, 0.0], [10.0, 10.0], [10.0, 10.0], [10.0, 10.0]])
    px = plots.scatter_pixels(points, None).astype(float)
    colours = {tuple(c) for c in px.reshape(-1, 3)}
    for k in (1, 3):
        cover = 1 - (1 - plots.POINT_ALPHA) ** k
        want = np.round(255 * (1 - cover) + np.array(plots.POINT_RGB) * cover)
        assert tuple(want) in colours
    hit = (px != 255).any(2)
    assert hit.sum() == 8  # two 2x2 dots, nothing else


def test_no_modes_no_crosses_and_bad_values_are_left_out(tmp_path):
    points = np.array([[0.0, 0.0], [np.nan, 1.0], [np.inf, 2.0], [1.0, 1.0]])
    plots.scatter(points, None, tmp_path / "s.png", "t")
    px = _read(tmp_path / "s.png")
    assert not _red(px).any()
    assert _blue(px).sum() >= 8


@settings(max_examples=40, deadline=None)
@given(
    arrays(
        np.float64,
        st.tuples(st.integers(0, 20), st.just(2)),
        elements=st.floats(allow_nan=True, allow_infinity=True),
    ),
    st.booleans(),
)
def test_any_values_draw_a_picture(tmp_path_factory, points, with_modes):
    """Empty, repeated, huge (near float64's limit) or non-finite values: a picture,
    never an exception or a warning."""
    import warnings

    path = tmp_path_factory.mktemp("p") / "s.png"
    modes = points[:3] if with_modes else None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plots.scatter(points, modes, path, "any")
    _read(path)


def test_report_draws_a_panel_per_numeric_series(tmp_path):
    rows = [
        {"step": 100, "loss_d": 1.0, "hq_fraction": 0.1, "flat": 3.0, "note": "x"},
        {"step": 200, "loss_d": float("nan"), "hq_fraction": 0.5, "flat": 3.0},
        {"step": 300, "loss_d": 0.5, "hq_fraction": 0.9, "flat": 3.0, "fid": 7.0},
    ]
    plots.report(rows, tmp_path / "report.png")
    with Image.open(tmp_path / "report.png") as im:
        px = np.asarray(im.convert("RGB")).astype(int)
    w, h = plots.PANEL
    assert px.shape == (2 * h, 3 * w, 3)  # loss_d, hq_fraction, flat, fid: two rows of three
    panels = [px[r * h : (r + 1) * h, c * w : (c + 1) * w] for r in (0, 1) for c in (0, 1, 2)]
    for panel in panels[:4]:
        assert _blue(panel).sum() > 10  # every series drawn, one point (fid) included
    assert (panels[5] == 255).all() and (panels[4] == 255).all()  # no "note" panel
    # hq_fraction rises: its leftmost blue pixels sit lower than its rightmost
    rows_, cols_ = np.nonzero(_blue(panels[1]))
    left_row = rows_[cols_ <= cols_.min() + 3].mean()
    right_row = rows_[cols_ >= cols_.max() - 3].mean()
    assert left_row > right_row + 100


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=0, max_size=8))
def test_report_takes_any_values(tmp_path_factory, values):
    import warnings

    rows = [{"step": 10 * i, "x": v} for i, v in enumerate(values)]
    path = tmp_path_factory.mktemp("r") / "report.png"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plots.report(rows, path)
    with Image.open(path) as im:
        assert im.size == (3 * plots.PANEL[0], plots.PANEL[1])
