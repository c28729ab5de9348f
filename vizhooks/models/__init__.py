"""Models and what they read: architectures (building a torchvision / timm network), weights
(resolution, the bounded download), images (reading, input spec, preprocessing), registry
(the model registry, devices, load_model), layers (naming and grouping layers) and maps
(token and channels-last outputs as maps).
"""
