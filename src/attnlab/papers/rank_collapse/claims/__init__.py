"""rank_collapse claims."""
