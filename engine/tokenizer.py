"""Tokenizer: a ``tokenizers`` (Rust) BPE plus the model's own Jinja chat template.

Built from a Hugging Face folder (``tokenizer.json`` + ``tokenizer_config.json``) or from the metadata of a
GGUF file (byte-level BPE vocab, merges, token types, chat template), without importing transformers.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, Optional

from tokenizers import AddedToken, Regex, decoders, pre_tokenizers
from tokenizers import Tokenizer as RustTokenizer
from tokenizers.models import BPE

# llama.cpp pre-tokenizer names -> the split the vocabulary was trained with (before byte-level mapping).
_GPT2_SPLIT = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
_LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
                 r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
_CONTROL, _USER_DEFINED = 3, 4


def _bytes_to_unicode() -> dict[int, str]:
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def _pre_tokenizer(pre: str):
    if pre in ("smollm", "starcoder", "refact"):  # digits one by one, then GPT-2 splitting
        return pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    split = _LLAMA3_SPLIT if pre in ("llama3", "llama-bpe", "llama-v3", "smaug-bpe", "dbrx") else _GPT2_SPLIT
    return pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(split), behavior="isolated"),
                                    pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])


class Tokenizer:
    def __init__(self, rust: RustTokenizer, chat_template: Optional[str], eos_token_ids: Iterable[int],
                 bos_token: Optional[str] = None, eos_token: Optional[str] = None, add_bos: bool = False):
        self._tok = rust
        self.chat_template = chat_template
        self.eos_token_ids: set[int] = set(eos_token_ids)
        self.bos_token, self.eos_token, self.add_bos = bos_token, eos_token, add_bos
        self.bos_token_id = rust.token_to_id(bos_token) if bos_token else None
        self._template = None

    @property
    def vocab_size(self) -> int:
        return self._tok.get_vocab_size(with_added_tokens=True)

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        ids = self._tok.encode(text, add_special_tokens=False).ids
        if add_special_tokens and self.add_bos and self.bos_token_id is not None:
            ids = [self.bos_token_id] + ids
        return ids

    def decode(self, ids: Iterable[int], skip_special_tokens: bool = True) -> str:
        return self._tok.decode(list(ids), skip_special_tokens=skip_special_tokens)

    def token_to_id(self, token: str) -> Optional[int]:
        return self._tok.token_to_id(token)

    def render_chat(self, messages: list[dict], add_generation_prompt: bool = True, **extra) -> str:
        if not self.chat_template:
            raise ValueError("this tokenizer has no chat template")
        if self._template is None:
            from jinja2.sandbox import ImmutableSandboxedEnvironment

            def raise_exception(message):
                raise ValueError(message)

            env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
            env.globals["raise_exception"] = raise_exception
            self._template = env.from_string(self.chat_template)
        return self._template.render(messages=messages, add_generation_prompt=add_generation_prompt,
                                     bos_token=self.bos_token or "", eos_token=self.eos_token or "", **extra)

    def apply_chat_template(self, messages: list[dict], add_generation_prompt: bool = True, **extra) -> list[int]:
        return self.encode(self.render_chat(messages, add_generation_prompt, **extra))

    # --- construction -------------------------------------------------------------------------------
    @classmethod
    def from_gguf(cls, path: str | Path) -> "Tokenizer":
        from engine.loader.gguf_file import GgufFile

        return cls.from_gguf_metadata(GgufFile(path).metadata)

    @classmethod
    def from_gguf_metadata(cls, meta: dict) -> "Tokenizer":
        get = meta.get

        model = get("tokenizer.ggml.model")
        if model != "gpt2":
            raise ValueError(f"GGUF tokenizer model {model!r} is not supported (supported: gpt2 byte-level BPE)")
        tokens: list[str] = get("tokenizer.ggml.tokens")
        types: list[int] = get("tokenizer.ggml.token_type") or [1] * len(tokens)
        merges = [tuple(m.split(" ", 1)) for m in get("tokenizer.ggml.merges", [])]
        alphabet = set(_bytes_to_unicode().values())
        spell = _bytes_to_unicode()
        vocab = {(t if set(t) <= alphabet else "".join(spell[b] for b in t.encode("utf-8"))): i
                 for i, t in enumerate(tokens)}
        rust = RustTokenizer(BPE(vocab=vocab, merges=merges, fuse_unk=False))
        rust.pre_tokenizer = _pre_tokenizer(get("tokenizer.ggml.pre", "gpt2"))
        rust.decoder = decoders.ByteLevel()
        special = [AddedToken(t, special=True, normalized=False) for t, ty in zip(tokens, types)
                   if ty == _CONTROL and set(t) <= alphabet]
        rust.add_special_tokens(special)
        rust.add_tokens([AddedToken(t, special=False, normalized=False) for t, ty in zip(tokens, types)
                         if ty == _USER_DEFINED])
        bos_id, eos_id = get("tokenizer.ggml.bos_token_id"), get("tokenizer.ggml.eos_token_id")
        eos_ids = {int(eos_id)} if eos_id is not None else set()
        eot = get("tokenizer.ggml.eot_token_id")
        if eot is not None:
            eos_ids.add(int(eot))
        return cls(rust, get("tokenizer.chat_template"), eos_ids,
                   bos_token=tokens[bos_id] if bos_id is not None else None,
                   eos_token=tokens[eos_id] if eos_id is not None else None,
                   add_bos=bool(get("tokenizer.ggml.add_bos_token", False)))

    @classmethod
    def from_hf_folder(cls, folder: str | Path, eos_token_ids: Iterable[int] = ()) -> "Tokenizer":
        folder = Path(folder)
        tok_file = folder / "tokenizer.json"
        if not tok_file.exists():
            raise FileNotFoundError(f"{folder} has no tokenizer.json")
        rust = RustTokenizer.from_file(str(tok_file))
        cfg_file = folder / "tokenizer_config.json"
        cfg = json.loads(cfg_file.read_text()) if cfg_file.exists() else {}

        def token_str(v):
            return v.get("content") if isinstance(v, dict) else v

        template = cfg.get("chat_template")
        jinja = folder / "chat_template.jinja"
        if template is None and jinja.exists():
            template = jinja.read_text()
        if isinstance(template, list):  # named templates: use the default one
            template = next((t["template"] for t in template if t.get("name") == "default"), template[0]["template"])
        bos, eos = token_str(cfg.get("bos_token")), token_str(cfg.get("eos_token"))
        eos_ids = set(eos_token_ids)
        if eos and rust.token_to_id(eos) is not None:
            eos_ids.add(rust.token_to_id(eos))
        return cls(rust, template, eos_ids, bos_token=bos, eos_token=eos, add_bos=bool(cfg.get("add_bos_token")))
