"""Shared fixtures. No test may reach the network: a guard below refuses any connection that
does not go to this machine, and the torch cache points to an empty temporary folder."""

from __future__ import annotations

import socket

import pytest
import torch

from vizhooks import load_model

_real_connect = socket.socket.connect


def _loopback_only(self, address):
    host = address[0] if isinstance(address, tuple) else address
    if isinstance(host, str) and host not in ("127.0.0.1", "::1", "localhost") and not host.startswith("/"):
        raise OSError(f"test tried to reach the network ({host}); tests must stay offline")
    return _real_connect(self, address)


@pytest.fixture(autouse=True)
def _offline(monkeypatch, tmp_path_factory):
    monkeypatch.setattr(socket.socket, "connect", _loopback_only)
    monkeypatch.setenv("TORCH_HOME", str(tmp_path_factory.mktemp("torch_home")))
    monkeypatch.setenv("VIZHOOKS_OFFLINE", "1")
    monkeypatch.delenv("VIZHOOKS_WEIGHTS", raising=False)


@pytest.fixture(scope="session")
def resnet18():
    return load_model("resnet18", weights="none", device="cpu")


@pytest.fixture(scope="session")
def resnet50():
    return load_model("resnet50", weights="none", device="cpu")


@pytest.fixture
def image_tensor():
    g = torch.Generator().manual_seed(1)
    return torch.randn(1, 3, 96, 128, generator=g)
