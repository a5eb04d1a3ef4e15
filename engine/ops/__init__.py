"""Pure-torch kernels: Mamba2 SSD scan and recurrent step, causal depthwise conv."""
