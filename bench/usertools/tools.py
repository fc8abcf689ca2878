"""Tools of the kind users bring: a shop's orders and catalogue, an HR directory, a ticket
tracker, weather, dates, units, currencies, stock prices, shipping and text statistics. Every
result comes from the fixed tables below (no network, no clock), so an answer can be checked.

    textreact compare --suite bench/usertools/dev.jsonl --tools bench/usertools/tools.py:TOOLS

Shapes covered: enums, optional arguments with defaults, a list argument, nested objects
(JSON Schema tools via `Tool.from_schema`), ids and dates with a `pattern`, ISO currency and
country codes; results as JSON, plain numbers and text; failures as a `ToolError` whose message
says what a valid input looks like.
"""

from __future__ import annotations

import datetime as _dt
import math as _math
import re as _re
import zlib as _zlib
from typing import Annotated, Any, Literal

from pydantic import Field

from textreact import NotFound, Tool, tool
from textreact.errors import ToolError

__all__ = [
    "TOOLS",
    "add_days",
    "check_inventory",
    "convert_currency",
    "convert_units",
    "create_ticket",
    "days_between",
    "get_employee",
    "get_order",
    "get_weather",
    "list_orders",
    "monthly_payment",
    "search_products",
    "shipping_quote",
    "stock_price",
    "text_stats",
]

_DATE = r"^\d{4}-\d{2}-\d{2}$"
_DateText = Annotated[str, Field(pattern=_DATE, examples=["2024-03-15"])]


def _date(text: str, what: str = "date") -> _dt.date:
    try:
        return _dt.date.fromisoformat(text)
    except ValueError:
        raise ToolError(
            f"{text!r} is not a valid {what}; write dates as YYYY-MM-DD, e.g. 2024-03-15"
        ) from None


# --- units ---------------------------------------------------------------------------------

#: unit -> (dimension, size in the dimension's base unit); temperatures are handled apart.
_UNITS: dict[str, tuple[str, float]] = {
    "km": ("length", 1000.0),
    "m": ("length", 1.0),
    "cm": ("length", 0.01),
    "mi": ("length", 1609.344),
    "ft": ("length", 0.3048),
    "in": ("length", 0.0254),
    "kg": ("mass", 1.0),
    "g": ("mass", 0.001),
    "lb": ("mass", 0.45359237),
    "oz": ("mass", 0.028349523125),
    "l": ("volume", 1.0),
    "ml": ("volume", 0.001),
    "gal": ("volume", 3.785411784),
    "celsius": ("temperature", 1.0),
    "fahrenheit": ("temperature", 1.0),
}
_Unit = Literal[
    "km", "m", "cm", "mi", "ft", "in", "kg", "g", "lb", "oz", "l", "ml", "gal",
    "celsius", "fahrenheit",
]  # fmt: skip


@tool(example={"value": 10, "from_unit": "km", "to_unit": "mi"})
def convert_units(value: float, from_unit: _Unit, to_unit: _Unit) -> float:
    """Use this to convert a quantity between units of length, mass, volume or temperature
    (km, miles, feet, kg, pounds, litres, gallons, Celsius, Fahrenheit ...).

    Args:
        value: the quantity to convert
        from_unit: the unit the value is in (mi = miles, lb = pounds, gal = US gallons)
        to_unit: the unit wanted
    """
    source, target = _UNITS[from_unit], _UNITS[to_unit]
    if source[0] != target[0]:
        raise ToolError(
            f"cannot convert {from_unit} ({source[0]}) to {to_unit} ({target[0]}); "
            "both units must measure the same thing"
        )
    if source[0] == "temperature":
        celsius = value if from_unit == "celsius" else (value - 32) * 5 / 9
        result = celsius if to_unit == "celsius" else celsius * 9 / 5 + 32
    else:
        result = value * source[1] / target[1]
    return round(result, 4)


# --- weather -------------------------------------------------------------------------------

