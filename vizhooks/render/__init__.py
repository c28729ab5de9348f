"""Drawing: feature grids, overlays and figures as PNG (figures), files written beside them (export).

The bottom of the package: torch tensors and numpy arrays in, matplotlib figures out.
"""
