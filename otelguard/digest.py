"""BLAKE2b: the guard's one hash for ids and fingerprints (durable agent keys, kept arguments, a CLI
session's trace id, previews of cut text).

Taken from CPython's own BLAKE2 module, which `hashlib` re-exports: importing `hashlib` first starts
OpenSSL (11 M instructions, ~4 ms of a CLI hook's 100 ms bar). `hashlib`'s where that module is missing.
"""

try:
    from _blake2 import blake2b
except ImportError:  # an interpreter built without it
    from hashlib import blake2b

__all__ = ["blake2b"]
