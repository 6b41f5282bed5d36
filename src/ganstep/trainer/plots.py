"""Pictures a run writes: sample grids (PNG), 2D scatter plots and the report."""

from __future__ import annotations

import functools
import math
import sys
from pathlib import Path

import numpy as np

from . import checkpoint


def image_grid(
    images: np.ndarray, raw_range: tuple[float, float], path: Path, cols: int | None = None
) -> None:
    """Save images (N, C, H, W) with values in ``raw_range`` as one PNG grid, ``cols``
    images a row (default: as square as it gets)."""
    from PIL import Image

    picture = Image.fromarray(grid_pixels(images, raw_range, cols))
    checkpoint.atomic_write(Path(path), lambda f: picture.save(f, format="PNG"))


def grid_pixels(
    images: np.ndarray, raw_range: tuple[float, float], cols: int | None = None
) -> np.ndarray:
    """Images (N, C, H, W) in ``raw_range`` as one grid of 8-bit pixels: (H, W) for
    one channel, (H, W, C) for colour."""
    lo, hi = raw_range
    x = np.clip((images - lo) / (hi - lo), 0, 1)
    n, c, h, w = x.shape
    cols = cols or math.ceil(math.sqrt(n))
    rows = math.ceil(n / cols)
    pad = 2
    grid = np.ones((c, rows * (h + pad) + pad, cols * (w + pad) + pad), dtype=np.float64)
    for i in range(n):
        r, q = divmod(i, cols)
        y0, x0 = pad + r * (h + pad), pad + q * (w + pad)
        grid[:, y0 : y0 + h, x0 : x0 + w] = x[i]
    pixels = (grid * 255).round().astype(np.uint8)
    return pixels[0] if c == 1 else pixels.transpose(1, 2, 0)


# The scatter and the report are drawn with Pillow, not matplotlib: a run writes a
# scatter every --sample-every steps, and matplotlib's import, figures and PNGs took
# about 1.5 s of the 34 s default run (benchmarks/profile_default_run.py); Pillow
# draws each picture in a few milliseconds.
SIZE = 500  # the scatter's pixels, square
FRAME = (52, 30, 484, 462)  # left, top, right, bottom of the scatter's plotting area
PANEL = (400, 300)  # the report's panels, pixels
PANEL_FRAME = (64, 26, 388, 258)  # a panel's plotting area, within the panel
COLS = 3  # the report's panels a row
POINT_RGB = (31, 119, 180)
POINT_ALPHA = 0.4

Limits = tuple[float, float]


def scatter(points: np.ndarray, modes: np.ndarray | None, path: Path, title: str) -> None:
    """Save 2D samples (and the true modes) as a scatter plot PNG: equal axes with
    ticks, each sample a 2-pixel dot at ``POINT_ALPHA``, each mode a red cross."""
    from PIL import Image, ImageDraw

    view = _square_view(points, modes)
    picture = Image.fromarray(_dots(points, view))
    draw = ImageDraw.Draw(picture)
    _axes(draw, FRAME, *view)
    if modes is not None:
        for u, v in _to_pixels(_finite(modes), FRAME, *view):
            _cross(draw, u, v)
    draw.text((SIZE / 2, FRAME[1] / 2), title, fill="black", font=_font(13), anchor="mm")
    # The legend sits under the frame, clear of the samples (matplotlib's box hid a mode).
    u, v = FRAME[2] - 150, SIZE - 10
    draw.rectangle([(u - 1, v - 1), (u + 1, v + 1)], fill=POINT_RGB)
    draw.text((u + 7, v), "generated", fill="black", font=_font(11), anchor="lm")
    if modes is not None:
        _cross(draw, u + 85, v)
        draw.text((u + 93, v), "modes", fill="black", font=_font(11), anchor="lm")
    checkpoint.atomic_write(Path(path), lambda f: picture.save(f, format="PNG"))


def scatter_pixels(points: np.ndarray, modes: np.ndarray | None) -> np.ndarray:
    """The samples alone as (SIZE, SIZE, 3) 8-bit pixels: a pixel hit by k dots is
    the point colour at opacity 1 - (1 - POINT_ALPHA)^k, as stacked translucent
    markers look."""
    return _dots(points, _square_view(points, modes))


def _dots(points: np.ndarray, view: tuple[Limits, Limits]) -> np.ndarray:
    """:func:`scatter_pixels` in a view already chosen."""
    left, top, right, bottom = FRAME
    uv = _to_pixels(_finite(points), FRAME, *view)
    uv = np.floor(uv[np.isfinite(uv).all(1)]).astype(np.int64)
    hits = np.zeros(SIZE * SIZE, dtype=np.int64)
    for du in (0, 1):  # a 2x2-pixel dot
        for dv in (0, 1):
            u, v = uv[:, 0] + du, uv[:, 1] + dv
            inside = (u >= left) & (u < right) & (v >= top) & (v < bottom)
            hits += np.bincount(v[inside] * SIZE + u[inside], minlength=SIZE * SIZE)
    cover = 1 - (1 - POINT_ALPHA) ** np.arange(hits.max() + 1)[:, None]  # by hit count
    colours = 255 * (1 - cover) + np.asarray(POINT_RGB, dtype=np.float64) * cover
    return colours.round().astype(np.uint8)[hits.reshape(SIZE, SIZE)]


