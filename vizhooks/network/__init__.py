"""The whole network and one convolution made visible: every conv at once (overview), one
output value taken apart (convolution) and the window sliding over the input (sliding).
"""
