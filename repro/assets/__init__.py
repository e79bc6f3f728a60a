"""Layer 0: models and data (registries, caches, hashes). Imports only ``repro.errors`` and
``repro.progress`` from repro."""
from repro.assets.data import TextData, known_datasets, load_task, load_text
from repro.assets.models import Loaded, known_models, load_model, parse_dtype, resolve_dtype

__all__ = ["TextData", "Loaded", "known_datasets", "known_models", "load_model", "load_task", "load_text",
           "parse_dtype", "resolve_dtype"]
