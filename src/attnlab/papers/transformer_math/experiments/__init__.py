"""transformer_math experiments."""
