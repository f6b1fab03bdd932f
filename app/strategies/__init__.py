"""The four ways of coping with a crowd; each knows the lane, none knows onnxruntime."""
