"""Thin ``nn.Module`` wrappers over :mod:`attnlab.ops`."""