#: city -> (temperature °C, conditions, humidity %, wind km/h)
_WEATHER: dict[str, tuple[float, str, int, int]] = {
    "Taipei": (27.0, "light rain", 84, 12),
    "Tokyo": (18.5, "cloudy", 61, 9),
    "Seoul": (14.0, "clear", 45, 15),
    "Shanghai": (21.0, "overcast", 70, 11),
    "Beijing": (16.5, "haze", 38, 7),
    "Singapore": (31.0, "thunderstorms", 88, 6),
    "Sydney": (22.5, "sunny", 55, 20),
    "London": (11.0, "drizzle", 80, 18),
    "Paris": (13.5, "partly cloudy", 66, 14),
    "Berlin": (9.0, "windy", 58, 31),
    "Madrid": (24.0, "sunny", 30, 10),
    "New York": (15.0, "clear", 50, 16),
    "Chicago": (7.5, "snow showers", 77, 27),
    "Toronto": (5.0, "cloudy", 68, 22),
    "San Francisco": (17.0, "fog", 83, 13),
}
_CITY_ALIASES = {
    "台北": "Taipei", "臺北": "Taipei", "东京": "Tokyo", "東京": "Tokyo", "首尔": "Seoul",
    "上海": "Shanghai", "北京": "Beijing", "新加坡": "Singapore", "悉尼": "Sydney",
    "伦敦": "London", "巴黎": "Paris", "柏林": "Berlin", "马德里": "Madrid",
    "纽约": "New York", "芝加哥": "Chicago", "多伦多": "Toronto", "旧金山": "San Francisco",
    "nyc": "New York", "sf": "San Francisco",
}  # fmt: skip


def _city(name: str) -> str:
    key = " ".join(name.replace(",", " ").split())
    for city in _WEATHER:
        if key.casefold() == city.casefold() or key.casefold().startswith(city.casefold() + " "):
            return city
    if key in _CITY_ALIASES or key.casefold() in _CITY_ALIASES:
        return _CITY_ALIASES.get(key) or _CITY_ALIASES[key.casefold()]
    raise ToolError(f"no weather station for {name!r}; known cities: {', '.join(_WEATHER)}")


@tool(example={"city": "Tokyo"})
def get_weather(city: str, unit: Literal["celsius", "fahrenheit"] = "celsius") -> dict[str, Any]:
    """Use this when the user asks about the current weather or temperature in a city.

    Args:
        city: the city name in English, e.g. "Tokyo" or "New York"
        unit: temperature unit of the reply
    """
    name = _city(city)
    celsius, conditions, humidity, wind = _WEATHER[name]
    temperature = celsius if unit == "celsius" else round(celsius * 9 / 5 + 32, 1)
    return {
        "city": name,
        "temperature": temperature,
        "unit": unit,
        "conditions": conditions,
        "humidity_percent": humidity,
        "wind_kmh": wind,
    }


# --- dates ---------------------------------------------------------------------------------


@tool(example={"start": "2024-01-01", "end": "2024-03-15"})
def days_between(start: _DateText, end: _DateText) -> int:
    """Use this to count the days from one date to another (negative if end is before start).

    Args:
        start: the first date, YYYY-MM-DD
        end: the second date, YYYY-MM-DD
    """
    return (_date(end, "end date") - _date(start, "start date")).days


@tool(example={"date": "2024-03-15", "days": 30})
def add_days(date: _DateText, days: int) -> str:
    """Use this to find the date a number of days after (or, with a negative number, before)
    a given date, e.g. a deadline or a delivery date.

    Args:
        date: the starting date, YYYY-MM-DD
        days: how many days to add; negative to go back
    """
    result = _date(date) + _dt.timedelta(days=days)
    return f"{result.isoformat()} ({result.strftime('%A')})"


# --- orders --------------------------------------------------------------------------------

_Currency = Literal["USD", "EUR", "GBP", "JPY", "CNY", "TWD", "CAD", "AUD", "CHF", "INR"]
_Status = Literal["pending", "shipped", "delivered", "cancelled"]