def report(rows: list[dict], path: Path) -> None:
    """Plot every numeric series of the metrics records ``rows`` against the step, one
    panel each, written atomically to ``path``."""
    from PIL import Image, ImageDraw

    keys = [
        k
        for k in dict.fromkeys(k for r in rows for k in r)
        if k not in ("step", "elapsed_s")
        and all(isinstance(r.get(k, 0), int | float) for r in rows)
    ]
    n_rows = max(1, math.ceil(len(keys) / COLS))
    picture = Image.new("RGB", (PANEL[0] * COLS, PANEL[1] * n_rows), "white")
    draw = ImageDraw.Draw(picture)
    for i, key in enumerate(keys):
        x0, y0 = PANEL[0] * (i % COLS), PANEL[1] * (i // COLS)
        box = (x0 + PANEL_FRAME[0], y0 + PANEL_FRAME[1], x0 + PANEL_FRAME[2], y0 + PANEL_FRAME[3])
        xy = _finite(np.array([(r["step"], r[key]) for r in rows if key in r], dtype=np.float64))
        xlim, ylim = _limits(xy[:, 0]), _limits(xy[:, 1])
        _axes(draw, box, xlim, ylim)
        line = [tuple(p) for p in _to_pixels(xy, box, xlim, ylim)]
        if len(line) > 1:
            draw.line(line, fill=POINT_RGB, width=2)
        for u, v in line:
            draw.ellipse([(u - 2.5, v - 2.5), (u + 2.5, v + 2.5)], fill=POINT_RGB)
        draw.text(((box[0] + box[2]) / 2, y0 + 13), key, fill="black", font=_font(13),
                  anchor="mm")  # fmt: skip
        draw.text(((box[0] + box[2]) / 2, y0 + PANEL[1] - 12), "step", fill="black",
                  font=_font(11), anchor="mm")  # fmt: skip
    checkpoint.atomic_write(Path(path), lambda f: picture.save(f, format="PNG"))


def _finite(xy: np.ndarray) -> np.ndarray:
    """The rows of (N, 2) ``xy`` whose values are all finite, as float64."""
    xy = np.asarray(xy, dtype=np.float64).reshape(-1, 2)
    return xy[np.isfinite(xy).all(1)]


def _limits(values: np.ndarray, margin: float = 0.05) -> Limits:
    """An axis' range: the values' with ``margin`` on each side; at least a millionth
    of their size, so one repeated value still gets ticks. Halves first, so values
    near float64's limit do not overflow."""
    if len(values) == 0:
        return -1.0, 1.0
    lo, hi = float(values.min()), float(values.max())
    centre, half = lo / 2 + hi / 2, hi / 2 - lo / 2
    return _around(centre, max(half * (1 + 2 * margin), 1e-6 * max(1.0, abs(lo), abs(hi))))


def _around(centre: float, half: float) -> Limits:
    """[centre - half, centre + half], cut at float64's largest values."""
    most = sys.float_info.max
    return max(centre - half, -most), min(centre + half, most)


def _square_view(points: np.ndarray, modes: np.ndarray | None) -> tuple[Limits, Limits]:
    """Equal x and y ranges around every finite point and mode."""
    xy = _finite(points if modes is None else np.concatenate([points, modes]))
    xs, ys = _limits(xy[:, 0]), _limits(xy[:, 1])
    half = max(xs[1] / 2 - xs[0] / 2, ys[1] / 2 - ys[0] / 2)
    return tuple(_around(lo / 2 + hi / 2, half) for lo, hi in (xs, ys))


def _to_pixels(xy: np.ndarray, box: tuple, xlim: Limits, ylim: Limits) -> np.ndarray:
    """Data coordinates (N, 2) as pixel columns and rows of ``box`` (y grows upward)."""
    left, top, right, bottom = box
    out = []
    for values, (lo, hi), start, length in ((xy[:, 0], xlim, left, right - left),
                                            (xy[:, 1], ylim, bottom, top - bottom)):  # fmt: skip
        centre, half = lo / 2 + hi / 2, hi / 2 - lo / 2
        out.append(start + ((values - centre) / half + 1) / 2 * length)
    return np.stack(out, 1)


def _ticks(lo: float, hi: float) -> list[float]:
    """Round tick values (1, 2 or 5 times a power of ten apart) within [lo, hi]."""
    raw = hi / 6 - lo / 6
    if not (math.isfinite(lo) and math.isfinite(hi) and math.isfinite(raw) and raw > 0):
        return []
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    return [k * step for k in range(math.ceil(lo / step), math.floor(hi / step) + 1)]


def _axes(draw, box: tuple, xlim: Limits, ylim: Limits) -> None:
    """The frame of ``box`` with ticks and their values below and to the left."""
    left, top, right, bottom = box
    font = _font(11)
    for value in _ticks(*xlim):
        u = _to_pixels(np.array([[value, ylim[0]]]), box, xlim, ylim)[0, 0]
        draw.line([(u, bottom), (u, bottom + 4)], fill="black")
        draw.text((u, bottom + 6), f"{value:g}", fill="black", font=font, anchor="mt")
    for value in _ticks(*ylim):
        v = _to_pixels(np.array([[xlim[0], value]]), box, xlim, ylim)[0, 1]
        draw.line([(left - 4, v), (left, v)], fill="black")
        draw.text((left - 6, v), f"{value:g}", fill="black", font=font, anchor="rm")
    draw.rectangle(box, outline="black")


def _cross(draw, u: float, v: float) -> None:
    """A mode's marker: a thin red x, open enough to show the samples under it."""
    draw.line([(u - 4, v - 4), (u + 4, v + 4)], fill="red")
    draw.line([(u - 4, v + 4), (u + 4, v - 4)], fill="red")


@functools.cache
def _font(size: int):
    from PIL import ImageFont

    return ImageFont.load_default(size=size)
