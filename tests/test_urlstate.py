"""The shareable-URL state: strict checking of every query parameter and a lossless round trip.

Valid layer names come from torchvision itself (Conv2d modules of the real architecture), never
from vizhooks, so a wrong list in the library cannot make its own tests pass.
"""

from __future__ import annotations

import functools

import pytest
import torch
import torchvision
from torch import nn

from vizhooks.page.urlstate import CHANNEL_CHOICES, DEFAULTS, KEYS, SIZE_MAX, SIZE_MIN, WHATS, parse_query, to_query

SAMPLES = ["astronaut.jpg", "chelsea.jpg", "coffee.jpg"]


@functools.cache
def tv_convs(arch: str) -> tuple[str, ...]:
    """Conv2d names of the real torchvision model, in ``named_modules()`` order."""
    model = getattr(torchvision.models, arch)(weights=None)
    return tuple(n for n, m in model.named_modules() if isinstance(m, nn.Conv2d))


def parse(params):
    return parse_query(params, SAMPLES)


# --------------------------------------------------------------------------------------------
# constants


def test_constants():
    assert (SIZE_MIN, SIZE_MAX) == (128, 512)
    assert CHANNEL_CHOICES == (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, "all")
    assert set(WHATS) == {"output", "input"}
    # Other parameters may be added to KEYS; these ten must stay, in this relative order.
    ten = ("model", "sample", "layers", "what", "size", "channels", "order", "cmap", "norm", "columns")
    assert [k for k in KEYS if k in ten] == list(ten)
    assert len(KEYS) == len(set(KEYS))


def test_defaults_are_valid_choices():
    good, bad = parse(to_query(DEFAULTS))
    assert bad == []
    assert good == DEFAULTS


def test_empty_query():
    assert parse({}) == ({}, [])


# --------------------------------------------------------------------------------------------
# one parameter at a time


@pytest.mark.parametrize("model", ["resnet18", "resnet34", "resnet50", "resnet101", "resnet152"])
def test_model_valid(model):
    assert parse({"model": model}) == ({"model": model}, [])


@pytest.mark.parametrize("model", ["vgg17", "ResNet18", "resnet", "", "resnet18 ", "../etc/passwd"])
def test_model_invalid(model):
    assert parse({"model": model}) == ({}, [("model", model)])


def test_sample():
    assert parse({"sample": "coffee.jpg"}) == ({"sample": "coffee.jpg"}, [])
    assert parse({"sample": "rocket.jpg"}) == ({}, [("sample", "rocket.jpg")])  # not in the given list
    assert parse({"sample": "../etc/passwd"}) == ({}, [("sample", "../etc/passwd")])
    assert parse_query({"sample": "coffee.jpg"}, []) == ({}, [("sample", "coffee.jpg")])


@pytest.mark.parametrize("what", ["output", "input"])
def test_what_valid(what):
    assert parse({"what": what}) == ({"what": what}, [])


@pytest.mark.parametrize("what", ["gradient", "Output", ""])
def test_what_invalid(what):
    assert parse({"what": what}) == ({}, [("what", what)])


@pytest.mark.parametrize("size", ["128", "160", "224", "320", "512"])
def test_size_valid(size):
    good, bad = parse({"size": size})
    assert bad == []
    assert good == {"size": int(size)}
    assert isinstance(good["size"], int)


@pytest.mark.parametrize("size", ["127", "513", "0", "-224", "1024", "224.0", "2e2", "abc", "", "big"])
def test_size_invalid(size):
    assert parse({"size": size}) == ({}, [("size", size)])


@pytest.mark.parametrize("channels", ["1", "2", "4", "8", "16", "32", "64", "128", "256", "512"])
def test_channels_valid_numbers(channels):
    good, bad = parse({"channels": channels})
    assert bad == []
    assert good == {"channels": int(channels)}
    assert type(good["channels"]) is int


