"""GPTConfig's names say what its values are: the gpt2-124m preset is GPT-2 small as published, the module docstring's
table matches the field defaults and that preset, and the string switches are Literal types (so mypy catches a typo)
that are still checked when a config is built from JSON or a link."""

from __future__ import annotations

import json
import typing

import pytest

from llmviz.errors import ConfigError
from llmviz.models import gpt, presets
from llmviz.models.gpt import MLP_KINDS, NORMS, POSITIONS, GPTConfig, count_parameters_without_building
from llmviz.models.presets import PRESETS


def test_the_gpt2_preset_is_gpt2_small_as_published():
    """transformers' own GPT-2 small (GPT2Config's defaults are OpenAI's 124M checkpoint), read through llmviz's GPT-2
    loader, is the preset; both count the parameters transformers counts."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    from llmviz.hub import gpt2

    assert gpt2.config_from_hf(GPT2Config().to_dict()) == PRESETS["gpt2-124m"]
    with torch.device("meta"):
        published = GPT2LMHeadModel(GPT2Config()).num_parameters()
    assert sum(count_parameters_without_building(PRESETS["gpt2-124m"]).values()) == published


def test_the_smollm2_shapes_are_smollm2s():
    """The preset named for SmolLM2-135M's shapes is what llmviz's Llama loader makes of SmolLM2-135M's config.json
    (its config.json's values, written out here), and transformers counts the same parameters."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from llmviz.hub import llama

    config = dict(
        model_type="llama",
        vocab_size=49152,
        hidden_size=576,
        intermediate_size=1536,
        num_hidden_layers=30,
        num_attention_heads=9,
        num_key_value_heads=3,
        max_position_embeddings=8192,
        rope_theta=100000.0,
        rms_norm_eps=1e-5,
        tie_word_embeddings=True,
    )
    assert llama.config_from_hf(config) == PRESETS["smollm2-135m-shapes"]
    with torch.device("meta"):
        reference = LlamaForCausalLM(LlamaConfig(**{k: v for k, v in config.items() if k != "model_type"}))
    ours = sum(count_parameters_without_building(PRESETS["smollm2-135m-shapes"]).values())
    assert ours == reference.num_parameters()


def table_rows() -> dict[str, tuple[str, str]]:
    """The module docstring's switch table: field → (its "field default" cell, its GPT-2 cell), cut at the header's
    column starts."""
    lines = gpt.__doc__.splitlines()
    header = next(i for i, line in enumerate(lines) if line.strip().startswith("switch") and "field default" in line)
    starts = [lines[header].index(title) for title in ("field default", "GPT-2", "Llama")]
    rows = {}
    for line in lines[header + 1 :]:
        if not line.strip():
            break
        rows[line.split()[0]] = (line[starts[0] : starts[1]].strip(), line[starts[1] : starts[2]].strip())
    return rows


def cell_says(cell: str, config: GPTConfig, field: str) -> bool:
    """Whether a table cell begins with the value ``config`` has for ``field``."""
    value = getattr(config, field)
    if field == "d_mlp":
        return cell.startswith("4 × d_model") if config.mlp_width == 4 * config.d_model else False
    if field == "n_kv_heads":
        return cell.startswith("= n_heads") if config.kv_heads == config.n_heads else False
    written = json.dumps(value) if isinstance(value, str) else str(value)
    return cell.split()[0].rstrip(":") == written


def test_the_docstring_table_tells_the_defaults_and_gpt2s_choices():
    rows = table_rows()
    assert set(rows) >= {"positions", "norm", "mlp_kind", "n_kv_heads", "n_experts", "bias", "qkv_bias", "tie_weights"}
    default = GPTConfig()
    for field, (default_cell, gpt2_cell) in rows.items():
        stated_default = default_cell.split()[0]
        value = getattr(default, field)
        assert stated_default == (json.dumps(value) if isinstance(value, str) else str(value)), field
        assert cell_says(gpt2_cell, PRESETS["gpt2-124m"], field), (field, gpt2_cell)


def test_string_switches_are_literal_types():
    hints = typing.get_type_hints(GPTConfig)
    for field, allowed in (("positions", POSITIONS), ("norm", NORMS), ("mlp_kind", MLP_KINDS)):
        assert typing.get_origin(hints[field]) is typing.Literal and typing.get_args(hints[field]) == allowed
    assert set(typing.get_args(presets.PresetName)) == set(PRESETS)


@pytest.mark.parametrize("field, value", [("positions", "roep"), ("norm", "batchnorm"), ("mlp_kind", "relu")])
def test_a_switch_read_from_json_still_gets_a_readable_error(field, value):
    with pytest.raises(ConfigError, match=f"{field} must be one of .*got '{value}'"):
        GPTConfig(**json.loads(json.dumps({field: value})))
