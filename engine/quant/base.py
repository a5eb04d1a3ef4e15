"""What every compressed weight offers: its logical shape, dequantize, device move and expert indexing."""
from __future__ import annotations

import torch


class QuantizedTensor:
    shape: tuple[int, ...]

    def dequantize(self, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        raise NotImplementedError

    def to(self, device) -> "QuantizedTensor":
        raise NotImplementedError

    def __getitem__(self, i: int) -> "QuantizedTensor":
        """Select along the leading (expert) dim of a stacked [E, out, in] weight."""
        raise NotImplementedError

    @property
    def nbytes(self) -> int:
        raise NotImplementedError
