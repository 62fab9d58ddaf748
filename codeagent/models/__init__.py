"""Models: the client of OpenAI-compatible servers, the scripted model, what a reply holds,
and constrained decoding (constrain/).
"""
