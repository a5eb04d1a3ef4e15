"""Model classes built from a ModelConfig."""