#: order id -> (customer email, date, status, currency, [(sku, quantity, unit price)])
_ORDERS: dict[str, tuple[str, str, str, str, list[tuple[str, int, float]]]] = {
    "ORD-10001": ("alice@example.com", "2024-01-08", "delivered", "USD",
                  [("SKU-1001", 1, 129.0), ("SKU-1007", 2, 19.5)]),
    "ORD-10002": ("bob@example.com", "2024-01-15", "delivered", "USD",
                  [("SKU-1004", 1, 349.99)]),
    "ORD-10003": ("alice@example.com", "2024-02-02", "shipped", "USD",
                  [("SKU-1010", 3, 24.0), ("SKU-1012", 1, 59.9)]),
    "ORD-10004": ("chen.wei@example.com", "2024-02-11", "delivered", "CNY",
                  [("SKU-1002", 1, 899.0), ("SKU-1008", 2, 45.0)]),
    "ORD-10005": ("dana@example.com", "2024-02-20", "cancelled", "GBP",
                  [("SKU-1005", 1, 74.5)]),
    "ORD-10006": ("bob@example.com", "2024-03-01", "shipped", "USD",
                  [("SKU-1003", 2, 89.0), ("SKU-1014", 1, 15.25)]),
    "ORD-10007": ("alice@example.com", "2024-03-05", "pending", "USD",
                  [("SKU-1006", 1, 210.0)]),
    "ORD-10008": ("dana@example.com", "2024-03-09", "delivered", "GBP",
                  [("SKU-1009", 4, 12.75), ("SKU-1011", 1, 38.0)]),
    "ORD-10009": ("chen.wei@example.com", "2024-03-12", "pending", "CNY",
                  [("SKU-1013", 2, 168.0)]),
    "ORD-10010": ("erik@example.com", "2024-03-14", "shipped", "EUR",
                  [("SKU-1004", 1, 329.0), ("SKU-1007", 1, 18.0)]),
    "ORD-10011": ("bob@example.com", "2024-03-18", "pending", "USD",
                  [("SKU-1015", 1, 1199.0)]),
    "ORD-10012": ("erik@example.com", "2024-03-22", "cancelled", "EUR",
                  [("SKU-1002", 1, 119.0)]),
}  # fmt: skip
_OrderId = Annotated[str, Field(pattern=r"^ORD-\d{5}$", examples=["ORD-10001"])]


def _order_total(order_id: str) -> float:
    return round(sum(qty * price for _, qty, price in _ORDERS[order_id][4]), 2)


@tool(example={"order_id": "ORD-10001"})
def get_order(order_id: _OrderId) -> dict[str, Any]:
    """Use this to look up one order by its id (ORD- and five digits): its date, status,
    items and total.

    Args:
        order_id: the order id, e.g. ORD-10001
    """
    if order_id not in _ORDERS:
        raise ToolError(
            f"no order {order_id}; order ids look like ORD-10001 (ask the customer to check it, "
            "or use list_orders with their email)"
        )
    email, date, status, currency, items = _ORDERS[order_id]
    return {
        "order_id": order_id,
        "customer": email,
        "date": date,
        "status": status,
        "items": [
            {"sku": sku, "name": _PRODUCTS[sku][0], "quantity": qty, "unit_price": price}
            for sku, qty, price in items
        ],
        "total": _order_total(order_id),
        "currency": currency,
    }


@tool(example={"customer_email": "alice@example.com"})
def list_orders(customer_email: str, status: _Status | None = None) -> list[dict[str, Any]]:
    """Use this to list a customer's orders, newest first, when you know their email address;
    optionally only the orders with one status.

    Args:
        customer_email: the customer's email address
        status: only orders with this status; all orders when left out
    """
    email = customer_email.strip().casefold()
    if not any(order[0] == email for order in _ORDERS.values()):
        raise ToolError(f"no customer with the email {customer_email!r}")
    found = [
        {"order_id": oid, "date": o[1], "status": o[2], "total": _order_total(oid),
         "currency": o[3]}
        for oid, o in _ORDERS.items()
        if o[0] == email and (status is None or o[2] == status)
    ]  # fmt: skip
    return sorted(found, key=lambda order: order["date"], reverse=True)


