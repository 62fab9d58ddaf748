"""Real-shaped replies in the tool-call dialects open models write, and the Python each must become.

Each entry: (id, reply, expected code). Replies are spelled as the model families write them
(with their special tokens, as a server that does not parse tool calls returns them), with the
prose, <think> blocks, fences and trailing text they come with. The tool names are `TOOLS`.
"""

from __future__ import annotations

TOOLS = ("get_weather", "search", "add", "brave_search")

CORPUS: list[tuple[str, str, str]] = [
    # Hermes / Qwen2.5 / Qwen3 / QwQ: <tool_call>
    ("qwen2.5 tool_call", '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
     "get_weather(city='Paris')"),
    ("qwen3 think then tool_call",
     "<think>\nThe user wants the weather in Paris. I should call get_weather.\n</think>\n\n<tool_call>\n"
     '{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}\n</tool_call>',
     "get_weather(city='Paris', unit='celsius')"),
    ("qwen3 prose and two calls",
     "I will look up both cities.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n"
     '</tool_call>\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Tokyo"}}\n</tool_call>',
     "get_weather(city='Paris')\nget_weather(city='Tokyo')"),
    ("hermes 3 keys reversed, im_end",
     '<tool_call>\n{"arguments": {"query": "population of Lyon"}, "name": "search"}\n</tool_call><|im_end|>',
     "search(query='population of Lyon')"),
    ("tool_call cut by the stop sequence", '<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 40}}',
     "add(a=2, b=40)"),
    ("granite 3.1 list in tool_call", '<tool_call>[{"name": "get_weather", "arguments": {"city": "Oslo"}}]',
     "get_weather(city='Oslo')"),
    ("qwq chinese", "<think>用户想知道北京的天气。</think>\n<tool_call>\n"
     '{"name": "get_weather", "arguments": {"city": "北京"}}\n</tool_call>', "get_weather(city='北京')"),
    ("tool_call arguments as a JSON string",
     '<tool_call>\n{"name": "add", "arguments": "{\\"a\\": 1, \\"b\\": 2}"}\n</tool_call>', "add(a=1, b=2)"),
    # Qwen3-Coder, Seed-OSS, functionary v3.1, Llama 3.1 custom: <function=...>
    ("qwen3-coder xml", "<tool_call>\n<function=search>\n<parameter=query>\nbest pizza in Naples\n</parameter>\n"
     "</function>\n</tool_call>", "search(query='best pizza in Naples')"),
    ("qwen3-coder two parameters", "I'll check.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nSão Paulo\n"
     "</parameter>\n<parameter=unit>\nfahrenheit\n</parameter>\n</function>\n</tool_call>",
     "get_weather(city='São Paulo', unit='fahrenheit')"),
    ("seed-oss", "<seed:think>I need the weather.</seed:think><seed:tool_call>\n<function=get_weather>\n"
     "<parameter=city>Rome</parameter>\n</function>\n</seed:tool_call>", "get_weather(city='Rome')"),
    ("functionary v3.1", 'Let me check.\n<function=get_weather>{"city": "Berlin"}</function>', "get_weather(city='Berlin')"),
    ("llama 3.1 custom function tag", '<function=add>{"a": 3, "b": 4}</function><|eom_id|>', "add(a=3, b=4)"),
    ("hermes function name= variant", '<function name="search">{"query": "llama 3.1"}</function>',
     "search(query='llama 3.1')"),
    # GLM-4.5+
    ("glm-4.5", "<think>Need the weather</think>\n<tool_call>get_weather\n<arg_key>city</arg_key>\n"
     "<arg_value>Madrid</arg_value>\n</tool_call>", "get_weather(city='Madrid')"),
    ("glm-4.7 no newlines", "<tool_call>add<arg_key>a</arg_key><arg_value>10</arg_value><arg_key>b</arg_key>"
     "<arg_value>32</arg_value></tool_call>", "add(a=10, b=32)"),
    # Mistral
    ("mistral v0.3", '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Lisbon"}}]',
     "get_weather(city='Lisbon')"),
    ("mistral with id and eos", '[TOOL_CALLS] [{"name": "add", "arguments": {"a": 1, "b": 2}, "id": "abc123XYZ"}]</s>',
     "add(a=1, b=2)"),
    ("mistral nemo parallel", '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}, '
     '{"name": "get_weather", "arguments": {"city": "Rome"}}]', "get_weather(city='Paris')\nget_weather(city='Rome')"),
    ("mistral small 3.2 [ARGS]", '[TOOL_CALLS]get_weather[ARGS]{"city": "Vienna"}', "get_weather(city='Vienna')"),
    ("devstral [CALL_ID]", '[TOOL_CALLS]search[CALL_ID]a1b2c3d4e[ARGS]{"query": "vllm tool parser"}',
     "search(query='vllm tool parser')"),
    ("mistral v11 name{args}", '[TOOL_CALLS]add{"a": 5, "b": 6}', "add(a=5, b=6)"),
    ("mistral after prose", 'Sure, let me check the weather for you.[TOOL_CALLS][{"name": "get_weather", '
     '"arguments": {"city": "Nice"}}]', "get_weather(city='Nice')"),
    ("mistral v11 two calls", '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]get_weather[ARGS]{"city": "Lyon"}',
     "get_weather(city='Paris')\nget_weather(city='Lyon')"),
    # Llama 3.x / 4
    ("llama 3.1 python_tag", '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Chicago"}}<|eom_id|>',
     "get_weather(city='Chicago')"),
    ("llama 3.1 json, special tokens skipped", '{"name": "get_weather", "parameters": {"city": "Denver", "unit": "fahrenheit"}}',
     "get_weather(city='Denver', unit='fahrenheit')"),
    ("llama 3.3 type function", '{"type": "function", "name": "search", "parameters": {"query": "SF weather"}}',
     "search(query='SF weather')"),
    ("llama built-in tool", '<|python_tag|>brave_search.call(query="current weather in Menlo Park")<|eom_id|>',
     "brave_search(query='current weather in Menlo Park')"),
    ("llama 3.2 pythonic", '[get_weather(city="San Francisco"), get_weather(city="Seattle")]',
     '[get_weather(city="San Francisco"), get_weather(city="Seattle")]'),
    ("llama 4 pythonic", '<|python_start|>[search(query="Llama 4 release date")]<|python_end|>',
     "[search(query='Llama 4 release date')]"),
    ("llama ipython code", "<|python_tag|>import math\nprint(math.sqrt(2))<|eom_id|>", "import math\nprint(math.sqrt(2))"),
    ("llama json calls with ;", '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}; '
     '{"name": "get_weather", "parameters": {"city": "Rome"}}', "get_weather(city='Paris')\nget_weather(city='Rome')"),
    # Olmo 3
    ("olmo 3", '<function_calls>get_weather(city="Boston")\nsearch(query="Boston marathon", exact=false)</function_calls>',
     "get_weather(city='Boston')\nsearch(query='Boston marathon', exact=False)"),
    # Phi-4-mini, Firefunction, Phi-4
    ("phi-4-mini functools", 'functools[{"name": "get_weather", "arguments": {"city": "Seoul"}}]',
     "get_weather(city='Seoul')"),
    ("firefunction v2", ' functools[{"name": "add", "arguments": {"a": 1, "b": 1}}]', "add(a=1, b=1)"),
    ("phi-4 fenced json with prose", 'To answer this I will call the weather tool.\n\n```json\n{\n  "name": "get_weather",\n'
     '  "arguments": {\n    "city": "Cairo"\n  }\n}\n```\n\nLet me know if you need anything else.',
     "get_weather(city='Cairo')"),
    # IBM Granite
    ("granite 3.0", '<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Zurich"}}]', "get_weather(city='Zurich')"),
    ("granite-20b-fc two calls", '<function_call> {"name": "add", "arguments": {"a": 7, "b": 8}} <function_call> '
     '{"name": "search", "arguments": {"query": "seven"}}', "add(a=7, b=8)\nsearch(query='seven')"),
    # InternLM
    ("internlm 2.5", 'I need to query the weather.<|action_start|><|plugin|>\n{"name": "get_weather", '
     '"parameters": {"city": "Shanghai"}}<|action_end|>', "get_weather(city='Shanghai')"),
    # Jamba, MiniMax, Hunyuan
    ("jamba 1.5", '<tool_calls>[{"name": "search", "arguments": {"query": "Jamba 1.5"}}]</tool_calls>',
     "search(query='Jamba 1.5')"),
    ("minimax one object a line", '<think>weather needed</think>\n<tool_calls>\n{"name": "get_weather", "arguments": '
     '{"city": "Hangzhou"}}\n{"name": "get_weather", "arguments": {"city": "Suzhou"}}\n</tool_calls>',
     "get_weather(city='Hangzhou')\nget_weather(city='Suzhou')"),
    ("hunyuan", '<tool_calls>[{"name": "add", "arguments": {"a": 2, "b": 2}}]</tool_calls>', "add(a=2, b=2)"),
    # Cohere, LangChain structured chat
    ("command r7b", '<|START_THINKING|>I should look it up.<|END_THINKING|><|START_ACTION|>[\n    {"tool_call_id": "0", '
     '"tool_name": "search", "parameters": {"query": "Command R7B"}}\n]<|END_ACTION|>', "search(query='Command R7B')"),
    ("command-r+ Action json", 'Action: ```json\n[\n    {\n        "tool_name": "get_weather",\n        "parameters": '
     '{"city": "Toronto"}\n    }\n]\n```', "get_weather(city='Toronto')"),
    ("langchain structured chat", 'Thought: I need the weather.\nAction:\n```\n{\n  "action": "get_weather",\n'
     '  "action_input": {"city": "Dublin"}\n}\n```', "get_weather(city='Dublin')"),
    ("langchain structured chat final", 'Action:\n```json\n{"action": "Final Answer", "action_input": '
     '"It is sunny in Dublin."}\n```', "final_answer('It is sunny in Dublin.')"),
    # ReAct text
    ("react quoted input", 'Thought: I should search.\nAction: search\nAction Input: "weather in Paris"\nObservation:',
     "search('weather in Paris')"),
    ("react json input", 'Thought: add the numbers\nAction: add\nAction Input: {"a": 19, "b": 23}', "add(a=19, b=23)"),
    ("react raw text input", "Action: search\nAction Input: capital of Australia", "search('capital of Australia')"),
    ("qwen-agent fncall", '✿FUNCTION✿: get_weather\n✿ARGS✿: {"city": "Hong Kong"}', "get_weather(city='Hong Kong')"),
    ("react backticked name", 'Action: `get_weather`\nAction Input: {"city": "Lima"}', "get_weather(city='Lima')"),
    # DeepSeek
    ("deepseek v3", '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n'
     '{"city": "Hangzhou"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>', "get_weather(city='Hangzhou')"),
    ("deepseek r1 think, two calls", '<think>\nNeed weather for two cities.\n</think>\n\n<｜tool▁calls▁begin｜>'
     '<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{"city": "Paris"}\n```<｜tool▁call▁end｜>\n'
     '<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{"city": "Rome"}\n```<｜tool▁call▁end｜>'
     "<｜tool▁calls▁end｜>", "get_weather(city='Paris')\nget_weather(city='Rome')"),
    ("deepseek v3.1", '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>search<｜tool▁sep｜>{"query": "DeepSeek V3.1"}'
     "<｜tool▁call▁end｜><｜tool▁calls▁end｜>", "search(query='DeepSeek V3.1')"),
    # Kimi K2
    ("kimi k2", 'Let me check.<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0'
     '<|tool_call_argument_begin|>{"city": "Beijing"}<|tool_call_end|><|tool_calls_section_end|>',
     "get_weather(city='Beijing')"),
    # gpt-oss harmony
    ("gpt-oss harmony", "<|start|>assistant<|channel|>analysis<|message|>Need to use get_weather.<|end|><|start|>"
     'assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Tokyo"}<|call|>',
     "get_weather(city='Tokyo')"),
    # functionary v3.2
    ("functionary v3.2", '>>>get_weather\n{"city": "Istanbul"}', "get_weather(city='Istanbul')"),
    ("functionary v3.2 text then calls", '>>>all\nLet me check two things.>>>get_weather\n{"city": "Paris"}>>>search\n'
     '{"query": "Paris events"}', "get_weather(city='Paris')\nsearch(query='Paris events')"),
    # FunctionGemma
    ("functiongemma", "<start_function_call>call:get_weather{city:<escape>London<escape>}<end_function_call>",
     "get_weather(city='London')"),
    ("functiongemma numbers", "<start_function_call>call:add{a:2,b:3}<end_function_call>", "add(a=2, b=3)"),
    # Apertus
    ("apertus", 'I will check.<|tools_prefix|>[{"get_weather": {"city": "Bern"}}, {"search": {"query": "Bern news"}}]'
     "<|tools_suffix|>", "get_weather(city='Bern')\nsearch(query='Bern news')"),
    # Gemma
    ("gemma tool_code", '```tool_code\nget_weather(city="Munich")\n```', 'get_weather(city="Munich")'),
    ("gemma 3 json", '```json\n{"name": "get_weather", "parameters": {"city": "Kyoto"}}\n```', "get_weather(city='Kyoto')"),
    # OpenAI-shaped text
    ("openai function shape", '{"type": "function", "function": {"name": "get_weather", "arguments": "{\\"city\\": \\"Paris\\"}"}}',
     "get_weather(city='Paris')"),
    ("openai message as text", '{"role": "assistant", "content": null, "tool_calls": [{"id": "call_abc", "type": '
     '"function", "function": {"name": "search", "arguments": "{\\"query\\": \\"openai\\"}"}}]}', "search(query='openai')"),
    ("openai legacy function_call", '{"function_call": {"name": "add", "arguments": "{\\"a\\": 2, \\"b\\": 2}"}}',
     "add(a=2, b=2)"),
    ("anthropic tool_use", "I'll use the tool.\n" '{"type": "tool_use", "id": "toolu_01", "name": "get_weather", '
     '"input": {"city": "Sydney"}}', "get_weather(city='Sydney')"),
    ("gemini functionCall", '{"functionCall": {"name": "get_weather", "args": {"city": "Mumbai"}}}',
     "get_weather(city='Mumbai')"),
    ("xlam list", '[{"name": "get_weather", "arguments": {"city": "New York"}}, {"name": "search", "arguments": '
     '{"query": "NYC"}}]', "get_weather(city='New York')\nsearch(query='NYC')"),
    ("xlam think and fence", '<think>two calls needed</think>\n```json\n[{"name": "add", "arguments": {"a": 1, "b": 2}}]\n```',
     "add(a=1, b=2)"),
    # Other JSON spellings
    ("tool + arguments", '{"tool": "add", "arguments": {"a": 1, "b": 2}}', "add(a=1, b=2)"),
    ("tool_name + tool_input", '{"tool_name": "search", "tool_input": {"query": "x"}}', "search(query='x')"),
    ("function + args", '{"function": "get_weather", "args": {"city": "Oslo"}}', "get_weather(city='Oslo')"),
    ("action + text input", '{"action": "search", "action_input": "weather in Oslo"}', "search('weather in Oslo')"),
    ("json mid-sentence", 'I\'ll call {"name": "search", "arguments": {"query": "cats"}} now.', "search(query='cats')"),
    ("llama.cpp generic tool_call", '{"tool_call": {"name": "get_weather", "arguments": {"city": "Perth"}}}',
     "get_weather(city='Perth')"),
    ("llama.cpp generic tool_calls with id", '{"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 1}, "id": "call0001"}]}',
     "add(a=1, b=1)"),
    ("functions. prefix", '{"name": "functions.get_weather", "arguments": {"city": "Rome"}}', "get_weather(city='Rome')"),
    ("final answer", '{"name": "final_answer", "arguments": {"answer": "Paris"}}', "final_answer('Paris')"),
    ("tool + final_answer", '{"tool": "final_answer", "arguments": {"answer": "Paris"}}', "final_answer('Paris')"),
    ("a thought beside the call", '{"thought": "I need the weather first.", "name": "get_weather", "arguments": '
     '{"city": "Quito"}}', "get_weather(city='Quito')"),
    ("draft in think, call in fence, trailing text",
     '<think>\nI will call get_weather for Paris. Maybe {"name": "search", "arguments": {}} first? No.\n</think>\n'
     'Calling the tool:\n```json\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n```\nI will wait for the result.',
     "get_weather(city='Paris')"),
]
