"""Channel relevance: which channels of a layer carried a decision (Taylor, ablation, LRP through Zennit),
and where in the photo each found its evidence (conditional heatmaps).

``vizhooks.relevance`` is the public name; the code lives in :mod:`vizhooks.interpret.relevance`, beside
the other explanation methods.
"""

from vizhooks.interpret.relevance import (
    METHODS,
    ChannelRelevance,
    RelevanceError,
    channel_relevance,
    conditional_heatmap,
    conditional_heatmaps,
    lrp_attribution,
    lrp_heatmap,
    taylor_relevances,
)

__all__ = ["METHODS", "ChannelRelevance", "RelevanceError", "channel_relevance", "conditional_heatmap",
           "conditional_heatmaps", "lrp_attribution", "lrp_heatmap", "taylor_relevances"]
