"""Light, typed views of JSON objects: the machinery behind :mod:`bundle.kube`.

A bundle of a large cluster holds hundreds of thousands of pods and events. Validating
them into full models kept every unknown field and cost more than parsing the JSON
itself, so a view here keeps only the fields it declares, in ``__slots__``, and reads
them in one pass over the parsed JSON:

    class Taint(View):
        key: str = ""
        value: str | None = None
        effect: str = ""

Each annotation names what the field accepts; the JSON key is the field name in
camelCase unless :func:`key` names another. A value of the wrong type is not fatal:
the field keeps its default and the issue is reported with its location, so one odd
field does not lose the object. Numbers are accepted where strings are expected
(``"nvidia.com/gpu": 8`` written by hand or by another tool), integers must fit in 64
bits (what JSON output carries), and entries of wrong type in a string map or a list
are dropped one by one.

A class reads its first :data:`COMPILE_AFTER` objects by a loop over its fields, then
compiles a reader unrolled over them (only names from the class definition go into its
source); ``tests/test_views.py`` checks that both read alike.

Supported annotations: ``str``, ``int``, ``bool``, ``Any``, ``dict[str, str]``,
``dict[str, Any]``, another view ``V``, ``list[V]``, and ``X | None`` of the scalars,
maps and views (``None`` accepted, and the default when absent).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

Loc = tuple[str | int, ...]
Issues = list[tuple[Loc, str]]
V = TypeVar("V", bound="View")

# A converter takes (value, location of the object holding it, its key there, issues) and
# returns the field's value, or _WRONG after appending an issue; the field then keeps its
# default. The value's own location is only built when it is needed.
_WRONG: Any = object()
_Converter = Callable[[Any, Loc, str | int, Issues], Any]


class _Key:
    """The JSON key of a field and its default (see :func:`key`)."""

    __slots__ = ("name", "default")

    def __init__(self, name: str, default: Any) -> None:
        self.name = name
        self.default = default


def key(name: str, default: Any = None) -> Any:
    """Read a field from JSON key ``name`` instead of its camelCase name."""
    return _Key(name, default)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def _as_str(value: Any, loc: Loc, at: str | int, issues: Issues) -> Any:
    kind = type(value)
    if kind is str:
        return value
    if kind is int or kind is float:
        return str(value)
    issues.append(((*loc, at), "Input should be a valid string"))
    return _WRONG


_INTEGER = re.compile(r"[+-]?[0-9]{1,30}")


INT_MIN, INT_MAX = -(1 << 63), (1 << 63) - 1  # what JSON output can carry (int64)


def _as_int(value: Any, loc: Loc, at: str | int, issues: Issues) -> Any:
    kind = type(value)
    number = None
    if kind is int:
        number = value
    elif ((kind is float and value.is_integer())
          or (kind is str and _INTEGER.fullmatch(value.strip()))):
        number = int(value)
    if number is not None and INT_MIN <= number <= INT_MAX:
        return number
    issues.append(((*loc, at), "Input should be a valid integer"))
    return _WRONG


_TRUE = frozenset(("true", "1", "yes", "on", "t", "y"))
_FALSE = frozenset(("false", "0", "no", "off", "f", "n"))


def _as_bool(value: Any, loc: Loc, at: str | int, issues: Issues) -> Any:
    if value is True or value is False:
        return value
    if type(value) is int and value in (0, 1):
        return bool(value)
    if type(value) is str and (lowered := value.strip().lower()) in _TRUE | _FALSE:
        return lowered in _TRUE
    issues.append(((*loc, at), "Input should be a valid boolean"))
    return _WRONG


def _as_any(value: Any, loc: Loc, at: str | int, issues: Issues) -> Any:
    return value


def _as_dict(value: Any, loc: Loc, at: str | int, issues: Issues) -> Any:
    if type(value) is dict:
        return value
    issues.append(((*loc, at), "Input should be a valid dictionary"))
    return _WRONG


def _as_str_map(value: Any, loc: Loc, at: str | int, issues: Issues) -> Any:
    if type(value) is not dict:
        issues.append(((*loc, at), "Input should be a valid dictionary"))
        return _WRONG
    for item in value.values():
        if type(item) is not str:
            break
    else:
        return value  # the usual case: already a map of strings, kept as parsed
    kept: dict[str, str] = {}
    here = (*loc, at)
    for name, item in value.items():
        converted = _as_str(item, here, name, issues)
        if converted is not _WRONG:
            kept[name] = converted
    return kept


def _view_converter(view: type[View]) -> _Converter:
    def convert(value: Any, loc: Loc, at: str | int, issues: Issues) -> Any:
        if type(value) is dict:
            return view.project(value, (*loc, at), issues)
        issues.append(((*loc, at), "Input should be a valid dictionary"))
        return _WRONG

    return convert


def _list_converter(view: type[View]) -> _Converter:
    def convert(value: Any, loc: Loc, at: str | int, issues: Issues) -> Any:
        if type(value) is not list:
            issues.append(((*loc, at), "Input should be a valid list"))
            return _WRONG
        project = view.__dict__["_reader"] or view._compile()
        here = (*loc, at)
        items = []
        for index, item in enumerate(value):
            if type(item) is dict:
                items.append(project(item, (*here, index), issues))
            else:
                issues.append(((*here, index), "Input should be a valid dictionary"))
        return items

    return convert


_SCALARS: dict[str, tuple[_Converter, Any]] = {
    "str": (_as_str, ""),
    "int": (_as_int, 0),
    "bool": (_as_bool, False),
    "Any": (_as_any, None),
}
_MAPS: dict[str, _Converter] = {"dict[str, str]": _as_str_map, "dict[str, Any]": _as_dict}


class _Field:
    """One declared field: where it is read from and how."""

    __slots__ = ("attr", "json_key", "kind", "optional", "convert", "default", "factory",
                 "view")

    def __init__(self, attr: str, annotation: str, declared: Any,
                 namespace: dict[str, Any]) -> None:
        self.attr = attr
        self.json_key = _camel(attr)
        if isinstance(declared, _Key):
            self.json_key, declared = declared.name, declared.default
        self.optional = annotation.endswith(" | None")
        self.kind = base = annotation.removesuffix(" | None")
        self.factory: Callable[[], Any] | None = None
        self.view: type[View] | None = None  # a nested view, read inline
        if base in _SCALARS:
            self.convert, self.default = _SCALARS[base]
        elif base in _MAPS:
            self.convert, self.default, self.factory = _MAPS[base], None, dict
        elif base.startswith("list[") and base.endswith("]") and not self.optional:
            self.convert = _list_converter(namespace[base[5:-1]])
            self.default, self.factory = None, list
        elif isinstance(view := namespace.get(base), type) and issubclass(view, View):
            self.convert, self.default, self.factory = _view_converter(view), None, view.empty
            self.view = view
        else:
            raise TypeError(f"unsupported view field annotation {annotation!r}")
        if self.optional:
            self.default, self.factory = None, None
            if declared is not None:
                raise TypeError(f"optional field {attr!r} must default to None")
        elif declared is not None:
            self.default, self.factory = declared, None


# The scalar kinds whose common case (the right type already) is checked inline.
_INLINE = {"str": "str", "int": "int", "bool": "bool"}


def _reader_source(fields: tuple[_Field, ...]) -> str:
    """Python source of one view class's reader, unrolled over its fields.

    Views are read hundreds of thousands of times per bundle; an unrolled reader with
    the type test of the usual case inline is several times faster than a loop over
    the fields. Only names from the class definitions go into the source."""
    lines = ["def read(raw, loc, issues):", "    view = new(cls)", "    get = raw.get"]
    for index, field in enumerate(fields):
        attr, json_key = field.attr, repr(field.json_key)
        fallback = f"d{index}" if field.factory is None else f"f{index}()"
        if field.kind == "Any":
            lines.append(f"    view.{attr} = get({json_key}, d{index})")
            continue
        if field.optional:
            lines.append(f"    value = get({json_key})")
            test = "value is not None"
        else:
            lines += [f"    value = get({json_key}, WRONG)",
                      "    if value is WRONG:",
                      f"        value = {fallback}"]
            test = None
        check = "if" if field.optional else "elif"
        if field.view is not None:  # the usual case, a JSON object, read without a call
            lines += [f"    {check} type(value) is dict:",
                      f"        value = r{index}(value, (*loc, {json_key}), issues)"]
            check = "elif"
        inline = _INLINE.get(field.kind)
        if inline == "int":  # an int in range, or the converter says why not
            wrong = "(type(value) is not int or not INT_MIN <= value <= INT_MAX)"
            test = f"{test} and {wrong}" if test else wrong
        elif inline is not None:
            test = f"type(value) is not {inline}" + (f" and {test}" if test else "")
        lines += [f"    {check} {test}:" if test else "    else:",
                  f"        value = c{index}(value, loc, {json_key}, issues)",
                  "        if value is WRONG:",
                  f"            value = {fallback}",
                  f"    view.{attr} = value"]
    lines.append("    return view")
    return "\n".join(lines)


# A class's reader is compiled once it has read this many objects: compiling costs about
# as much as reading a few hundred objects by plan, and most classes of a small bundle
# never read that many.
COMPILE_AFTER = 256


def _read_by_plan(cls: type[V], raw: dict[str, Any], loc: Loc, issues: Issues) -> V:
    """What the compiled reader does, as a loop over the fields."""
    view = object.__new__(cls)
    get = raw.get
    for field in cls._fields:
        value = get(field.json_key, _WRONG)
        if value is not _WRONG and not (field.optional and value is None):
            value = field.convert(value, loc, field.json_key, issues)
        if value is _WRONG or (field.optional and value is None):
            value = field.default if field.factory is None else field.factory()
        setattr(view, field.attr, value)
    return view


class _ViewMeta(type):
    """Turns annotated fields into ``__slots__`` and, on first use, a compiled reader."""

    def __new__(mcs, name: str, bases: tuple[type, ...], namespace: dict[str, Any]) -> type:
        annotations: dict[str, str] = namespace.get("__annotations__", {})
        declared = {attr: namespace.pop(attr, None) for attr, annotation in annotations.items()
                    if not annotation.startswith("ClassVar")}
        namespace["__slots__"] = (*declared, *namespace.get("__slots__", ()))
        cls = super().__new__(mcs, name, bases, namespace)
        scope = {**vars(sys.modules[cls.__module__]), name: cls}
        inherited: tuple[_Field, ...] = getattr(cls, "_fields", ())
        cls._fields = (*inherited, *(_Field(attr, annotations[attr], default, scope)  # type: ignore[attr-defined]
                                     for attr, default in declared.items()))
        cls._reader = None  # type: ignore[attr-defined]
        cls._uses = 0  # type: ignore[attr-defined]
        return cls


class View(metaclass=_ViewMeta):
    """Base of the views; see the module docstring."""

    __slots__ = ()
    _fields: ClassVar[tuple[_Field, ...]]
    _reader: ClassVar[Callable[[dict[str, Any], Loc, Issues], Any] | None]
    _uses: ClassVar[int]

    @classmethod
    def project(cls: type[V], raw: dict[str, Any], loc: Loc, issues: Issues) -> V:
        """Read ``raw`` (a parsed JSON object at ``loc``); wrong fields go to ``issues``."""
        reader = cls.__dict__["_reader"]
        if reader is not None:
            compiled: V = reader(raw, loc, issues)
            return compiled
        cls._uses += 1
        if cls._uses >= COMPILE_AFTER:
            return cls._compile()(raw, loc, issues)  # type: ignore[no-any-return]
        return _read_by_plan(cls, raw, loc, issues)

    @classmethod
    def _compile(cls) -> Callable[[dict[str, Any], Loc, Issues], Any]:
        scope: dict[str, Any] = {"new": object.__new__, "cls": cls, "WRONG": _WRONG,
                                 "INT_MIN": INT_MIN, "INT_MAX": INT_MAX}
        for index, field in enumerate(cls._fields):
            scope.update({f"c{index}": field.convert, f"d{index}": field.default,
                          f"f{index}": field.factory})
            if field.view is not None:  # (a view that nests itself is not supported)
                scope[f"r{index}"] = field.view.__dict__["_reader"] or field.view._compile()
        exec(compile(_reader_source(cls._fields), f"<view {cls.__qualname__}>", "exec"),  # noqa: S102
             scope)
        cls._reader = scope["read"]
        return scope["read"]  # type: ignore[no-any-return]

    @classmethod
    def empty(cls: type[V]) -> V:
        """The view of an empty object: every field at its default."""
        return cls.project({}, (), [])

    @classmethod
    def parse(cls: type[V], raw: dict[str, Any]) -> tuple[V, Issues]:
        """Read one object; the view and the issues found (location, message)."""
        issues: Issues = []
        return cls.project(raw, (), issues), issues

    def __init__(self, **fields: Any) -> None:
        """A view built in code: the given fields, every other one at its default."""
        for field in self._fields:
            if field.attr in fields:
                value = fields.pop(field.attr)
            else:
                value = field.default if field.factory is None else field.factory()
            setattr(self, field.attr, value)
        if fields:
            raise TypeError(f"{type(self).__name__} has no field {min(fields)!r}")

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, field.attr) for field in self._fields)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._values() == other._values()

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value

    def __repr__(self) -> str:
        shown = ", ".join(f"{field.attr}={getattr(self, field.attr)!r}"
                          for field in self._fields)
        return f"{type(self).__name__}({shown})"