def test_channels_all():
    assert parse({"channels": "all"}) == ({"channels": "all"}, [])


@pytest.mark.parametrize("channels", ["3", "0", "-16", "1024", "15", "ALL", "every", "", "16.0"])
def test_channels_invalid(channels):
    assert parse({"channels": channels}) == ({}, [("channels", channels)])


@pytest.mark.parametrize("order", ["index", "mean", "max"])
def test_order_valid(order):
    assert parse({"order": order}) == ({"order": order}, [])


@pytest.mark.parametrize("order", ["min", "random", ""])
def test_order_invalid(order):
    assert parse({"order": order}) == ({}, [("order", order)])


@pytest.mark.parametrize("cmap", ["viridis", "magma", "inferno", "plasma", "cividis", "gray", "coolwarm", "RdBu_r"])
def test_cmap_valid(cmap):
    assert parse({"cmap": cmap}) == ({"cmap": cmap}, [])


@pytest.mark.parametrize("cmap", ["jet", "nope", "Viridis", ""])
def test_cmap_invalid(cmap):
    # "jet" is a real matplotlib colormap, but not one the page offers.
    assert parse({"cmap": cmap}) == ({}, [("cmap", cmap)])


@pytest.mark.parametrize("norm", ["channel", "layer"])
def test_norm_valid(norm):
    assert parse({"norm": norm}) == ({"norm": norm}, [])


@pytest.mark.parametrize("norm", ["global", "batch", ""])
def test_norm_invalid(norm):
    assert parse({"norm": norm}) == ({}, [("norm", norm)])


@pytest.mark.parametrize("columns", ["0", "1", "8", "63", "64"])
def test_columns_valid(columns):
    good, bad = parse({"columns": columns})
    assert bad == []
    assert good == {"columns": int(columns)}


@pytest.mark.parametrize("columns", ["-1", "65", "100", "four", "", "4.5"])
def test_columns_invalid(columns):
    assert parse({"columns": columns}) == ({}, [("columns", columns)])


def test_unknown_parameters_are_bad():
    good, bad = parse({"size": "256", "colour": "red", "utm_source": ["a", "b"]})
    assert good == {"size": 256}
    assert ("colour", "red") in bad
    assert ("utm_source", "b") in bad
    assert len(bad) == 2


def test_every_parameter_bad_at_once():
    params = {
        "model": "alexnet2",
        "sample": "missing.png",
        "layers": "nope",
        "what": "both",
        "size": "9000",
        "channels": "7",
        "order": "random",
        "cmap": "rainbowish",
        "norm": "none",
        "columns": "99",
        "extra": "1",
    }
    good, bad = parse(params)
    assert good == {}
    assert sorted(bad) == sorted(params.items())


def test_good_kept_when_others_bad():
    good, bad = parse({"model": "resnet50", "size": "abc", "cmap": "magma", "channels": "3"})
    assert good == {"model": "resnet50", "cmap": "magma"}
    assert sorted(bad) == [("channels", "3"), ("size", "abc")]


# --------------------------------------------------------------------------------------------
# repeated parameters


def test_repeated_parameter_last_wins():
    good, bad = parse({"size": ["256", "320"], "cmap": ["gray", "magma"], "model": ["resnet18", "resnet34"]})
    assert bad == []
    assert good == {"size": 320, "cmap": "magma", "model": "resnet34"}


def test_repeated_parameter_last_is_checked():
    # The last value is the one used, so it is the one reported when bad.
    good, bad = parse({"size": ["256", "9999"], "channels": ["3", "all"]})
    assert good == {"channels": "all"}
    assert bad == [("size", "9999")]


def test_repeated_layers_are_joined():
    good, bad = parse({"layers": ["conv1", "layer1.0.conv1,layer2.0.conv1", "layer4.1.conv2"]})
    assert bad == []
    assert good == {"layers": ["conv1", "layer1.0.conv1", "layer2.0.conv1", "layer4.1.conv2"]}