# --- currencies ----------------------------------------------------------------------------

#: units of each currency for one US dollar (a fixed table, not live rates)
_PER_USD = {
    "USD": 1.0, "EUR": 0.92, "GBP": 0.79, "JPY": 151.2, "CNY": 7.24, "TWD": 32.1,
    "CAD": 1.36, "AUD": 1.53, "CHF": 0.88, "INR": 83.3,
}  # fmt: skip


@tool(example={"amount": 100, "from_currency": "USD", "to_currency": "EUR"})
def convert_currency(amount: float, from_currency: _Currency, to_currency: _Currency) -> float:
    """Use this to convert an amount of money from one currency to another at today's rate.

    Args:
        amount: the amount of money
        from_currency: ISO 4217 code of the amount's currency, e.g. USD
        to_currency: ISO 4217 code of the currency wanted, e.g. EUR
    """
    return round(amount / _PER_USD[from_currency] * _PER_USD[to_currency], 2)


# --- products ------------------------------------------------------------------------------

_Category = Literal["electronics", "kitchen", "outdoor", "books", "clothing"]
#: sku -> (name, category, price in USD, units in stock per warehouse)
_PRODUCTS: dict[str, tuple[str, str, float, dict[str, int]]] = {
    "SKU-1001": ("Wireless Headphones", "electronics", 129.0,
                 {"berlin": 14, "dallas": 32, "singapore": 0}),
    "SKU-1002": ("Espresso Machine", "kitchen", 119.0,
                 {"berlin": 5, "dallas": 9, "singapore": 3}),
    "SKU-1003": ("Hiking Backpack 40L", "outdoor", 89.0,
                 {"berlin": 21, "dallas": 7, "singapore": 12}),
    "SKU-1004": ("Mechanical Keyboard", "electronics", 349.99,
                 {"berlin": 0, "dallas": 4, "singapore": 6}),
    "SKU-1005": ("Rain Jacket", "clothing", 74.5,
                 {"berlin": 18, "dallas": 0, "singapore": 2}),
    "SKU-1006": ("Camping Tent 2P", "outdoor", 210.0,
                 {"berlin": 3, "dallas": 11, "singapore": 0}),
    "SKU-1007": ("USB-C Cable 2m", "electronics", 19.5,
                 {"berlin": 120, "dallas": 85, "singapore": 64}),
    "SKU-1008": ("Chef's Knife", "kitchen", 45.0,
                 {"berlin": 16, "dallas": 22, "singapore": 9}),
    "SKU-1009": ("Wool Socks (pair)", "clothing", 12.75,
                 {"berlin": 40, "dallas": 55, "singapore": 10}),
    "SKU-1010": ("Paperback: The Quiet Harbour", "books", 24.0,
                 {"berlin": 8, "dallas": 13, "singapore": 5}),
    "SKU-1011": ("Trekking Poles", "outdoor", 38.0,
                 {"berlin": 12, "dallas": 6, "singapore": 4}),
    "SKU-1012": ("Cast Iron Pan 28cm", "kitchen", 59.9,
                 {"berlin": 7, "dallas": 19, "singapore": 0}),
    "SKU-1013": ("Wireless Mouse", "electronics", 29.0,
                 {"berlin": 25, "dallas": 30, "singapore": 18}),
    "SKU-1014": ("Hardcover: Field Guide to Birds", "books", 15.25,
                 {"berlin": 2, "dallas": 9, "singapore": 1}),
    "SKU-1015": ("4K Monitor 27in", "electronics", 1199.0,
                 {"berlin": 1, "dallas": 3, "singapore": 2}),
    "SKU-1016": ("Down Jacket", "clothing", 189.0,
                 {"berlin": 9, "dallas": 2, "singapore": 0}),
    "SKU-1017": ("Electric Kettle", "kitchen", 34.99,
                 {"berlin": 11, "dallas": 14, "singapore": 8}),
}  # fmt: skip
#: words that say nothing about which product is meant ("the cheapest item you sell")
_STOP_WORDS = frozenset({
    "a", "an", "the", "for", "of", "and", "with", "in", "to", "any", "all", "our", "your", "you",
    "we", "sell", "buy", "product", "products", "item", "items", "thing", "things", "cheap",
    "cheapest", "best",
})  # fmt: skip


