"""memorization experiments."""
