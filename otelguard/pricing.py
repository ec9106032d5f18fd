"""What a model call's tokens cost in USD, from genai-prices' bundled price table.

genai-prices (the `pricing` extra) is a maintained table of model prices; this module only ever uses
the copy installed with it: its updater (`genai_prices.UpdatePrices`) is never started, so nothing is
fetched at run time. A model the table does not know, or no genai-prices installed, has no price:
callers report tokens only and say so.
"""

from __future__ import annotations

import functools
from typing import Any


@functools.cache
def _calc_price() -> Any:
    """genai-prices' calculator, imported on first use (its data module is large); None when absent."""
    try:
        from genai_prices import Usage, calc_price
    except ImportError:
        return None
    return lambda model, input_tokens, output_tokens: calc_price(
        Usage(input_tokens=input_tokens, output_tokens=output_tokens), model_ref=model)


def price_usd(model: str | None, input_tokens: int, output_tokens: int) -> float | None:
    """The price in USD of `input_tokens` and `output_tokens` of `model`; None when it has none."""
    calculate = _calc_price()
    if calculate is None or not model:
        return None
    try:
        return float(calculate(model, input_tokens, output_tokens).total_price)
    except LookupError:  # genai-prices: no provider or model matches
        return None


def pricing_available() -> bool:
    """Whether genai-prices is installed (else every price is None)."""
    return _calc_price() is not None