@tool(example={"query": "headphones"})
def search_products(
    query: str,
    max_price: Annotated[float, Field(gt=0)] | None = None,
    category: _Category | None = None,
) -> list[dict[str, Any]] | NotFound:
    """Use this to find products in our shop by keywords, optionally under a price (USD) or in
    one category; cheapest first, at most 5.

    Args:
        query: words to look for in product names, e.g. "jacket" or "wireless"
        max_price: the highest price in USD to include
        category: only products in this category
    """
    words = [w for w in _re.findall(r"[\w-]+", query.casefold()) if w not in _STOP_WORDS]
    found = []
    for sku, (name, kind, price, _) in _PRODUCTS.items():
        text = f"{name} {kind}".casefold()
        if words and not any(w in text or w.rstrip("s") in text for w in words):
            continue
        if (max_price is not None and price > max_price) or (category and kind != category):
            continue
        found.append({"sku": sku, "name": name, "price": price, "category": kind})
    if not found:
        return NotFound(f"no products match {query!r} with those filters")
    return sorted(found, key=lambda product: product["price"])[:5]


_Warehouse = Literal["berlin", "dallas", "singapore"]


@tool(example={"sku": "SKU-1001"})
def check_inventory(
    sku: Annotated[str, Field(pattern=r"^SKU-\d{4}$", examples=["SKU-1001"])],
    warehouse: _Warehouse | None = None,
) -> int:
    """Use this to see how many units of a product are in stock, in one warehouse or in all.

    Args:
        sku: the product's SKU, e.g. SKU-1001 (search_products gives it)
        warehouse: one warehouse; the total over all warehouses when left out
    """
    if sku not in _PRODUCTS:
        raise ToolError(f"no product {sku}; SKUs look like SKU-1001 (search_products finds them)")
    stock = _PRODUCTS[sku][3]
    return stock[warehouse] if warehouse else sum(stock.values())


# --- employees (JSON Schema tool) ----------------------------------------------------------

#: id -> (name, title, department, start date, office, manager id)
_EMPLOYEES: dict[str, tuple[str, str, str, str, str, str | None]] = {
    "E1001": ("Maria Santos", "Chief Executive Officer", "Executive", "2015-04-01", "Lisbon",
              None),
    "E1002": ("Kenji Watanabe", "VP Engineering", "Engineering", "2016-09-12", "Tokyo", "E1001"),
    "E1003": ("Priya Raman", "Engineering Manager", "Engineering", "2018-01-22", "Bangalore",
              "E1002"),
    "E1004": ("Tom Becker", "Backend Engineer", "Engineering", "2021-06-07", "Berlin", "E1003"),
    "E1005": ("Lin Mei", "Frontend Engineer", "Engineering", "2022-11-14", "Taipei", "E1003"),
    "E1006": ("Olivia Brown", "Head of Support", "Support", "2017-03-30", "Dublin", "E1001"),
    "E1007": ("Samuel Okafor", "Support Specialist", "Support", "2023-02-06", "Lagos", "E1006"),
    "E1008": ("Zhang Wei", "Data Analyst", "Finance", "2020-08-17", "Shanghai", "E1001"),
}  # fmt: skip


def _get_employee(employee_id: str) -> dict[str, Any]:
    if employee_id not in _EMPLOYEES:
        raise ToolError(f"no employee {employee_id}; employee ids look like E1001")
    name, title, department, start, office, manager = _EMPLOYEES[employee_id]
    return {
        "id": employee_id,
        "name": name,
        "title": title,
        "department": department,
        "start_date": start,
        "office": office,
        "manager": None if manager is None else {"id": manager, "name": _EMPLOYEES[manager][0]},
    }