def test_single_element_list_is_like_a_string():
    assert parse({"size": ["288"], "layers": ["conv1"]}) == parse({"size": "288", "layers": "conv1"})


# --------------------------------------------------------------------------------------------
# layers


@pytest.mark.parametrize("arch", ["resnet18", "resnet50"])
def test_every_real_conv_is_accepted(arch):
    names = list(tv_convs(arch))
    good, bad = parse({"model": arch, "layers": ",".join(names)})
    assert bad == []
    assert good["layers"] == names


def test_layers_checked_against_the_chosen_model():
    r50_only = "layer1.0.conv3"
    assert r50_only in tv_convs("resnet50")
    assert r50_only not in tv_convs("resnet18")

    good, bad = parse({"model": "resnet50", "layers": r50_only})
    assert (good, bad) == ({"model": "resnet50", "layers": [r50_only]}, [])

    good, bad = parse({"model": "resnet18", "layers": r50_only})
    assert (good, bad) == ({"model": "resnet18"}, [("layers", r50_only)])

    # No model given: the default (resnet18) decides.
    assert DEFAULTS["model"] == "resnet18"
    assert parse({"layers": r50_only}) == ({}, [("layers", r50_only)])


def test_bad_model_means_layers_checked_against_default():
    good, bad = parse({"model": "vgg17", "layers": "layer1.0.conv3,layer1.0.conv2"})
    assert good == {"layers": ["layer1.0.conv2"]}
    assert sorted(bad) == [("layers", "layer1.0.conv3"), ("model", "vgg17")]


@pytest.mark.slow
def test_any_torchvision_model_and_its_layers():
    vgg_convs = [n for n, m in torchvision.models.vgg16().to("meta").named_modules() if isinstance(m, torch.nn.Conv2d)]
    good, bad = parse({"model": "vgg16", "layers": f"{vgg_convs[0]},{vgg_convs[-1]},layer1.0.conv1"})
    assert good == {"model": "vgg16", "layers": [vgg_convs[0], vgg_convs[-1]]}
    assert bad == [("layers", "layer1.0.conv1")]
    # blocks are layers too (ViT has almost no convs)
    good, bad = parse({"model": "vit_b_16", "layers": "encoder.layers.encoder_layer_3"})
    assert good == {"model": "vit_b_16", "layers": ["encoder.layers.encoder_layer_3"]} and bad == []
    assert parse({"layers": "layer1.0"}) == ({"layers": ["layer1.0"]}, [])


def test_deep_layers_need_the_deep_model():
    deep = "layer3.22.conv2"  # resnet101 has 23 blocks in stage 3, resnet50 only 6
    assert deep in tv_convs("resnet101") and deep not in tv_convs("resnet50")
    assert parse({"model": "resnet101", "layers": deep}) == ({"model": "resnet101", "layers": [deep]}, [])
    assert parse({"model": "resnet50", "layers": deep}) == ({"model": "resnet50"}, [("layers", deep)])


@pytest.mark.parametrize("name", ["layer1", "layer1.0.bn1", "bn1", "relu", "fc", "avgpool",
                                  "layer2.0.downsample", "layer2.0.downsample.1", "Conv1", "layer9.0.conv1"])
def test_modules_that_are_not_convs_are_bad(name):
    assert parse({"layers": name}) == ({}, [("layers", name)])


def test_layers_duplicates_removed_order_kept():
    good, bad = parse({"layers": "layer3.0.conv1,conv1,layer3.0.conv1,layer1.0.conv2,conv1"})
    assert bad == []
    # The order asked is kept (not re-sorted into network order); first occurrence wins.
    assert good == {"layers": ["layer3.0.conv1", "conv1", "layer1.0.conv2"]}


