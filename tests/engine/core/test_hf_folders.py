"""HF-folder loading beyond the transformers-saved Nemotron-H layout: transformers-5 in-memory naming
(``model.`` prefix, stacked experts), Llama safetensors, a tokenizer.json folder, and bf16 weights."""
import json

import pytest
import torch
from safetensors.torch import load_file, save_file

from engine.forward_context import DenseContext
from engine.loader import load_model
from nemotron_fixtures import build_reference, save_reference

pytestmark = pytest.mark.slow


def logits(loaded, ids):
    ctx = DenseContext.for_model(loaded.model).next_step([len(ids)])
    with torch.inference_mode():
        return loaded.model.compute_logits(loaded.model(ids, torch.arange(len(ids)), ctx))


def test_model_prefix_and_stacked_experts(tmp_path):
    ref = build_reference("ME*E", seed=11, moe_latent_size=20)
    folder = save_reference(ref, tmp_path / "legacy")
    ids = torch.randint(0, 96, (17,), generator=torch.Generator().manual_seed(12))
    want = logits(load_model(folder, mamba_dt_clamp="torch_forward"), ids)

    sd = load_file(str(folder / "model.safetensors"))
    renamed = {}
    for name, t in sd.items():
        name = name.replace("backbone.", "model.", 1)
        if ".experts." in name:
            continue
        renamed[name] = t
    for layer in (1, 3):
        for proj in ("up_proj", "down_proj"):
            renamed[f"model.layers.{layer}.mixer.experts.{proj}"] = torch.stack(
                [sd[f"backbone.layers.{layer}.mixer.experts.{e}.{proj}.weight"] for e in range(8)])
    save_file(renamed, str(folder / "model.safetensors"))
    got = logits(load_model(folder, mamba_dt_clamp="torch_forward"), ids)
    assert (got - want).abs().max() < 1e-6

    del renamed["model.layers.2.mixer.k_proj.weight"]
    save_file(renamed, str(folder / "model.safetensors"))
    with pytest.raises(KeyError, match="k_proj"):
        load_model(folder)


def test_llama_safetensors_folder_matches_transformers(tmp_path):
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=120, hidden_size=64, intermediate_size=112, num_hidden_layers=3,
                         num_attention_heads=4, num_key_value_heads=2, rope_theta=5000.0, tie_word_embeddings=False,
                         max_position_embeddings=256)
    torch.manual_seed(0)
    ref = LlamaForCausalLM(config).eval()
    with torch.no_grad():
        for p in ref.parameters():
            p.normal_(0, 1.0 / p.shape[-1] ** 0.5) if p.dim() > 1 else p.uniform_(0.8, 1.2)
    ref.save_pretrained(tmp_path / "llama")
    ours = load_model(tmp_path / "llama")
    assert ours.config.pattern == "*-" * 3 and ours.config.blocks[0].attention.rope_theta == 5000.0
    ids = torch.randint(0, 120, (23,), generator=torch.Generator().manual_seed(1))
    with torch.inference_mode():
        theirs = ref(ids[None]).logits[0].float()
    got = logits(ours, ids)
    assert theirs.abs().max() > 0.5 and (got - theirs).abs().max() < 1e-4

    # bf16 weights and activations run and stay close to fp32
    bf16 = logits(load_model(tmp_path / "llama", dtype=torch.bfloat16), ids)
    assert bf16.dtype == torch.float32 and (bf16 - theirs).abs().max() < 0.15 * theirs.abs().max()


def test_tokenizer_from_hf_folder_equals_gguf_tokenizer(tmp_path, smollm2):
    """A folder with tokenizer.json + tokenizer_config.json (as HF repos ship) gives the same ids and template."""
    tok = smollm2.tokenizer
    folder = tmp_path / "tok"
    folder.mkdir()
    tok._tok.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {"chat_template": tok.chat_template, "bos_token": "<|im_start|>", "eos_token": {"content": "<|im_end|>"}}))
    from engine.tokenizer import Tokenizer

    again = Tokenizer.from_hf_folder(folder)
    messages = [{"role": "user", "content": "Net revenue was 1,250,000 EUR in FY2023; explain."}]
    assert again.apply_chat_template(messages) == tok.apply_chat_template(messages)
    assert again.eos_token_ids == tok.eos_token_ids == {2}
    with pytest.raises(FileNotFoundError):
        Tokenizer.from_hf_folder(tmp_path)
