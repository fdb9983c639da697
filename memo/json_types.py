"""A name for JSON objects whose shape is open, so that an annotation says why it is a plain dict.

Use it only where memo does not fix the keys: a document read from disk or a pipe before it is typed, the
form a ``to_json`` writes (the class itself is the typed shape), a message of the worker protocol, a
library's own configuration. A record whose fields memo knows is a dataclass or a TypedDict instead.
Standard library only: worker processes import it.
"""
from typing import Any

JsonObject = dict[str, Any]
