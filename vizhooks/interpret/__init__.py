"""Why did the model decide: Grad-CAM (cam), twelve explanation methods side by side
(methods), their faithfulness scores (faithfulness) and the model-randomisation sanity
check (sanity).
"""
