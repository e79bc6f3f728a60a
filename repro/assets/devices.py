"""Where models run and where their inputs go.

:func:`resolve_device` is the only place that knows device names: ``None`` / ``"cpu"`` (the
default), ``"cuda"`` / ``"cuda:N"``, and ``"auto"`` (accelerate's ``device_map="auto"`` for
models loaded from a folder or the hub; the first CUDA device for models built in memory; CPU
when there is no CUDA device).
"""
from __future__ import annotations

import torch

from repro.errors import ReproError

AUTO = "auto"


def resolve_device(device: str | torch.device | None, allow_split: bool = True) -> torch.device | str:
    """A validated ``torch.device``, or ``"auto"`` (only with ``allow_split`` and CUDA present)."""
    if device is None:
        return torch.device("cpu")
    if device == AUTO:
        if not torch.cuda.is_available():
            return torch.device("cpu")
        return AUTO if allow_split else torch.device("cuda", torch.cuda.current_device())
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        raise ReproError(f"unknown device {device!r}; use cpu, cuda, cuda:N or auto") from None
    if dev.type == "cpu":
        return torch.device("cpu")
    if dev.type != "cuda":
        raise ReproError(f"unsupported device {device!r}; use cpu, cuda, cuda:N or auto")
    if not torch.cuda.is_available():
        raise ReproError(f"device {str(device)!r} requested but no CUDA device is available")
    count = torch.cuda.device_count()
    index = torch.cuda.current_device() if dev.index is None else dev.index
    if index >= count:
        raise ReproError(f"device {str(device)!r} requested but only {count} CUDA device(s) are available")
    return torch.device("cuda", index)


def input_device(model: torch.nn.Module) -> torch.device:
    """The device input ids must be on: the input embedding's (its execution device when
    accelerate offloads its weights), which under ``device_map="auto"`` need not be the device
    of ``next(model.parameters())``."""
    emb = model.get_input_embeddings() if hasattr(model, "get_input_embeddings") else None
    module = emb if emb is not None else model
    hook_device = getattr(getattr(module, "_hf_hook", None), "execution_device", None)
    if hook_device is not None:
        return torch.device(hook_device)
    return next(module.parameters()).device


def model_devices(model: torch.nn.Module) -> set[torch.device]:
    """Every device holding the model's parameters or inputs (excluding ``meta``)."""
    devices = {p.device for p in model.parameters()} | {input_device(model)}
    return {d for d in devices if d.type != "meta"}


def sync(device: str | torch.device) -> None:
    """Wait until work queued on ``device`` has finished (a no-op off CUDA), so a clock read
    after it measures completed kernels."""
    device = torch.device(device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def describe(model: torch.nn.Module) -> str:
    """``"cpu"``, ``"cuda:0"``, ...; ``"auto"`` for a model split over several devices."""
    devices = model_devices(model)
    return str(devices.pop()) if len(devices) == 1 else AUTO
