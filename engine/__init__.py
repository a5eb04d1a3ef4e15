"""Embedded pure-PyTorch inference engine for hybrid Mamba2 / attention / MoE models and Llama-style models."""