get_employee = Tool.from_schema(
    "get_employee",
    "Use this to look up a colleague in the company directory by employee id (E and four "
    "digits): name, job title, department, office, start date and manager.",
    {
        "type": "object",
        "properties": {
            "employee_id": {
                "type": "string",
                "pattern": r"^E\d{4}$",
                "description": "the employee id, e.g. E1004",
            }
        },
        "required": ["employee_id"],
        "additionalProperties": False,
    },
    _get_employee,
    example={"employee_id": "E1004"},
)


# --- tickets (JSON Schema tool, nested object) ---------------------------------------------

_TEAMS = ("billing", "support", "engineering", "logistics")


def _create_ticket(
    title: str,
    priority: str,
    tags: list[str] | None = None,
    assignee: dict[str, str] | None = None,
) -> str:
    number = 1000 + _zlib.crc32(title.strip().casefold().encode()) % 9000
    line = f"Created ticket TCK-{number}: {title.strip()!r}, priority {priority}"
    if tags:
        line += f", tags {', '.join(tags)}"
    if assignee:
        who = assignee["team"] + (f"/{assignee['user']}" if assignee.get("user") else "")
        line += f", assigned to {who}"
    return line + "."


create_ticket = Tool.from_schema(
    "create_ticket",
    "Use this when the user wants to open (file, create) a support or bug ticket; it returns "
    "the new ticket's id.",
    {
        "type": "object",
        "properties": {
            "title": {
                "type": "string",
                "minLength": 3,
                "description": "a short summary of the problem",
            },
            "priority": {"type": "string", "enum": ["low", "medium", "high", "urgent"]},
            "tags": {
                "type": "array",
                "items": {"type": "string"},
                "description": 'labels for the ticket, e.g. ["login", "mobile"]',
            },
            "assignee": {
                "type": "object",
                "description": (
                    'who should work on it, e.g. {"team": "engineering", "user": "j.lee"}; '
                    "left out, the ticket goes to triage"
                ),
                "properties": {
                    "team": {"type": "string", "enum": list(_TEAMS)},
                    "user": {
                        "type": "string",
                        "pattern": r"^[a-z]+(\.[a-z]+)?$",
                        "description": "a username such as j.lee",
                    },
                },
                "required": ["team"],
                "additionalProperties": False,
            },
        },
        "required": ["title", "priority"],
        "additionalProperties": False,
    },
    _create_ticket,
    example={"title": "Login page times out", "priority": "high", "tags": ["login"]},
)


# --- stock prices (JSON Schema tool) -------------------------------------------------------

#: fictional tickers; closing prices in USD on three trading days
_PRICE_DATES = ("2024-03-01", "2024-03-08", "2024-03-15")
_PRICES: dict[str, tuple[float, float, float]] = {
    "ACME": (142.10, 147.85, 151.30),
    "NOVA": (38.40, 36.95, 35.20),
    "QBIT": (512.00, 498.75, 530.60),
    "ZEPH": (12.34, 12.80, 13.05),
    "HELX": (88.00, 91.25, 90.10),
    "ORBT": (204.50, 199.00, 210.75),
}


def _stock_price(symbol: str, date: str | None = None) -> float:
    if symbol not in _PRICES:
        raise ToolError(
            f"unknown symbol {symbol}; symbols are 1-5 capital letters; listed: "
            f"{', '.join(_PRICES)}"
        )
    day = date or _PRICE_DATES[-1]
    if day not in _PRICE_DATES:
        raise ToolError(f"no closing price on {day}; prices exist for {', '.join(_PRICE_DATES)}")
    return _PRICES[symbol][_PRICE_DATES.index(day)]


