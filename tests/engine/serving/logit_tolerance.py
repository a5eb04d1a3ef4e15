"""The tolerance check shared by the bf16-attention tests (decode and prefill): logits of the int4 model with
fp32 attention and with bf16 attention, each against the exact fp32 path."""
from __future__ import annotations

import torch


def assert_bf16_attention_within_tolerance(want: torch.Tensor, fp32_attn: torch.Tensor, bf16_attn: torch.Tensor,
                                           max_abs: float, mean_abs: float, top1: float) -> dict[str, float]:
    """Both within (max |d|, mean |d|, top-1 agreement) of ``want``; bf16 attention adds at most half again the
    mean error fp32 attention has. -> the mean errors by name."""
    assert not torch.equal(bf16_attn, fp32_attn)  # really another attention path
    errs = {}
    for name, got in (("fp32 attention", fp32_attn), ("bf16 attention", bf16_attn)):
        diff = (got - want).abs()
        errs[name] = float(diff.mean())
        agree = float((got.argmax(-1) == want.argmax(-1)).float().mean())
        print(f"{name}: max {float(diff.max()):.3f} mean {errs[name]:.4f} top-1 {agree:.3f}")
        assert float(diff.max()) < max_abs and errs[name] < mean_abs and agree >= top1
    assert errs["bf16 attention"] < 1.5 * errs["fp32 attention"]
    return errs
