"""Tools: typed host functions the model's code calls by name, their schemas, the grants the
model is told about, and the figures and images tools hand over.
"""