stock_price = Tool.from_schema(
    "stock_price",
    "Use this to get a stock's closing price in USD by its ticker symbol; the latest close "
    "unless a date is given.",
    {
        "type": "object",
        "properties": {
            "symbol": {
                "type": "string",
                "pattern": r"^[A-Z]{1,5}$",
                "description": "the ticker symbol in capitals, e.g. ACME",
            },
            "date": {
                "type": "string",
                "pattern": _DATE,
                "description": "a trading day, YYYY-MM-DD; the latest close when left out",
            },
        },
        "required": ["symbol"],
        "additionalProperties": False,
    },
    _stock_price,
    example={"symbol": "ACME"},
)


# --- shipping ------------------------------------------------------------------------------

#: ISO 3166-1 alpha-2 country -> zone; zone -> (base USD, USD per kg, days standard)
_ZONES = {
    "US": 1, "CA": 1, "MX": 1,
    "DE": 2, "FR": 2, "GB": 2, "NL": 2, "ES": 2,
    "JP": 3, "TW": 3, "CN": 3, "SG": 3, "AU": 3, "KR": 3,
}  # fmt: skip
_RATES = {1: (8.0, 2.5, 4), 2: (15.0, 4.0, 7), 3: (18.0, 5.5, 9)}


@tool(example={"weight_kg": 2.5, "destination": "DE"})
def shipping_quote(
    weight_kg: Annotated[float, Field(gt=0, le=30)],
    destination: Annotated[str, Field(pattern=r"^[A-Z]{2}$", examples=["DE"])],
    express: bool = False,
) -> dict[str, Any]:
    """Use this to quote what shipping a parcel from our US warehouse costs and how long it
    takes, by weight and destination country.

    Args:
        weight_kg: the parcel's weight in kilograms (at most 30)
        destination: ISO 3166 two-letter country code, e.g. DE for Germany, JP for Japan
        express: express delivery (faster, dearer)
    """
    if destination not in _ZONES:
        raise ToolError(f"we do not ship to {destination}; countries served: {', '.join(_ZONES)}")
    base, per_kg, days = _RATES[_ZONES[destination]]
    price = base + per_kg * weight_kg
    if express:
        price, days = price * 1.8, _math.ceil(days / 2)
    return {
        "destination": destination,
        "service": "express" if express else "standard",
        "price": round(price, 2),
        "currency": "USD",
        "delivery_days": days,
    }


# --- text ----------------------------------------------------------------------------------


@tool(example={"text": "The quick brown fox. It jumps!"})
def text_stats(text: str) -> dict[str, int]:
    """Use this to count the words, characters and sentences of a piece of text exactly.

    Args:
        text: the text to measure, as it is (words are what spaces separate)
    """
    sentences = [s for s in _re.split(r"[.!?。！？]+", text) if s.strip()]
    return {
        "words": len(text.split()),
        "characters": len(text),
        "characters_without_spaces": len("".join(text.split())),
        "sentences": len(sentences),
    }


# --- loans ---------------------------------------------------------------------------------


@tool(example={"principal": 20000, "annual_rate_percent": 5, "years": 4})
def monthly_payment(
    principal: Annotated[float, Field(gt=0)],
    annual_rate_percent: Annotated[float, Field(ge=0, le=50)],
    years: Annotated[int, Field(ge=1, le=40)],
) -> float:
    """Use this to work out the fixed monthly payment of a loan or mortgage.

    Args:
        principal: the amount borrowed
        annual_rate_percent: the yearly interest rate in percent, e.g. 4.5
        years: the loan's term in years
    """
    months, rate = years * 12, annual_rate_percent / 100 / 12
    if rate == 0:
        return round(principal / months, 2)
    return round(principal * rate / (1 - (1 + rate) ** -months), 2)


TOOLS: list[Tool] = [
    get_weather,
    convert_units,
    days_between,
    add_days,
    get_order,
    list_orders,
    convert_currency,
    search_products,
    check_inventory,
    get_employee,
    create_ticket,
    stock_price,
    shipping_quote,
    text_stats,
    monthly_payment,
]
