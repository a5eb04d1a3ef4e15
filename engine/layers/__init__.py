"""One layer per module: norms, linear (dense or quantized weights), attention, Mamba2, MLP, MoE, embeddings/RoPE."""
