"""The agent loop: CodeAgent (ask, extract, execute, observe), its action formats and modes
(single call, native tool calling, auto), the conversation memory, the prompts.
"""
