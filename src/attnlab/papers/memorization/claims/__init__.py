"""memorization claims."""
