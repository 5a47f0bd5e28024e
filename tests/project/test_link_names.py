"""Public names are promises: every link parameter llmviz ever published still opens its view, under its own name
(ui.link_params.PARAMS) or as an alias of the name it became (ui.link_params.RENAMED)."""

from __future__ import annotations

from ui import link_params

#: every name ui.link_params.PARAMS has declared in the repository's history (git log -p ui/share.py, 43 commits up to
#: the round that added RENAMED, and the generated tie_<preset> names); a name published later joins it
PUBLISHED = """
ablate_mode ablate_text adapting_part allow_special attention_tab batch batch_slots batch_text beam_width
before_prompt bias bpe_chars by_hand clip context context_length corpus cos_a cos_b cos_pair d_model detector
embeddings_tab enc_head enc_layer example experts feature feature_alpha feature_prompt feature_search feature_text
flow_sentence gpt_nn gqa_kv_heads gqa_tokens head head_dim heads knocked kv_growth_tokens kv_heads kv_tokens
kv_variants layer lens_follow lens_from lens_text llama_kv_heads llama_lab_steps ln_layer look lora_alpha
lora_matrix lora_rank lora_steps lora_targets loss_position loss_text lr mask memory_steps method mlp mlp_layer
mlp_neurons model model_sentence model_tab n_heads n_layers new_tokens norm norms_layer optimizer page_block
page_lengths patch_answer patch_clean patch_component patch_corrupted patch_wrong pca_dims positions positions_kind
positions_text precision present preset prompt qat_bits qat_steps qkv_bias quant_bits quant_layer quant_prompt
quant_scale quant_zero query_heads query_word race_model race_net race_steps race_switch rope_positions rope_theta
router_layer sample_every sampling_part scale seed sentence sentences serving_part show_ids sin_d_model sin_dims
sin_positions split steer_alpha steer_kind steer_layer steer_negative steer_positive steer_prompt steer_token steps
stride swiglu_layer swiglu_token task_steps temperature temperatures text tie_attn-only-2l tie_custom tie_gpt-micro
tie_gpt-mini tie_gpt-nano tie_gpt2-124m tie_llama-style tie_moe-tiny tie_picked tie_qwen-style
tie_smollm2-135m-shapes tokenizers tokens_tab top_k top_p train_context train_model train_tokenizer train_vocab
training_part tuning_beta tuning_decoding tuning_dpo_steps tuning_example tuning_own tuning_question tuning_scored
tuning_sft_steps tuning_tab vec_1 vec_2 vec_3 vocab vocab_size w2v_dim w2v_nn w2v_train_steps w2v_vocab w2v_window
words zero_processes
""".split()


def test_every_published_name_is_still_answered():
    missing = [name for name in PUBLISHED if name not in link_params.PARAMS and name not in link_params.RENAMED]
    assert not missing, f"link parameters published before and no longer answered (add them to RENAMED): {missing}"


def test_every_declared_name_is_on_the_published_list():
    """A name added to PARAMS is published by the commit that adds it: it joins PUBLISHED in the same commit."""
    assert set(link_params.PARAMS) <= set(PUBLISHED), sorted(set(link_params.PARAMS) - set(PUBLISHED))


def test_renamed_names_point_at_declared_ones_and_are_not_declared_themselves():
    for old, new in link_params.RENAMED.items():
        assert new in link_params.PARAMS and old not in link_params.PARAMS
