"""A user's own tool, as the README shows it:
`textreact run --tools examples/weather.py:TOOLS "What is the weather in Paris right now?"`."""

from textreact import NotFound, tool

_WEATHER = {"Taipei": "22 °C, light rain", "Tokyo": "18 °C, sunny", "Paris": "11 °C, cloudy"}


@tool(timeout=5)
def get_weather(city: str) -> str:
    """Use this when the question asks about the current weather in a city.

    Args:
        city: the city's name, e.g. Paris
    """
    found = _WEATHER.get(city.strip().title())
    if found is None:
        return NotFound(f"no weather for {city!r}; known cities: {', '.join(_WEATHER)}")
    return f"{found} in {city.strip().title()}"


TOOLS = [get_weather]
