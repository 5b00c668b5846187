"""What differs between pydantic 1.10 and pydantic 2, in one place.

The models in :mod:`agentik.models` are written in the syntax both versions
share (annotated fields, ``Literal`` discriminators, ``Field(discriminator=)``);
only parsing a union and dumping a model go through the helpers below.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, Tuple, Union

import pydantic
from pydantic import BaseModel

PYDANTIC_V2: bool = int(pydantic.VERSION.split(".", 1)[0]) >= 2

JSONInput = Union[str, bytes, bytearray]

Parser = Tuple[Callable[[Any], Any], Callable[[JSONInput], Any]]


def loads(data: JSONInput) -> Any:
    """json.loads, with every failure a ValueError (nesting too deep for
    the parser is a RecursionError otherwise)."""
    try:
        return json.loads(data)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


def union_parser(tp: Any) -> Parser:
    """Returns (validate_python, validate_json) for the type ``tp``."""
    # getattr: the names of one version are not there in the other, and
    # mypy checks this module against whichever is installed.
    if PYDANTIC_V2:
        adapter = getattr(pydantic, "TypeAdapter")(tp)
        return adapter.validate_python, adapter.validate_json

    def from_python(obj: Any) -> Any:
        return pydantic.parse_obj_as(tp, obj)

    def from_json(data: JSONInput) -> Any:
        # parse_raw_as would raise a bare JSONDecodeError for bad JSON, and
        # pydantic 2 raises ValidationError: both are ValueError.
        return pydantic.parse_obj_as(tp, loads(data))

    return from_python, from_json


def dump(model: BaseModel) -> Dict[str, Any]:
    """The model as JSON-ready data, without the fields that are None."""
    if PYDANTIC_V2:
        out: Dict[str, Any] = getattr(model, "model_dump")(mode="json", exclude_none=True)
    else:
        out = json.loads(getattr(model, "json")(exclude_none=True))
    return out


def validate(cls: Any, obj: Any) -> Any:
    """cls.model_validate(obj) (pydantic 2) or cls.parse_obj(obj) (1.10)."""
    return getattr(cls, "model_validate" if PYDANTIC_V2 else "parse_obj")(obj)
