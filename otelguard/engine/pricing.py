"""What a model call's tokens cost in USD, from genai-prices' bundled price table.

genai-prices (the `pricing` extra) is a maintained table of model prices; this module only ever uses
the copy installed with it: its updater (`genai_prices.UpdatePrices`) is never started, so nothing is
fetched at run time. A model the table does not know, or no genai-prices installed, has no price:
callers report tokens only and say so.

Loading the table takes about a second of CPU and some memory, so it is loaded only when a price is
first asked for, on a background thread, never on an agent's thread: until it is in, calls have no
price (the loop ledger prices a loop's earlier steps once it is). `load_in_background()` at start-up
has prices from the first loop on; `wait_until_loaded()` is for tools that may wait.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

_loaded = threading.Event()
_start_lock = threading.Lock()
_started = False
_calculate: Callable[..., Any] | None = None


def _load() -> None:
    global _calculate
    try:
        from genai_prices import Usage, calc_price

        def calculate(model: str, input_tokens: int, output_tokens: int, provider: str | None = None) -> Any:
            return calc_price(Usage(input_tokens=input_tokens, output_tokens=output_tokens), model_ref=model,
                              provider_id=provider)

        calculate("gpt-4o", 1, 1)  # the first calculation reads the table in: done here, off the agent's threads
        _calculate = calculate
    except ImportError:  # the `pricing` extra is not installed: tokens only, as documented
        _calculate = None
    except Exception:  # a broken install: no prices, said once
        import logging  # only then: a CLI hook's process starts without it

        _calculate = None
        logging.getLogger("otelguard").warning("otelguard could not load genai-prices' table: loops are "
                                               "reported in tokens only", exc_info=True)
    finally:
        _loaded.set()


def load_in_background() -> None:
    """Start loading the price table on a daemon thread (once per process)."""
    global _started
    with _start_lock:
        if _started:
            return
        _started = True
    threading.Thread(target=_load, name="otelguard-pricing", daemon=True).start()


def wait_until_loaded(timeout: float | None = None) -> bool:
    """Start loading if nobody has, and wait for it (for tools and tests, not for an agent's thread)."""
    load_in_background()
    return _loaded.wait(timeout)


def price_usd(model: str | None, input_tokens: int, output_tokens: int) -> float | None:
    """The price in USD of `input_tokens` and `output_tokens` of `model`; None when it has none (or the
    table is not loaded yet: this starts loading it). Never waits."""
    calculate = _calculate
    if calculate is None:
        if not _started:
            load_in_background()
        return None
    if not model:
        return None
    try:
        return float(calculate(model, input_tokens, output_tokens).total_price)
    except LookupError:  # genai-prices: no provider or model matches
        pass
    # A model named `provider/model` (LiteLLM's and many routers' way, e.g. `deepseek/deepseek-chat`):
    # the table knows the model by its own name.
    provider, _, name = model.partition("/")
    if not name:
        return None
    try:
        return float(calculate(name, input_tokens, output_tokens, provider).total_price)
    except LookupError:
        return None


def pricing_available() -> bool:
    """Whether the price table is loaded (genai-prices installed and read)."""
    return _calculate is not None
