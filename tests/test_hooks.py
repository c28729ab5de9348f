"""The one owner of hook work (vizhooks._hooks.hooked) and the one min-max helper (vizhooks.render.scale).

Hooks are counted from torch's own dicts (tests.helpers.count_hooks) and tensors' ``_backward_hooks``;
the lock is tried from another thread; a module after the stop layer counts its calls; min-max is
checked against numbers worked out by hand and against each former site's formula written out here.
"""

from __future__ import annotations

import contextlib
import threading

import numpy as np
import pytest
import torch
from torch import nn

from tests.helpers import count_hooks
from vizhooks._hooks import HELD, StopForward, check_ran, hooked, lock_if_free, model_lock
from vizhooks.render.scale import min_max

SENTENCE = "Layer 'head' did not run in the model's forward pass; choose a layer that does."


class Counted(nn.Module):
    """Identity that counts its calls: proof that a pass went on (or did not) past a layer."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return x


class Net(nn.Module):
    """conv -> BatchNorm -> ReLU -> conv -> counted tail; ``head`` exists but never runs."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.conv1 = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(4, 2, 3, padding=1)
        self.tail = Counted()
        self.head = nn.Linear(2, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.tail(self.conv2(self.relu(self.bn(self.conv1(x)))))


def _x() -> torch.Tensor:
    return torch.randn(1, 3, 8, 8, generator=torch.Generator().manual_seed(1))


def _every_kind(hooks, model: Net, kept: list[torch.Tensor]) -> None:
    """A forward, a forward-pre, a full backward and (from the forward hook) a tensor hook."""
    def forward_hook(_m: nn.Module, _a: object, out: torch.Tensor) -> None:
        kept.append(out)
        hooks.tensor_hook(out, lambda grad: None)

    hooks.forward_hook(model.conv2, forward_hook)
    hooks.forward_pre_hook("conv1", lambda _m, _a: None)
    hooks.full_backward_hook(model.conv1, lambda _m, _gi, _go: None)


def _forward_backward(model: Net) -> None:
    with torch.enable_grad():
        model(_x().requires_grad_(True)).sum().backward()


# ----------------------------------------------------------------------------------------------
# hooks removed


def test_every_hook_is_removed_after_the_block():
    model = Net()
    kept: list[torch.Tensor] = []
    with hooked(model) as hooks:
        _every_kind(hooks, model, kept)
        _forward_backward(model)
        assert count_hooks(model) == 3 and len(kept[0]._backward_hooks) == 1  # the count can see them
    assert count_hooks(model) == 0
    assert not kept[0]._backward_hooks


def test_every_hook_is_removed_when_the_block_raises_and_the_error_goes_on():
    model = Net()
    kept: list[torch.Tensor] = []
    with pytest.raises(RuntimeError, match="in the middle"), hooked(model) as hooks:
        _every_kind(hooks, model, kept)
        _forward_backward(model)
        raise RuntimeError("in the middle")
    assert count_hooks(model) == 0
    assert not kept[0]._backward_hooks
    # a stop layer's own hook too, when a hook raises inside the pass
    with pytest.raises(ZeroDivisionError), hooked(model, stop_after=["conv2"]) as hooks:
        hooks.forward_hook("bn", lambda _m, _a, _o: 1 / 0)
        hooks.run(lambda: model(_x()))
    assert count_hooks(model) == 0


def test_remove_mid_block_and_a_library_handle_added():
    model = Net()
    with hooked(model) as hooks:
        hooks.forward_hook(model.conv1, lambda _m, _a, _o: None)
        hooks.remove()
        assert count_hooks(model) == 0
        hooks.add(model.relu.register_forward_hook(lambda _m, _a, _o: None))  # registered elsewhere
        assert count_hooks(model) == 1
    assert count_hooks(model) == 0


def test_hooks_outside_the_block_are_refused():
    model = Net()
    hooks = hooked(model)
    with pytest.raises(RuntimeError, match="inside the `with hooked"):
        hooks.forward_hook(model.conv1, lambda _m, _a, _o: None)
    with hooks:
        pass
    with pytest.raises(RuntimeError, match="inside the `with hooked"):
        hooks.forward_pre_hook(model.conv1, lambda _m, _a: None)
    assert count_hooks(model) == 0


# ----------------------------------------------------------------------------------------------
# state


def _mixed_state(model: Net) -> tuple[dict[nn.Module, bool], list[bool], list[torch.Tensor | None]]:
    model.train()
    model.bn.eval()  # flags differ between modules: each must come back as it was
    model.conv2.bias.requires_grad_(False)
    model.conv1.weight.grad = torch.ones_like(model.conv1.weight)
    params = list(model.parameters())
    return {m: m.training for m in model.modules()}, [p.requires_grad for p in params], [p.grad for p in params]


def _assert_state(model: Net, state: tuple[dict[nn.Module, bool], list[bool], list[torch.Tensor | None]]) -> None:
    training, requires, grads = state
    assert {m: m.training for m in model.modules()} == training
    params = list(model.parameters())
    assert [p.requires_grad for p in params] == requires
    assert all(p.grad is g for p, g in zip(params, grads, strict=True))  # the same tensors, or None


@pytest.mark.parametrize("fail", [False, True])
def test_training_flags_requires_grad_and_grad_restored(fail):
    model = Net()
    before = _mixed_state(model)
    with pytest.raises(RuntimeError) if fail else contextlib.nullcontext(), hooked(model):
        assert not any(m.training for m in model.modules())
        assert not any(p.requires_grad for p in model.parameters())
        _forward_backward_on_input(model)  # a backward inside must not write any .grad
        model.zero_grad(set_to_none=True)  # what a caller's optimiser might do: undone afterwards
        model.head.weight.requires_grad_(True)
        model.bn.train()
        if fail:
            raise RuntimeError("fail")
    _assert_state(model, before)
    assert model.conv2.weight.grad is None


def test_preserve_false_leaves_the_mode_alone():
    model = Net()
    before = _mixed_state(model)
    with hooked(model, preserve=False):
        _assert_state(model, before)
    _assert_state(model, before)


def _forward_backward_on_input(model: Net) -> None:
    x = _x().requires_grad_(True)
    with torch.enable_grad():
        torch.autograd.grad(model(x).sum(), x)


# ----------------------------------------------------------------------------------------------
# the lock


def _other_thread_gets(lock) -> bool:
    got: list[bool] = []

    def take() -> None:
        ok = lock.acquire(timeout=0.2)
        got.append(ok)
        if ok:
            lock.release()

    t = threading.Thread(target=take)
    t.start()
    t.join()
    return got[0]


def test_the_model_lock_is_held_during_the_block_only():
    model = Net()
    with hooked(model):
        assert not _other_thread_gets(model_lock(model))
    assert _other_thread_gets(model_lock(model))
    with pytest.raises(ValueError), hooked(model):
        raise ValueError("released on an error too")
    assert _other_thread_gets(model_lock(model))


def test_a_given_lock_is_held_instead_and_held_takes_none():
    model = Net()
    own = threading.Lock()  # a meta model's lock
    with hooked(model, lock=own):
        assert own.locked()
        assert _other_thread_gets(model_lock(model))
    assert not own.locked()
    with model_lock(model), hooked(model, lock=HELD) as hooks:  # the caller holds it
        hooks.forward_hook(model.conv1, lambda _m, _a, _o: None)
        assert count_hooks(model) == 1
    assert count_hooks(model) == 0


def test_lock_if_free_takes_a_free_lock_and_skips_a_held_one():
    model = Net()
    with lock_if_free(model) as taken:
        assert taken and not _other_thread_gets(model_lock(model))
    assert _other_thread_gets(model_lock(model))
    seen: list[bool] = []

    def try_it() -> None:
        with lock_if_free(model) as taken:
            seen.append(taken)

    with model_lock(model):  # held here: another thread is told so at once and does not wait
        t = threading.Thread(target=try_it)
        t.start()
        t.join(timeout=5)
    assert seen == [False]
    with pytest.raises(ValueError), lock_if_free(model):
        raise ValueError("released on an error too")
    assert _other_thread_gets(model_lock(model))


def test_only_the_hook_owner_takes_a_models_lock_by_hand():
    """Issue 33: hook work goes through vizhooks._hooks (hooked, lock_if_free); no other module of the
    library calls model_lock(...) or hooks_removed_after(...) itself."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "vizhooks"
    calls = re.compile(r"\b(model_lock|hooks_removed_after)\(")
    found = [f"{path.relative_to(root)}:{n}" for path in root.rglob("*.py") if path.name != "_hooks.py"
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if calls.search(line.split("#")[0]) and not line.lstrip().startswith(("def ", '"', ">>>"))]
    assert found == []


# ----------------------------------------------------------------------------------------------
# stopping after a layer


def test_stop_after_ends_the_pass_and_returns_the_layer_output():
    model = Net().eval()
    x = _x()
    with torch.no_grad():
        expected = model.relu(model.bn(model.conv1(x)))  # written out, not through the hooks
    model.tail.calls = 0
    with hooked(model, stop_after=["relu"]) as hooks, torch.no_grad():
        found = hooks.run(lambda: model(x))
        again = hooks.run(lambda: model(x))  # run may be called again
    assert list(found) == ["relu"]
    torch.testing.assert_close(found["relu"], expected, rtol=0, atol=0)
    torch.testing.assert_close(again["relu"], expected, rtol=0, atol=0)
    assert model.tail.calls == 0  # nothing after the layer ran
    with hooked(model, stop_after=["conv1", "conv2"]) as hooks, torch.no_grad():
        both = hooks.run(lambda: model(x))
    assert list(both) == ["conv1", "conv2"] and model.tail.calls == 0
    with hooked(model) as hooks, torch.no_grad():  # no stop: run is a plain pass
        assert hooks.run(lambda: model(x)) == {}
    assert model.tail.calls == 1
    assert count_hooks(model) == 0


def test_reduce_and_a_later_hook_on_the_stop_layer_still_runs():
    model = Net().eval()
    seen: list[str] = []
    with hooked(model, stop_after=["conv2"], reduce=lambda name, t: (name, tuple(t.shape))) as hooks:
        hooks.forward_hook(model.conv2, lambda _m, _a, _o: seen.append("mine"))  # registered after the stop
        with torch.no_grad():
            found = hooks.run(lambda: model(_x()))
    assert found == {"conv2": ("conv2", (1, 2, 8, 8))}
    assert seen == ["mine"] and model.tail.calls == 0


def test_a_hook_may_stop_the_pass_itself():
    model = Net().eval()

    def stop(_m: nn.Module, _a: object) -> None:
        raise StopForward

    with hooked(model) as hooks:
        hooks.forward_pre_hook(model.tail, stop)
        with torch.no_grad():
            hooks.run(lambda: model(_x()))
    assert model.tail.calls == 0


# ----------------------------------------------------------------------------------------------
# the one sentence


def test_the_missing_layer_sentence():
    model = Net().eval()
    with hooked(model, stop_after=["conv1", "head"]) as hooks, torch.no_grad():
        found = hooks.run(lambda: model(_x()))
    assert list(found) == ["conv1"]
    with pytest.raises(ValueError) as err:
        check_ran(["conv1", "head"], found)
    assert str(err.value) == SENTENCE
    check_ran(["conv1"], found)  # no error when every layer ran


def test_every_path_says_the_same_sentence():
    from vizhooks.network.convolution import conv_at
    from vizhooks.network.overview import overview

    class UnusedConv(Net):
        def __init__(self) -> None:
            super().__init__()
            self.head = nn.Conv2d(2, 2, 1)  # a conv for conv_at, never called

    model = UnusedConv().eval()
    x = _x()
    for call in (lambda: overview(model, x, ["head"]), lambda: conv_at(model, x, "head", 0, 0, 0)):
        with pytest.raises(ValueError) as err:
            call()
        assert str(err.value) == SENTENCE
    assert count_hooks(model) == 0


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