def test_partly_bad_layers_keep_the_good_ones():
    good, bad = parse({"layers": "conv1,nope,layer2.0.downsample.0,layer1.0.bn1,layer4.1.conv2"})
    assert good == {"layers": ["conv1", "layer2.0.downsample.0", "layer4.1.conv2"]}
    assert bad == [("layers", "nope"), ("layers", "layer1.0.bn1")]


def test_layers_whitespace_and_empty_items_ignored():
    good, bad = parse({"layers": " conv1 , ,layer1.0.conv1,,"})
    assert bad == []
    assert good == {"layers": ["conv1", "layer1.0.conv1"]}


@pytest.mark.parametrize("value", ["", ",", " , ", [], [""], ["", ","]])
def test_empty_layers_value(value):
    # Nothing chosen is neither a choice nor an error.
    assert parse({"layers": value}) == ({}, [])


def test_all_bad_layers_gives_no_layers_key():
    good, bad = parse({"model": "resnet18", "layers": "a,b"})
    assert good == {"model": "resnet18"}
    assert bad == [("layers", "a"), ("layers", "b")]


# --------------------------------------------------------------------------------------------
# to_query and the round trip


def test_to_query_strings_in_key_order():
    choices = {
        "columns": 8,
        "cmap": "magma",
        "layers": ["conv1", "layer1.0.conv1"],
        "size": 256,
        "model": "resnet50",
        "channels": "all",
    }
    query = to_query(choices)
    assert query == {
        "model": "resnet50",
        "layers": "conv1,layer1.0.conv1",
        "size": "256",
        "channels": "all",
        "cmap": "magma",
        "columns": "8",
    }
    assert list(query) == ["model", "layers", "size", "channels", "cmap", "columns"]


def test_to_query_leaves_out_unset_and_unknown():
    query = to_query({"model": "resnet18", "sample": None, "cmap": "", "colour": "red", "columns": 0})
    assert query == {"model": "resnet18", "columns": "0"}


def test_to_query_tuple_layers():
    assert to_query({"layers": ("conv1", "layer4.0.conv2")}) == {"layers": "conv1,layer4.0.conv2"}


ROUND_TRIPS = [
    {
        "model": "resnet18",
        "sample": "chelsea.jpg",
        "layers": ["conv1", "layer1.0.conv1", "layer2.0.conv1", "layer3.0.conv1", "layer4.0.conv1"],
        "what": "output",
        "size": 224,
        "channels": 16,
        "order": "index",
        "cmap": "viridis",
        "norm": "channel",
        "columns": 0,
    },
    {
        "model": "resnet50",
        "sample": "coffee.jpg",
        "layers": ["layer4.2.conv3", "layer1.0.conv3", "layer1.0.downsample.0"],
        "what": "input",
        "size": 512,
        "channels": "all",
        "order": "mean",
        "cmap": "RdBu_r",
        "norm": "layer",
        "columns": 64,
    },
    {
        "model": "resnet101",
        "layers": ["layer3.22.conv2"],
        "size": 128,
        "channels": 512,
        "order": "max",
        "cmap": "gray",
        "columns": 1,
    },
    {"model": "resnet34", "channels": 1, "norm": "layer"},
    {"sample": "astronaut.jpg", "layers": ["layer2.0.downsample.0"], "cmap": "coolwarm", "size": 320},
]


@pytest.mark.parametrize("choices", ROUND_TRIPS)
def test_round_trip(choices):
    query = to_query(choices)
    assert all(isinstance(v, str) for v in query.values())
    good, bad = parse(query)
    assert bad == []
    assert good == choices


def test_round_trip_expected_query_text():
    # An independent expectation of the link text for one realistic view.
    query = to_query(ROUND_TRIPS[1])
    assert query == {
        "model": "resnet50",
        "sample": "coffee.jpg",
        "layers": "layer4.2.conv3,layer1.0.conv3,layer1.0.downsample.0",
        "what": "input",
        "size": "512",
        "channels": "all",
        "order": "mean",
        "cmap": "RdBu_r",
        "norm": "layer",
        "columns": "64",
    }


