"""transformer_math claims."""
