"""Real models that expose every intermediate by name: GPT, the seed-000 decoder, char-level models."""

from llmviz.models.cache import RecordsIntermediates, record
from llmviz.models.charlevel import CHAR_MODEL_TITLES, CHAR_MODELS, build_char_model
from llmviz.models.decoder import Decoder, DecoderConfig
from llmviz.models.gpt import GPT, PRESETS, GPTConfig, cache_names

__all__ = [
    "CHAR_MODELS", "CHAR_MODEL_TITLES", "GPT", "PRESETS", "Decoder", "DecoderConfig", "GPTConfig",
    "RecordsIntermediates", "build_char_model", "cache_names", "record",
]
