"""The shape of the package, read from its source with ``ast``: no import cycle among vizhooks modules
(imports inside functions count; ``if TYPE_CHECKING:`` blocks do not), no private name imported from
another vizhooks module, and a small, lazy public surface (``import vizhooks`` pulls in neither
OpenCV nor the page nor any optional engine).
"""

from __future__ import annotations

import ast
import re
import sys
import warnings
from pathlib import Path

import pytest

import vizhooks
from tests.warm_python import run_python

PACKAGE = Path(vizhooks.__file__).resolve().parent


def _module_name(path: Path) -> str:
    parts = ["vizhooks", *path.relative_to(PACKAGE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement, at any depth (functions, classes, try blocks), outside TYPE_CHECKING."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for other in child.orelse:
                    visit(other)
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                found.append(child)
            visit(child)

    visit(tree)
    return found


def _base(module: str, path: Path, node: ast.ImportFrom) -> str:
    """The absolute module a ``from ... import`` statement reads from."""
    if not node.level:
        return node.module or ""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    package = package[: len(package) - (node.level - 1)]
    return ".".join([*package, *([node.module] if node.module else [])])


def _edges(modules: dict[str, Path]) -> tuple[dict[str, set[str]], list[str]]:
    """``{module: vizhooks modules it imports}`` and every private name imported across modules."""
    graph: dict[str, set[str]] = {m: set() for m in modules}
    private: list[str] = []
    for module, path in modules.items():
        for node in _imports(ast.parse(path.read_text("utf-8"), str(path))):
            if isinstance(node, ast.Import):
                graph[module].update(a.name for a in node.names if a.name in modules)
                continue
            base = _base(module, path, node)
            if base not in modules:
                continue
            for alias in node.names:
                if f"{base}.{alias.name}" in modules:  # a submodule: `from . import maps`
                    graph[module].add(f"{base}.{alias.name}")
                    continue
                graph[module].add(base)
                name = alias.name
                if name.startswith("_") and not (name.startswith("__") and name.endswith("__")):
                    private.append(f"{module} imports {name} from {base}")
    for module in graph:
        graph[module].discard(module)
    return graph, private


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in sorted(graph):
        if v not in index:
            strong(v)
    return components


def test_the_graph_sees_lazy_imports_and_skips_type_checking(tmp_path):
    """The parser itself, on a tiny package written here: a lazy import makes a cycle, a
    TYPE_CHECKING import does not, and a private name is reported."""
    code = {
        "vizhooks/__init__.py": "",
        "vizhooks/a.py": "from .b import thing\n",
        "vizhooks/b.py": "def f():\n    from .a import _hidden\n",
        "vizhooks/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .d import x\n",
        "vizhooks/d.py": "from . import c\n",
    }
    for name, text in code.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    root = tmp_path / "vizhooks"
    modules = {".".join(["vizhooks", *p.relative_to(root).with_suffix("").parts]).removesuffix(".__init__"): p
               for p in root.rglob("*.py")}
    graph, private = _edges(modules)
    assert graph["vizhooks.b"] == {"vizhooks.a"} and graph["vizhooks.d"] == {"vizhooks.c"}
    assert graph["vizhooks.c"] == set()
    assert _cycles(graph) == [["vizhooks.a", "vizhooks.b"]]
    assert private == ["vizhooks.b imports _hidden from vizhooks.a"]


def test_no_import_cycle_among_vizhooks_modules():
    graph, _ = _edges(_modules())
    assert "vizhooks.models.layers" in graph["vizhooks.hooks.capture"], "the graph must see real imports"
    cycles = _cycles(graph)
    assert not cycles, f"Import cycles among vizhooks modules: {cycles}"


def test_no_private_name_crosses_a_module_boundary():
    _, private = _edges(_modules())
    assert not private, "Private names imported from another vizhooks module:\n" + "\n".join(private)


def test_public_surface_is_small_and_sorted():
    names = vizhooks.__all__
    assert len(names) <= 32  # 30, then issue 21 named vizhooks.faithfulness and vizhooks.sanity_check
    assert names == sorted(names)
    for name in names:
        assert getattr(vizhooks, name) is not None
    assert isinstance(vizhooks.__version__, str)


# old top-level name -> the module it lives in now
#: Names that sat at the top level before 0.1.0 with a DeprecationWarning; 0.1.0 promises none of them
#: (CHANGELOG.md), so they are gone: each is an AttributeError now, and lives only in its module.
GONE = (
    "ARCHITECTURES", "Atlas", "Clip", "Exemplar", "InputSpec", "InvalidVideoError", "LiveProcessor", "LiveSettings",
    "LiveStats", "MAX_PIXELS", "as_map", "block_layers", "capture_frames", "checkpoint_path", "conv_layers",
    "default_layers", "fetch_weights", "hook_count", "is_out_of_memory", "layer_video", "load_atlas", "model_lock",
    "preprocess", "read_clip", "read_frames", "release_memory", "resize_for_model", "resolve_device",
    "resolve_layers", "summary_dataframe", "tensor_to_image", "to_tensor", "visualize_channel", "visualize_channels",
)


@pytest.mark.parametrize("name", GONE)
def test_no_compatibility_name_is_left_at_the_top_level(name):
    with pytest.raises(AttributeError, match=name):
        getattr(vizhooks, name)
    assert name not in vizhooks.__all__


def test_namespaces_are_attributes_without_a_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name in ("atlas", "live", "ops", "video"):
            assert getattr(vizhooks, name).__name__ == f"vizhooks.{name}"


def test_every_namespace_the_package_docstring_names_is_reachable_and_vice_versa():
    """The front page of ``help(vizhooks)`` names each namespace, and each one named is there with its
    public names (``vizhooks.patching.mean_direction`` rather than a hidden module path)."""
    named = set(re.findall(r"``vizhooks\.(\w+)``", vizhooks.__doc__)) - set(vizhooks.__all__)  # less explain, teach
    assert named == set(vizhooks._NAMESPACES)
    for name in named:
        module = getattr(vizhooks, name)
        assert all(hasattr(module, public) for public in getattr(module, "__all__", ()))
    assert vizhooks.patching.mean_direction is not None and vizhooks.relevance.channel_relevance is not None


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no_such_name"):
        vizhooks.no_such_name  # noqa: B018


def _fresh(code: str) -> str:
    """What ``python -c code`` prints (a fresh Python forked from tests/warm_python.py's, which imported
    torch, torchvision, NumPy and Pillow, none of them optional)."""
    run = run_python(code, cwd=PACKAGE.parent)
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout


@pytest.mark.slow
def test_import_vizhooks_imports_no_optional_or_page_module():
    heavy = ["cv2", "streamlit", "ray", "timm", "pandas", "av", "redis", "prometheus_client", "vizhooks.page",
             "vizhooks.video", "vizhooks.live", "vizhooks.atlas", "vizhooks.classroom"]
    code = f"import sys, vizhooks; print([m for m in {heavy!r} if m in sys.modules])"
    out = _fresh(code)
    assert out.strip() == "[]"


@pytest.mark.slow
def test_reading_a_clip_module_does_not_load_opencv_until_a_clip_is_read():
    code = "import sys, vizhooks.video; print('cv2' in sys.modules)"
    out = _fresh(code)
    assert out.strip() == "False"


# ----------------------------------------------------------------------------------------------
# blocks of plain sequential networks: the stages between pooling layers


def _stages_by_hand(features) -> list[str]:
    """Oracle: walk ``features`` and cut it at every MaxPool2d; a stage is named by the index of
    its last layer before the pool."""
    from torch import nn

    ends, last = [], None
    for index, layer in enumerate(features):
        if isinstance(layer, nn.MaxPool2d):
            ends.append(f"features.{last}")
        else:
            last = index
    return ends


@pytest.mark.parametrize(("arch", "count"), [("vgg16", 5), ("vgg11_bn", 5), ("alexnet", 3)])
def test_blocks_of_vgg_and_alexnet_are_the_stages_between_pools(arch, count):
    from vizhooks.models.architectures import build
    from vizhooks.models.layers import architecture_layers, describe_layers, quick_picks

    model = build(arch, device="meta")
    expected = _stages_by_hand(model.features)
    assert len(expected) == count
    blocks = vizhooks.find_layers(model, "block")
    assert [b.name for b in blocks] == expected
    assert [(b.index, b.count) for b in blocks] == [(i, count) for i in range(1, count + 1)]
    # each stage halves the resolution: the blocks are the network's distinct map sizes
    sizes = [b.out_hw for b in describe_layers(model) if b.kind == "block"]
    assert len(set(sizes)) == count
    # the page's quick picks offer them
    assert quick_picks(describe_layers(model))["blocks"] == expected
    assert quick_picks(architecture_layers(arch))["blocks"] == expected


def test_a_network_with_its_own_blocks_keeps_them():
    from vizhooks.models.architectures import build

    names = [b.name for b in vizhooks.find_layers(build("resnet18", device="meta"), "block")]
    assert names == [f"layer{i}.{j}" for i in range(1, 5) for j in range(2)]


@pytest.mark.slow
def test_the_redis_store_is_an_optional_engine():
    """Classes in this process need no Redis: vizhooks.classroom loads redis only for a redis:// store."""
    code = ("import sys; from vizhooks.classroom import open_store; open_store(None); "
            "print([m for m in ('redis', 'vizhooks.classroom.redis_store') if m in sys.modules])")
    out = _fresh(code)
    assert out.strip() == "[]"
