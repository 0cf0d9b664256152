"""Issue 34 item 1: docs/figure-gallery.md shows every kind of figure at the three documented sizes, and its
images (``make figure-gallery``) are current: drawn again here, each matches the committed one."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from matplotlib.image import imread

REPO_ROOT = Path(__file__).resolve().parents[2]
PAGE = REPO_ROOT / "docs" / "figure-gallery.md"


def _gallery():
    spec = importlib.util.spec_from_file_location("figure_gallery", REPO_ROOT / "docs" / "_hooks" / "figure_gallery.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_page_shows_every_kind_at_every_size_and_nothing_else():
    gallery = _gallery()
    expected = {f"{kind}-{size}.png" for kind in gallery.KINDS for size in gallery.SIZES}
    committed = {path.name for path in gallery.GALLERY.glob("*.png")}
    assert committed == expected
    text = PAGE.read_text(encoding="utf-8")
    assert all(f"(images/figures/{name})" in text for name in expected)


@pytest.mark.slow
def test_every_image_is_current_and_fits(tmp_path):
    """Drawn again: no layout problem, and the same picture (a few pixels may differ where font rasterising does)."""
    gallery = _gallery()
    stale = []
    for name, problems in gallery.draw(tmp_path):
        assert not problems, f"{name}: {problems}"
        new, old = imread(tmp_path / name), imread(gallery.GALLERY / name)
        if new.shape != old.shape or np.mean(np.abs(new - old) > 0.1) > 0.002:
            stale.append(name)
    assert not stale, f"not current (run `make figure-gallery`): {stale}"
