"""The one min-max helper (vizhooks._scale), against numbers worked out by hand and against each former
site's formula written out here."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from vizhooks._scale import min_max

# ----------------------------------------------------------------------------------------------
# min-max


def test_min_max_by_hand():
    torch.testing.assert_close(min_max(torch.tensor([2.0, 4.0, 6.0])), torch.tensor([0.0, 0.5, 1.0]))
    np.testing.assert_array_equal(min_max(np.array([[1.0, 3.0], [5.0, 9.0]], np.float32)),
                                  np.array([[0.0, 0.25], [0.5, 1.0]], np.float32))
    # lo and hi given (one scale for two maps): [1, 2] on 0 .. 4
    np.testing.assert_array_equal(min_max(np.array([1.0, 2.0]), 0.0, 4.0), np.array([0.25, 0.5]))
    # pytorch-grad-cam's form: (m - min) / (max - min + eps)
    torch.testing.assert_close(min_max(torch.tensor([1.0, 3.0]), eps=0.5), torch.tensor([0.0, 0.8]))
    small = torch.tensor([5e-7, 7e-7], dtype=torch.float64)  # where the epsilon shows: 2e-7 / 3e-7
    torch.testing.assert_close(min_max(small, eps=1e-7), torch.tensor([0.0, 2 / 3], dtype=torch.float64))


@pytest.mark.parametrize("make", [lambda: torch.full((3, 4), 7.0), lambda: np.full((3, 4), 7.0, np.float32),
                                  lambda: torch.full((2, 2), 7.0, dtype=torch.float64)])
def test_a_constant_map_is_zeros_never_nan(make):
    values = make()
    out = min_max(values)
    assert type(out) is type(values) and out.dtype == values.dtype and out.shape == values.shape
    assert (out == 0).all()
    assert (min_max(values, 3.0, 3.0) == 0).all()  # a given range of zero width too
    assert (min_max(values, eps=1e-7) == 0).all()


def test_min_max_is_each_former_site_bit_for_bit():
    gen = torch.Generator().manual_seed(3)
    t = torch.randn(1, 1, 7, 9, generator=gen) * 3 + 1
    # cam.py and faithfulness.py: 0-d tensors, float32
    lo, hi = t.min(), t.max()
    assert torch.equal(min_max(t), (t - lo) / (hi - lo))
    # sanity.py: the same in float64
    d = t.double()
    assert torch.equal(min_max(d), (d - d.min()) / (d.max() - d.min()))
    # render.py: float32 array, lo and hi as Python floats
    a = t.numpy()[0, 0]
    flo, fhi = float(a.min()), float(a.max())
    np.testing.assert_array_equal(min_max(a), (a - flo) / (fhi - flo))
    # sliding.py: a range given from outside the values
    np.testing.assert_array_equal(min_max(a, -5.0, 6.5), (a - -5.0) / (6.5 - -5.0))
    # explain.py (pytorch-grad-cam's scale_cam_image)
    shifted = t - t.min()
    assert torch.equal(min_max(t, eps=1e-7), shifted / (shifted.max() + 1e-7))
    with pytest.raises(TypeError):
        min_max(t, 0.0, 1.0, eps=1e-7)
