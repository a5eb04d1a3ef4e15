"""Model configs shipped with the repo (HF ``config.json`` form), for planning without the weights.

``get_preset(name)`` maps one through ``model_config_from_hf``; ``PRESETS`` lists the canonical names.
The Super/Puzzle/Nano values come from NVIDIA's published configs (see docs/engine-model.md).
"""
from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources

from engine.config import ModelConfig
from engine.hf_config import model_config_from_hf

PRESETS: tuple[str, ...] = ("nemotron-3-super-120b-a12b", "puzzle-75b-a9b", "nemotron-3-nano-30b-a3b", "smollm2-135m")
ALIASES = {"super": "nemotron-3-super-120b-a12b", "puzzle": "puzzle-75b-a9b", "nano": "nemotron-3-nano-30b-a3b",
           "smollm2": "smollm2-135m"}


def canonical_name(name: str) -> str:
    key = name.strip().lower()
    key = ALIASES.get(key, key)
    if key not in PRESETS:
        raise KeyError(f"unknown preset {name!r}; known: {', '.join(PRESETS)} (aliases: {', '.join(ALIASES)})")
    return key


@lru_cache(maxsize=None)
def _load_json(key: str) -> str:
    return resources.files(__name__).joinpath(f"{key}.json").read_text()


def preset_hf_config(name: str) -> dict:
    """The raw HF-style config dict of a preset (a fresh copy)."""
    return json.loads(_load_json(canonical_name(name)))


def get_preset(name: str) -> ModelConfig:
    config = model_config_from_hf(preset_hf_config(name))
    config.name = canonical_name(name)
    return config
