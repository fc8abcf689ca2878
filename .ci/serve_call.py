"""CI: one tool call through `textreact serve` (the URL given) with the official openai SDK."""

import json
import sys
import time

import openai

client = openai.OpenAI(base_url=sys.argv[1], api_key="none", max_retries=0, timeout=120)
for _ in range(60):  # until the proxy listens
    try:
        client.models.list()
        break
    except openai.APIConnectionError:
        time.sleep(1)
weather = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "the city, e.g. Paris"}},
            "required": ["city"],
        },
    },
}
reply = client.chat.completions.create(
    model="any",
    messages=[{"role": "user", "content": "What is the weather in Tokyo right now?"}],
    tools=[weather],
    temperature=0,  # one reply, the same each run: the check is of the proxy, not of sampling
)
(call,) = reply.choices[0].message.tool_calls or [None]
assert call is not None, f"no tool call: {reply.choices[0].message}"
arguments = json.loads(call.function.arguments)
assert call.function.name == "get_weather" and arguments.get("city"), call
print(f"  tool call: {call.function.name}({call.function.arguments})")