# --- stricter parsing, found while reviewing the parser ------------------------------------


@pytest.mark.parametrize("params", [{"size": "130"}, {"size": "2_56"}, {"columns": " 8 "}, {"channels": "+16"},
                                    {"target": "1e2"}, {"view": "secret"}, {"target": "100000"}])
def test_loose_numbers_and_off_grid_values_are_rejected(params):
    good, bad = parse_query(params, [])
    assert good == {} and bad == [next(iter(params.items()))]


def test_view_and_target_round_trip():
    good, bad = parse_query({"view": "gradcam", "target": "281"}, [])
    assert good == {"view": "gradcam", "target": 281} and bad == []


def test_repeated_bad_layer_reported_once():
    _, bad = parse_query({"layers": "nope,nope,conv1"}, [])
    assert bad == [("layers", "nope")]


def test_quick_pick_refuses_unknown_stage():
    from vizhooks.models.layers import architecture_convs, quick_pick

    with pytest.raises(ValueError):
        quick_pick(architecture_convs("resnet18"), "res:3x3")


# --------------------------------------------------------------------------------------------
# a view's own settings, the source, present mode, a class (issues 18 and 23)


def test_view_settings_round_trip():
    query = {"view": "intervene", "iv_layer": "layer2.0.conv1", "iv_mode": "double", "iv_channels": "7,3,3",
             "iv_k": "5", "insp_layer": "conv1", "insp_channel": "12", "atlas_layer": "layer4.1.conv2",
             "atlas_channel": "500", "source": "live", "present": "1"}
    good, bad = parse(query)
    assert bad == []
    assert good["iv_channels"] == [3, 7] and good["iv_k"] == 5 and good["insp_channel"] == 12
    assert good["source"] == "live" and good["present"] is True
    again, _ = parse(to_query(good))
    assert again == good


@pytest.mark.parametrize(("key", "value"), [
    ("iv_layer", "layer9"), ("insp_layer", "fc.weight"), ("iv_mode", "triple"), ("iv_channels", "1,x"),
    ("iv_channels", ""), ("iv_k", "0"), ("insp_channel", "-1"), ("atlas_channel", "1e3"), ("source", "webcam"),
    ("present", "yes"), ("class", "K7Q2"), ("class", "OOOOOO"), ("teacher", "short"),
])
def test_view_settings_invalid(key, value):
    good, bad = parse({key: value})
    assert key not in good and bad == [(key, value)]


def test_layers_of_a_view_follow_the_linked_model():
    good, bad = parse({"model": "vgg11", "insp_layer": "features.3"})
    assert good["insp_layer"] == "features.3" and bad == []
    assert parse({"insp_layer": "features.3"})[1] == [("insp_layer", "features.3")]  # not a resnet18 layer


def test_a_class_code_is_read_as_typed():
    good, bad = parse({"class": "k7q-2xm"})
    assert good["class"] == "K7Q2XM" and bad == []


def test_an_explain_layer_of_a_model_whose_layers_cannot_be_listed_is_refused_not_raised(monkeypatch):
    """Review 2026-12-06: a link's ex_layers beyond the sidebar's asks for the Explain view's own options, which
    can fail for a model that cannot be built; the link's value is refused and the page opens."""
    import vizhooks.page.urlstate as urlstate
    from vizhooks.errors import CodedError

    def fails(model):
        raise CodedError("no layers", "explain_layers")

    monkeypatch.setattr(urlstate, "explain_layer_options", fails)
    good, bad = parse({"ex_layers": "layer4.1.norm"})
    assert "ex_layers" not in good and ("ex_layers", "layer4.1.norm") in bad
    good, bad = parse({"ex_layers": "layer4.1"})  # a layer the sidebar lists needs no more
    assert good["ex_layers"] == ["layer4.1"] and not bad
