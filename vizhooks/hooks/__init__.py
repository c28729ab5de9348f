"""The hook kinds and what is built directly on them: forward hooks (capture), tensor and full
backward hooks (gradients), hooks that change a layer's output (intervene) or put another
photo's output in its place (patching: activation patching), one pass for a
summary of every layer (summary) and the memory budget of a capture (budget). Every one goes
through the one owner of hook work, vizhooks._hooks.
"""
